package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskfs"
)

// Manager holds one Session per desk, created on first use.
type Manager struct {
	cfg    Config
	status Status
	bash   string
	bwrap  string
	slirp  string // "" when desks have no network in bwrap mode

	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
}

// NewManager checks the configuration and decides the mode once. With
// ModeAuto and no usable bwrap it logs one error and gives desks no
// terminal (ModeUnavailable: the tools say so); with ModeBwrap and no usable
// bwrap it fails (EUNAVAILABLE). With Network asked for and no slirp4netns,
// desks have no network, with one warning.
func NewManager(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	desks := deskfs.Parent(cfg.DataDir)
	if err := os.MkdirAll(desks, 0o700); err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot make the desks' folder in %s: %v", cfg.DataDir, err)
	}
	// Resolve symlinks once so the path bound into bwrap is the real one.
	if cfg.DataDir, err = filepath.EvalSymlinks(cfg.DataDir); err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "data folder: %v", err)
	}
	if cfg.asHost() >= 0 {
		// The desks' user must reach its folder through these two, but
		// not list them (0711): other desks' names and the service's
		// files stay out of sight.
		for _, d := range []string{cfg.DataDir, deskfs.Parent(cfg.DataDir)} {
			if err := os.Chmod(d, 0o711); err != nil {
				return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot open %s to the desks' user: %v", d, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, status: st, sessions: map[string]*Session{}}
	if m.bash, err = bashPath(); err != nil {
		return nil, err
	}
	switch st.Mode {
	case ModeBwrap:
		if m.bwrap, err = lookBwrap(cfg); err != nil {
			return nil, err
		}
		if st.Network {
			if m.slirp, err = lookSlirp(cfg); err != nil {
				return nil, err
			}
		}
	case ModeUnavailable:
		cfg.Logger.Error("sandbox: bubblewrap cannot start here, so desks have NO terminal (bash tools unavailable); "+Fix, "reason", st.Reason)
	}
	if st.Folder != "" {
		cfg.Logger.Error("sandbox: " + st.Folder)
	}
	if st.NetworkReason != "" {
		cfg.Logger.Warn("sandbox: " + st.NetworkReason)
	}
	// The summary agrees with the lines above: "ready" only when desks
	// have a terminal.
	if st.Mode == ModeUnavailable || st.Folder != "" {
		cfg.Logger.Warn("sandbox started without a terminal for desks", "mode", st.Mode)
	} else {
		cfg.Logger.Info("sandbox ready", "mode", st.Mode, "network", st.Network, "timeout", cfg.Timeout, "job_timeout", cfg.JobTimeout)
	}
	return m, nil
}

// Mode is ModeBwrap, ModeNone or ModeUnavailable: what desks actually get.
func (m *Manager) Mode() string { return m.status.Mode }

// Status is what the sandbox gives desks, as decided at start.
func (m *Manager) Status() Status { return m.status }

// noteNoTerminal marks that the chat was told today that desks have no
// terminal.
const noteNoTerminal = "sandbox:no-terminal"

// TellNoTerminal tells the chat, once a day at most however often the
// service restarts, that desks have no terminal and how to give them one.
// The warning rides on the model_unreachable event, which the bot shows as
// a warning line.
func (m *Manager) TellNoTerminal(ctx context.Context, notes deskbot.Notes, events deskbot.Publisher, now time.Time) {
	st := m.Status()
	why := st.Folder
	if st.Mode == ModeUnavailable {
		why = "bubblewrap cannot start here (" + st.Reason + "): " + Fix
	}
	if why == "" {
		return
	}
	if first, err := notes.PutNoteOnce(ctx, noteNoTerminal, "1", 24*time.Hour); err != nil || !first {
		return
	}
	if err := events.Publish(ctx, deskbot.Event{Kind: deskbot.EventModelUnreachable, Desk: deskbot.AllDesks, Time: now,
		Text: "Desks have no terminal: their bash tools are unavailable. " + why}); err != nil {
		m.cfg.Logger.Warn("could not tell the chat that desks have no terminal", "err", deskbot.ErrorMessage(err))
	}
}

// Session returns the desk's session, creating its folder and session on
// first use. The shell itself starts with the first command.
func (m *Manager) Session(desk string) (*Session, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return nil, err
	}
	if m.status.Mode == ModeUnavailable {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s", unavailableText)
	}
	if m.status.Folder != "" {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s", m.status.Folder)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "the sandbox is shutting down")
	}
	if s := m.sessions[desk]; s != nil {
		return s, nil
	}
	dir := m.cfg.DeskDir(desk)
	if err := os.MkdirAll(filepath.Join(dir, ScratchDir), 0o700); err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot make the folder of desk %s: %v", desk, err)
	}
	uid := -1 // the service's own: bash in mode none as another user; bwrap starts as asHost
	if owner := m.cfg.asHost(); owner >= 0 {
		if m.status.Mode == ModeNone {
			var err error
			if owner, err = m.noneUID(desk); err != nil {
				return nil, err
			}
			uid = owner
		}
		if err := handOver(dir, owner); err != nil {
			return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot hand the folder of desk %s to its user (uid %d): %v", desk, owner, err)
		}
	}
	s := &Session{
		m: m, desk: desk, dir: dir, uid: uid, scratch: filepath.Join(dir, ScratchDir),
		turn: make(chan struct{}, 1), jobs: map[string]*job{},
	}
	m.sessions[desk] = s
	return s, nil
}

