package ops_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/ops"
)

// downStream is an event stream whose Redis is down: every read fails.
type downStream struct {
	mu    sync.Mutex
	tries []time.Duration // since start, one per attempt
	start time.Time
}

func (s *downStream) try() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries = append(s.tries, time.Since(s.start))
	return errors.New("redis down")
}

func (s *downStream) Publish(context.Context, deskbot.Event) error { return nil }
func (s *downStream) ReadEvents(context.Context, string, string, int, time.Duration) ([]deskbot.Event, error) {
	return nil, s.try()
}
func (s *downStream) AckEvent(context.Context, string, string) error      { return nil }
func (s *downStream) AckEvents(context.Context, string, ...string) error  { return nil }
func (s *downStream) CreateEventGroupAtEnd(context.Context, string) error { return s.try() }

// While Redis is down the counter retries after 1s, 2s, 4s...; a stop ends
// its wait at once.
func TestCountEventsBacksOffAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &downStream{start: time.Now()}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- ops.NewMetrics(nil).CountEvents(ctx, src, "test", slog.New(slog.DiscardHandler)) }()
		time.Sleep(10 * time.Second) // fake time: tries at 0, 1, 3 and 7s
		synctest.Wait()
		src.mu.Lock()
		got := slices.Clone(src.tries)
		src.mu.Unlock()
		if want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("tries at %v, want %v", got, want)
		}
		cancel() // mid-way through the 8s wait
		synctest.Wait()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("CountEvents returned %v, want context.Canceled", err)
			}
		default:
			t.Error("CountEvents still waiting after its context ended")
		}
	})
}
