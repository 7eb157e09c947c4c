package leader_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/leader"
)

func mustOpenLock(t *testing.T, dir string) *leader.DirLock {
	t.Helper()
	l, err := leader.OpenDirLock(dir)
	if err != nil {
		t.Fatalf("OpenDirLock(%s): %v", dir, err)
	}
	return l
}

// One process at a time holds a DATA_DIR's lock and with it the identity;
// the identity stays the same for the next holder of the same folder, and
// differs for another folder.
func TestDirLockOneHolderSameIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first := mustOpenLock(t, dir)
	id := first.Identity()
	if id == "" || !first.Held() {
		t.Fatalf("the first lock: identity %q, held %v; want held", id, first.Held())
	}
	if !strings.Contains(id, dir) {
		t.Errorf("identity %q does not name the folder %s", id, dir)
	}
	// A second holder in this process stands for a second process: flock
	// locks belong to open files, so the two conflict as two processes'
	// would.
	second := mustOpenLock(t, dir)
	if got := second.Identity(); got != "" || second.Held() {
		t.Errorf("the second lock while the first is held: identity %q, held %v; want none", got, second.Held())
	}
	if got := first.Identity(); got != id {
		t.Errorf("the holder's identity changed from %q to %q", id, got)
	}
	other := mustOpenLock(t, t.TempDir())
	if got := other.Identity(); got == "" || got == id {
		t.Errorf("another folder's identity %q, want one of its own (not %q)", got, id)
	}
}

// The kernel drops the lock of a process that dies, kill -9 included: the
// next process on the folder holds it, with the dead one's identity.
func TestDirLockPassesOnDeath(t *testing.T) {
	if os.Getenv("LEADER_LOCK_CHILD") != "" {
		l, err := leader.OpenDirLock(os.Getenv("LEADER_LOCK_CHILD"))
		if err != nil || !l.Held() {
			os.Exit(2)
		}
		os.Stdout.WriteString(l.Identity() + "\n")
		select {} // until killed
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestDirLockPassesOnDeath$")
	child.Env = append(os.Environ(), "LEADER_LOCK_CHILD="+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	buf := make([]byte, 4096)
	n, _ := out.Read(buf)
	childID := strings.TrimSpace(string(buf[:n]))
	if childID == "" {
		t.Fatal("the child did not take the lock")
	}
	mine := mustOpenLock(t, dir)
	if got := mine.Identity(); got != "" {
		t.Errorf("identity while the child lives = %q, want none", got)
	}
	child.Process.Kill()
	child.Wait()
	if got := mine.Identity(); got != childID {
		t.Errorf("identity after the child's kill = %q, want the dead child's %q", got, childID)
	}
}
