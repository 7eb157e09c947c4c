package deskbottest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BashWithoutBwrap sets PATH, for the rest of t, to a folder that holds
// bash and nothing else: the machine of an operator with no bubblewrap.
// It skips t where there is no bash to offer.
func BashWithoutBwrap(t *testing.T) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := t.TempDir()
	if err := os.Symlink(bash, filepath.Join(bin, "bash")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
}
