package deskbottest

import (
	"os"
	"path/filepath"
	"testing"
)

// DataDir returns a fresh DATA_DIR for a service under test. As root, desks'
// terminals run as another user, who must be able to pass through DATA_DIR's
// parents; t.TempDir makes its parent 0700, so it is opened to 0711 (pass
// through, not list).
func DataDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}
