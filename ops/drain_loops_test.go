package ops_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deskbot/deskbot/ops"
)

// A loop that fails is reported with its name; one that ends with the stop
// (a cancellation) or cleanly is not.
func TestDrainReportsAFailedLoop(t *testing.T) {
	d := ops.NewDrain(context.Background())
	var mu sync.Mutex
	var got []string
	d.Failed = func(err error) { mu.Lock(); got = append(got, err.Error()); mu.Unlock() }
	d.Go("bot", func() error { return errors.New("telegram refused the token") })
	d.Go("risk", func() error { <-d.Soft().Done(); return d.Soft().Err() })
	d.GoHard("desks", func() error { <-d.Hard().Done(); return nil })
	d.Stop()
	if !d.Finish(time.Minute) {
		t.Error("a stop with every loop returning at once was not clean")
	}
	if want := []string{"bot: telegram refused the token"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("reported %q, want %q", got, want)
	}
}

// Finish waits for the soft loops and then for no desk to be busy, and
// only then cancels the desks (Hard): a turn under way is not cut off.
func TestDrainFinishLetsWorkEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := ops.NewDrain(context.Background())
		held := make(chan struct{}) // a held call the bot waits for
		d.Go("bot", func() error { <-d.Soft().Done(); <-held; return nil })
		desksCut := make(chan time.Time, 1)
		d.GoHard("desks", func() error { <-d.Hard().Done(); desksCut <- time.Now(); return nil })
		start := time.Now()
		d.Stop()
		go func() { time.Sleep(5 * time.Second); close(held) }()
		if !d.Finish(30 * time.Second) {
			t.Error("a stop whose work ended within the bound was not clean")
		}
		if cut := (<-desksCut).Sub(start); cut < 5*time.Second {
			t.Errorf("the desks were cancelled %v into the stop, before the held call ended (5s)", cut)
		}
	})
}

// Work that outlasts the bound is cut off at the bound: Finish reports it
// and returns once the desks have returned.
func TestDrainFinishBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := ops.NewDrain(context.Background())
		d.Go("bot", func() error { <-d.Hard().Done(); return nil }) // a held call that never ends by itself
		d.GoHard("desks", func() error { <-d.Hard().Done(); return nil })
		start := time.Now()
		d.Stop()
		if d.Finish(10 * time.Second) {
			t.Error("a stop cut off at its bound was reported clean")
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("Finish returned after %v, want the bound (10s)", took)
		}
		if d.Hard().Err() == nil {
			t.Error("everything left was not cancelled")
		}
	})
}
