//go:build !unix

package leader

import "os"

// lockFile never locks where there is no flock: such a process has no
// identity to prove, and a restart waits out its predecessor's lease.
func lockFile(*os.File) (bool, error) { return false, nil }
