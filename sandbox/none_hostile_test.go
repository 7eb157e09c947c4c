package sandbox_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/deskbot/deskbot/sandbox"
)

// In mode none a service running as root gives each desk a host uid of its
// own: one desk cannot read, write or list another's folder, signal its
// processes or read their environment, nor read what it leaves in the
// shared /tmp. A desk keeps its uid across restarts of the service.
func TestHostileNoneDesksApart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: mode none runs every desk as the service's own user, which HardenProcess protects")
	}
	cfg := testConfig(t, sandbox.ModeNone)
	m := mustManager(t, cfg)
	a, b := mustSession(t, m, "alpha"), mustSession(t, m, "beta")

	uidA, uidB := strings.TrimSpace(mustOutput(t, a, "id -u")), strings.TrimSpace(mustOutput(t, b, "id -u"))
	if uidA == uidB {
		t.Fatalf("both desks run as uid %s", uidA)
	}
	for _, u := range []string{uidA, uidB} {
		if u == "0" || u == strconv.Itoa(sandbox.DefaultHostUID) {
			t.Errorf("a desk runs as uid %s, a uid it shares with the host", u)
		}
	}
	if got, want := strings.TrimSpace(mustOutput(t, a, "id -G")), uidA; got != want {
		t.Errorf("desk alpha's groups: got %q, want only its own %q", got, want)
	}

	mustOutput(t, a, "echo alpha-secret > notes.txt && chmod 644 notes.txt && echo alpha-tmp > /tmp/deskbot-alpha-$$ && echo /tmp/deskbot-alpha-$$ > tmpname")
	tmpFile := strings.TrimSpace(mustOutput(t, a, "cat tmpname"))
	t.Cleanup(func() { os.Remove(tmpFile) })
	pid := strings.TrimSpace(mustOutput(t, a, "DESKBOT_SECRET_OF_ALPHA=x sleep 300 >/dev/null 2>&1 & echo $!"))
	for _, tt := range []struct{ name, command string }{
		{"read its file", "cat " + filepath.Join(a.Dir(), "notes.txt")},
		{"list its folder", "ls " + a.Dir()},
		{"write its folder", "touch " + filepath.Join(a.Dir(), "planted")},
		{"read its /tmp file", "cat " + tmpFile},
		{"signal its process", "kill -0 " + pid},
		{"read its process's environment", "cat /proc/" + pid + "/environ"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRun(t, b, tt.command+" 2>&1; echo status=$?")
			if strings.Contains(r.Text, "status=0") || strings.Contains(r.Text, "alpha-secret") || strings.Contains(r.Text, "alpha-tmp") || strings.Contains(r.Text, "DESKBOT_SECRET_OF_ALPHA") {
				t.Errorf("desk beta could %s of desk alpha: %q", tt.name, r.Text)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(a.Dir(), "planted")); err == nil {
		t.Errorf("desk beta planted a file in desk alpha's folder")
	}
	// A desk's own folder is still its own to use.
	if got, want := mustOutput(t, a, "cat notes.txt"), "alpha-secret\n"; got != want {
		t.Errorf("desk alpha reads its own file: got %q, want %q", got, want)
	}

	// Another service on the same data folder: the desks keep their uids.
	m.Close()
	m2 := mustManager(t, cfg)
	if got := strings.TrimSpace(mustOutput(t, mustSession(t, m2, "beta"), "id -u")); got != uidB {
		t.Errorf("desk beta after a restart: uid %s, want %s", got, uidB)
	}
	if got := strings.TrimSpace(mustOutput(t, mustSession(t, m2, "alpha"), "id -u")); got != uidA {
		t.Errorf("desk alpha after a restart: uid %s, want %s", got, uidA)
	}
	fi, err := os.Stat(a.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if got := strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)); got != uidA {
		t.Errorf("desk alpha's folder belongs to uid %s, want its own %s", got, uidA)
	}
}
