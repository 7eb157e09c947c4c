package deskfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskfs"
)

// A hostile desk plants links, FIFOs and folders where the service expects
// its files; none of them may lead the service out of the folder or block it.
func TestOpenDeskFileRefusesWhatADeskPlants(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "desks", "main")
	secret := filepath.Join(base, "deskbot.env")
	mustWrite(t, secret, "REDIS_URL=redis://:hunter2@127.0.0.1:6379")
	mustWrite(t, filepath.Join(dir, "ok.log"), "hello")
	mustWrite(t, filepath.Join(dir, "sub", "inner.txt"), "inner")
	mustSymlink(t, secret, filepath.Join(dir, "abs.log"))
	mustSymlink(t, "../../deskbot.env", filepath.Join(dir, "rel.log"))
	mustSymlink(t, "sub/inner.txt", filepath.Join(dir, "inside.log"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.exit"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		rel, want string
		code      string
	}{
		{"ok.log", "hello", ""},
		{"inside.log", "inner", ""}, // a link that stays inside is fine
		{"abs.log", "", deskbot.EINVALID},
		{"rel.log", "", deskbot.EINVALID},
		{"../../deskbot.env", "", deskbot.EINVALID},
		{secret, "", deskbot.EINVALID},
		{"fifo.exit", "", deskbot.EINVALID}, // must not block
		{"sub", "", deskbot.EINVALID},
		{"missing.log", "", deskbot.ENOTFOUND},
	} {
		b, err := deskfs.ReadTail(dir, tc.rel, 100)
		if got := deskbot.ErrorCode(err); got != tc.code {
			t.Errorf("%s: error %v, want code %q", tc.rel, err, tc.code)
		}
		if string(b) != tc.want {
			t.Errorf("%s: read %q, want %q", tc.rel, b, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error leaks the file: %v", tc.rel, err)
		}
	}
}

func TestReadDeskFileTailReadsOnlyTheEnd(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "big.log"), strings.Repeat("a", 1000)+"END")
	b, err := deskfs.ReadTail(dir, "big.log", 5)
	if got, want := string(b), "aaEND"; err != nil || got != want {
		t.Fatalf("tail = %q, %v; want %q", got, err, want)
	}
}

func mustWrite(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// Create writes inside the folder and refuses every way out a desk can
// plant: "..", an absolute path, a symlinked folder, a symlink as the
// file; nothing is written outside.
func TestCreateStaysInTheFolder(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f.csv"), filepath.Join(dir, "link.csv")); err != nil {
		t.Fatal(err)
	}
	f, err := deskfs.Create(dir, "market/a.csv")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("x\n")
	f.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "market", "a.csv")); string(b) != "x\n" {
		t.Errorf("got %q", b)
	}
	for _, rel := range []string{"../x.csv", "/tmp/x.csv", "out/x.csv", "link.csv", "out/../../x.csv"} {
		if f, err := deskfs.Create(dir, rel); err == nil || deskbot.ErrorCode(err) != deskbot.EINVALID {
			if f != nil {
				f.Close()
			}
			t.Errorf("Create(%q) = %v, want a refusal", rel, err)
		}
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("written outside: %v", es)
	}
}