// noneUID is the host uid desk runs as in mode none when the service is
// root: one of its own, so that no desk reads, writes or signals another's
// folder and processes, which a shared uid would allow. A desk keeps the
// uid its folder already belongs to (its files stay its own across
// restarts) unless another desk's folder has it too; else it gets the
// lowest uid of the range no desk's folder has. The folders' owners are
// the whole record: Session calls this under m.mu, before handing the
// folder over.
func (m *Manager) noneUID(desk string) (int, error) {
	base := m.cfg.NoneUIDBase
	parent := deskfs.Parent(m.cfg.DataDir)
	ents, err := os.ReadDir(parent)
	if err != nil {
		return -1, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot list the desks' folders: %v", err)
	}
	own, taken := -1, map[int]bool{}
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(parent, e.Name()))
		if err != nil || !fi.IsDir() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) < base || int(st.Uid) >= base+NoneUIDs {
			continue
		}
		if e.Name() == desk {
			own = int(st.Uid)
		} else {
			taken[int(st.Uid)] = true
		}
	}
	if own >= 0 && !taken[own] {
		return own, nil
	}
	for uid := base; uid < base+NoneUIDs; uid++ {
		if !taken[uid] {
			return uid, nil
		}
	}
	return -1, deskbot.Errorf(deskbot.EUNAVAILABLE, "desk %s: all %d uids for desks in mode none (from %d) are taken by other desks' folders", desk, NoneUIDs, base)
}

// reachable says why uid may not pass through every folder from / to dir
// ("" when it may): the desks' user reaches its folder by path, bwrap
// (0.8) included.
//
// Before the first start DATA_DIR may not exist: NewManager makes it and
// opens it to uid, so it passes. A missing folder above it is another
// matter: NewManager would make it private to the service's user (0700),
// which uid cannot pass.
func reachable(dir string, uid int) string {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if errors.Is(err, fs.ErrNotExist) && d == dir {
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("desks run as uid %d, which could not pass through %s on the way to DATA_DIR: the start would make it private to the service's user, so they would have no terminal; make DATA_DIR first, passable (mkdir -p %s, then chmod o+x on each folder made), or put DATA_DIR elsewhere (e.g. /var/lib/deskbot)", uid, d, dir)
		}
		if err != nil {
			return "data folder: " + err.Error()
		}
		bit := fs.FileMode(0o001)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			bit = 0o100
		}
		if fi.Mode().Perm()&bit == 0 {
			return fmt.Sprintf("desks run as uid %d, which cannot pass through %s on the way to DATA_DIR, so they have no terminal; make it passable (chmod o+x %s) or put DATA_DIR elsewhere (e.g. /var/lib/deskbot)", uid, d, d)
		}
		if d == "/" {
			return ""
		}
	}
}

// handOver makes everything in the desk's folder owned by uid, the host
// user the desk runs as. It walks through os.Root and changes owners with
// lchown, so a symlink the desk planted (even one swapped in during the
// walk) never leads the change outside the folder.
func handOver(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
		return nil // handed over before; new files are the desk's own
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone or unreadable: nothing to hand over
		}
		return root.Lchown(p, uid, uid)
	})
}

// Stop ends a desk's shell and background jobs (the desk stopped). Its next
// use starts a fresh session; its folder stays.
func (m *Manager) Stop(desk string) error {
	m.mu.Lock()
	s := m.sessions[desk]
	delete(m.sessions, desk)
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// Close stops every session and background job and refuses new sessions.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	all := m.sessions
	m.sessions = map[string]*Session{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, 0, len(all))
	var emu sync.Mutex
	for _, s := range all {
		wg.Go(func() {
			if err := s.Close(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
