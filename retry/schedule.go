package retry

import (
	"sync"
	"time"
)

// Schedule is the one "not again before" of things a loop meets at every
// pass and may have to try again (a halt to finish, a GTT to delete): by
// key, when a failed try may be made again, each key spaced by a Backoff
// of its own from the template Backoff. A loop asks Due before a try,
// notes a failure with Failed and a success with Done, and drops with
// Keep what it will never meet again; nothing is asked at every pass
// while it keeps failing. It lives in memory: a restart tries everything
// at once again, which is the behaviour a restart is for. The zero value
// uses Backoff's defaults. Safe for concurrent use.
type Schedule[K comparable] struct {
	Backoff Backoff // each key's spacing; copied at its first failure

	mu   sync.Mutex
	keys map[K]*scheduled
}

type scheduled struct {
	backoff Backoff
	next    time.Time
}

// Due reports whether k may be tried at now: it never failed, or its wait
// since the last failure has passed.
func (s *Schedule[K]) Due(k K, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.keys[k]
	return !ok || !now.Before(e.next)
}

// Failed notes that a try of k failed at now and returns how long until
// it is due again: each failure of k in a row waits longer, up to the
// Backoff's Max.
func (s *Schedule[K]) Failed(k K, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[K]*scheduled{}
	}
	e := s.keys[k]
	if e == nil {
		e = &scheduled{backoff: s.Backoff}
		e.backoff.Reset()
		s.keys[k] = e
	}
	wait := e.backoff.Next()
	e.next = now.Add(wait)
	return wait
}

// Done forgets k after a success: its next failure waits Min again.
func (s *Schedule[K]) Done(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, k)
}

// Keep forgets every key for which keep is false (what the loop will
// never meet again), so the schedule holds only what may still be tried.
func (s *Schedule[K]) Keep(keep func(K) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.keys {
		if !keep(k) {
			delete(s.keys, k)
		}
	}
}

// Len is how many keys wait after a failure.
func (s *Schedule[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
