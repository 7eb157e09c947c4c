//go:build unix

package leader

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f without waiting: false when
// another open file holds it. flock, not fcntl: its lock belongs to this
// open file, not to the process's every descriptor of the file, so reading
// the file again does not drop it, and Go's close-on-exec keeps it from a
// desk's child processes, which must not keep it after the process dies.
func lockFile(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}
