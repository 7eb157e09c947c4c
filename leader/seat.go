package leader

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/deskbot/deskbot"
)

// Seat is this process's seat at the lead: when it starts leading and when
// it stops. Take makes one attempt at the lease at once, so that a lone
// instance (or the first of several) leads when Take returns; otherwise it
// campaigns in the background and starts leading when it wins. Leave, at a
// graceful stop, ends the campaign and hands back the term to release
// last. The embedded Current is the term the parts see
// (deskbot.Leadership): give them the Seat before Take.
//
// A term that ends unasked (the lease could not be renewed in time) has
// Lost called at once, before the lease can pass on. Lead, Lost and Failed
// are set before Take and never changed after; Take and Leave are called
// once each, from one goroutine.
type Seat struct {
	Current
	// Elector takes and keeps the lease; Take sets its Holder.
	Elector *Elector
	// Lead starts everything only the leader runs, under term. It runs
	// on Take's goroutine or on the campaign's.
	Lead func(term *Term) error
	// Lost stops at once everything Lead started: the term ended unasked.
	Lost func()
	// Failed is told that a won campaign could not start leading.
	Failed func(error)

	mu       sync.Mutex // guards leaving against a campaign that just won
	leaving  bool
	campaign context.CancelFunc
	won      chan struct{} // closed when the campaign goroutine returned
}

// Take takes the lead now, or stands by and keeps trying; it reports
// whether this process leads. Terms outlive ctx's cancellation (they end
// by Release or by losing the lease); the campaign ends with ctx or Leave.
//
// The DATA_DIR lock proves a dead predecessor dead: holding it, this
// process takes a lease left under its own identity at once. While
// another live process holds it, this one has nothing to prove: it leads
// only a free lease, as an instance on another host would, and tries the
// lock again with each try of the lease.
func (s *Seat) Take(ctx context.Context, dataDir string) (leading bool, err error) {
	lock, err := OpenDirLock(dataDir)
	if err != nil {
		return false, err
	}
	if !lock.Held() {
		s.Elector.log().Warn("another live instance on this host uses DATA_DIR: this one waits out a lease a dead instance left, until it holds DATA_DIR's lock", "lock", filepath.Join(lock.Dir(), LockFile))
	}
	s.Elector.Holder = lock.Identity
	term, err := s.Elector.TryAcquire(ctx)
	if err != nil {
		return false, fmt.Errorf("leader lease: %s", deskbot.ErrorMessage(err))
	}
	if term == nil {
		s.standBy(ctx)
		return false, nil
	}
	return true, s.start(term)
}

// standBy campaigns for the lease in the background and starts leading
// when it wins.
func (s *Seat) standBy(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	s.campaign, s.won = cancel, make(chan struct{})
	go func() {
		defer close(s.won)
		term, err := s.Elector.Campaign(ctx)
		if err != nil {
			return // Leave
		}
		s.mu.Lock()
		leaving := s.leaving
		s.mu.Unlock()
		if leaving {
			_ = term.Release(context.Background())
			return
		}
		s.Elector.log().Info("taking over: this instance now leads", "token", term.Token())
		if err := s.start(term); err != nil {
			s.Failed(fmt.Errorf("taking over: %w", err))
		}
	}()
}

// start makes term current and starts leading under it.
func (s *Seat) start(term *Term) error {
	s.Set(term)
	// The term ending unasked (not by a release) stops everything that
	// acts at once: the lease may pass on a quarter lease from now.
	context.AfterFunc(term.Context(), func() {
		if errors.Is(context.Cause(term.Context()), ErrLost) {
			s.Lost()
		}
	})
	return s.Lead(term)
}

// Leave ends the campaign (a term it wins meanwhile is released unused)
// and returns the term this process leads under, nil when none: the
// caller finishes its work under it and releases it last, so that a
// standby never finds a call still running and reports it interrupted.
func (s *Seat) Leave() *Term {
	s.mu.Lock()
	s.leaving = true
	s.mu.Unlock()
	if s.campaign != nil {
		s.campaign()
		<-s.won
	}
	return s.Term()
}
