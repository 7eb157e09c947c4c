package deskfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/deskbot/deskbot"
)

// Open opens rel, a path inside the desk folder dir, for reading on
// the desk's behalf. It is the one way the service opens a file that a desk
// controls (job logs and statuses, pictures): a desk is hostile and may plant
// a symlink to a host file, a FIFO that blocks its reader, or a device.
//
//   - The path is resolved by os.Root, so neither ".." nor a symlink
//     anywhere on the way may leave dir.
//   - The open never blocks (O_NONBLOCK) and the opened handle must be a
//     regular file; the caller reads from this handle and never reopens the
//     path by name, so a swap after the check changes nothing.
//
// Errors are *Error: ENOTFOUND when nothing is there, EINVALID for a path or
// file that is refused; their messages are safe to show to the desk's model.
func Open(dir, rel string) (*os.File, fs.FileInfo, error) {
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return nil, nil, deskbot.Errorf(deskbot.EINVALID, "%q must be a path relative to your folder that stays inside it", rel)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, deskbot.Errorf(deskbot.ENOTFOUND, "the desk's folder does not exist yet")
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, deskbot.Errorf(deskbot.ENOTFOUND, "there is no file %q in your folder", rel)
	case err != nil:
		// os.Root's escape error, a loop, a permission: all refusals.
		return nil, nil, deskbot.Errorf(deskbot.EINVALID, "%q cannot be read: it leads outside your folder or is not readable", rel)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, deskbot.Errorf(deskbot.EINVALID, "%q is not a regular file", rel)
	}
	return f, fi, nil
}

// ReadTail returns at most the last max bytes of rel in dir, read as
// Open allows. A file that grows while it is read does not make the
// read longer.
func ReadTail(dir, rel string, max int64) ([]byte, error) {
	f, fi, err := Open(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	off := max0(fi.Size() - max)
	return io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
}

func max0(n int64) int64 {
	if n < 0 {
		return 0
	}
	return n
}

// Dir is desk's folder under the service's data directory: the one place
// its path is spelled, so the sandbox that mounts it and the readers of the
// files a desk leaves there agree on it.
func Dir(dataDir, desk string) string { return filepath.Join(Parent(dataDir), desk) }

// Parent is the folder that holds every desk's folder.
func Parent(dataDir string) string { return filepath.Join(dataDir, "desks") }

// Create creates (or empties) rel, a path inside the desk folder dir, for
// the service to write on the desk's behalf (a CSV of candles), making
// the folders on the way. The same rules as Open: the path is resolved by
// os.Root, so neither ".." nor a symlink on the way may leave dir; a
// symlink as the last part is refused rather than followed, the open never
// blocks, and the handle must be a regular file.
func Create(dir, rel string) (*os.File, error) {
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%q must be a path relative to your folder that stays inside it", rel)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, deskbot.Errorf(deskbot.ENOTFOUND, "the desk's folder does not exist yet")
	}
	defer root.Close()
	if d := filepath.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return nil, deskbot.Errorf(deskbot.EINVALID, "%q cannot be written: it leads outside your folder or is not writable", rel)
		}
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0o644)
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%q cannot be written: it leads outside your folder, is a link, or is not writable", rel)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, deskbot.Errorf(deskbot.EINVALID, "%q is not a regular file", rel)
	}
	return f, nil
}
