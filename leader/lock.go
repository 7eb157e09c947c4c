package leader

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// LockFile is the file in DATA_DIR whose lock a process holds for its
// whole life.
const LockFile = "instance.lock"

// DirLock is this process's claim on its DATA_DIR: an exclusive lock on
// DATA_DIR/instance.lock, held until the process exits. The kernel drops
// the lock when the process dies however it dies (kill -9 included), and
// never while it lives (a pause, a freeze), so a process that holds it
// knows that whoever held it before is dead.
//
// That is the proof a restarted instance gives to take the leader lease at
// once instead of waiting out its predecessor's: the lease records its
// holder's Identity (host, DATA_DIR, and the random id the lock file keeps),
// and a process holding the same lock finds its own identity there only if
// the holder is gone (store.TakeLease). The random id keeps apart two hosts
// that happen to share a hostname and a DATA_DIR path; a DATA_DIR copied
// with its lock file to a host of the same name would defeat it, which is
// why the host is part of the identity too.
//
// A second live process on the same DATA_DIR cannot take the lock: it runs
// as a plain standby (no identity, so it waits out a lease as before) and
// tries the lock again each time it tries the lease, so that once the lock
// holder is dead it takes over at once.
type DirLock struct {
	dir  string // absolute
	host string

	mu sync.Mutex
	f  *os.File // the locked file, kept open (and referenced) for the process's life
	id string
}

// OpenDirLock makes dir if needed and tries to lock it once. A lock
// another live process holds is not an error: Identity is "" until this
// process gets it.
func OpenDirLock(dir string) (*DirLock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("DATA_DIR %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("DATA_DIR: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("hostname: %w", err)
	}
	l := &DirLock{dir: abs, host: host}
	if _, err := l.try(); err != nil {
		return nil, err
	}
	return l, nil
}

// Identity is the lease holder's name for this process while it holds the
// lock: the same across restarts on this host and DATA_DIR, and carried by
// one live process at a time. "" while another process holds the lock
// (each call tries to take it again).
func (l *DirLock) Identity() string {
	if l == nil {
		return ""
	}
	id, err := l.try()
	if err != nil || id == "" {
		return ""
	}
	return fmt.Sprintf("host=%s dir=%s id=%s", l.host, l.dir, id)
}

// Held reports whether this process holds the lock.
func (l *DirLock) Held() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f != nil
}

// Dir is the locked folder, absolute.
func (l *DirLock) Dir() string { return l.dir }

// try takes the lock if this process does not hold it yet, and returns
// the lock file's id; "" when another process holds the lock.
func (l *DirLock) try() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		return l.id, nil
	}
	f, err := os.OpenFile(filepath.Join(l.dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("DATA_DIR lock: %w", err)
	}
	ok, err := lockFile(f)
	if err != nil || !ok {
		f.Close()
		if err != nil {
			return "", fmt.Errorf("DATA_DIR lock %s: %w", f.Name(), err)
		}
		return "", nil
	}
	// Only the holder reads or writes the id: the first holder of a new
	// file writes it, every later one finds it.
	b, err := os.ReadFile(f.Name())
	if err != nil {
		f.Close()
		return "", fmt.Errorf("DATA_DIR lock: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		id = rand.Text()
		if _, err := f.WriteAt([]byte(id+"\n"), 0); err != nil {
			f.Close()
			return "", fmt.Errorf("DATA_DIR lock: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return "", fmt.Errorf("DATA_DIR lock: %w", err)
		}
	}
	l.f, l.id = f, id
	return id, nil
}
