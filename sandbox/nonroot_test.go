package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The desks' network works when the service is not root, as in the
// image: as root, this test runs the network tests again as nobody
// (setpriv), from a copy of the test binary that user may run.
func TestNetworkAsNonRoot(t *testing.T) {
	if os.Getenv("DESKBOT_NONROOT_CHILD") == "1" {
		t.Skip("the non-root run itself")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the network tests already run as a non-root user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (Debian package util-linux) to run as another user")
	}
	dir := mustNobodyDir(t)
	bin := filepath.Join(dir, "sandbox.test")
	mustCopyExecutable(t, os.Args[0], bin)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"-test.run", "^(TestHostileNetwork|TestHostileNetworkHostAddresses)$", "-test.v")
	cmd.Dir = dir
	// DESKBOT_REQUIRE_BWRAP passes on: where it is set, a skip there fails.
	cmd.Env = append(os.Environ(), "DESKBOT_NONROOT_CHILD=1", "HOME="+dir, "TMPDIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the network tests as uid 65534: %v\n%s", err, out)
	}
	if got := string(out); !strings.Contains(got, "--- PASS: TestHostileNetwork ") {
		t.Skipf("the network tests did not run as uid 65534 (no bubblewrap or slirp4netns here):\n%s", got)
	}
}

// mustNobodyDir is a folder any user may write, under parents they may pass.
func mustNobodyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustCopyExecutable(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
