package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
)

// Manager holds one Session per desk, created on first use.
type Manager struct {
	cfg   Config
	mode  string // ModeBwrap or ModeNone, decided once at start
	bash  string
	bwrap string

	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
}

// NewManager checks the configuration and decides the mode once: with
// ModeAuto and no usable bwrap it logs one warning and runs desks in plain
// bash; with ModeBwrap and no usable bwrap it fails (EUNAVAILABLE).
func NewManager(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "desks"), 0o700); err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot make the desks' folder in %s: %v", cfg.DataDir, err)
	}
	// Resolve symlinks once so the path bound into bwrap is the real one.
	if cfg.DataDir, err = filepath.EvalSymlinks(cfg.DataDir); err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "data folder: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	mode, reason, err := probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, mode: mode, sessions: map[string]*Session{}}
	if m.bash, err = bashPath(); err != nil {
		return nil, err
	}
	if mode == ModeBwrap {
		if m.bwrap, err = lookBwrap(); err != nil {
			return nil, err
		}
	}
	if reason != "" {
		cfg.Logger.Warn("sandbox: bubblewrap cannot start here, so desks run in a plain bash in their folders with a clean environment but WITHOUT isolation; set SANDBOX=bwrap to refuse to start instead",
			"reason", reason)
	}
	cfg.Logger.Info("sandbox ready", "mode", mode, "network", cfg.Network, "timeout", cfg.Timeout)
	return m, nil
}

// Mode is ModeBwrap or ModeNone: what desks actually run in.
func (m *Manager) Mode() string { return m.mode }

// Session returns the desk's session, creating its folder and session on
// first use. The shell itself starts with the first command.
func (m *Manager) Session(desk string) (*Session, error) {
	if err := ValidDesk(desk); err != nil {
		return nil, err
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
	s := &Session{
		m: m, desk: desk, dir: dir, scratch: filepath.Join(dir, ScratchDir),
		turn: make(chan struct{}, 1), jobs: map[string]*job{},
	}
	m.sessions[desk] = s
	return s, nil
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
