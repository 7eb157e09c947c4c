package store_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
)

func watchOf(id, desk string) deskbot.Watch {
	return deskbot.Watch{ID: id, Desk: desk, Symbol: "NSE:INFY", Direction: deskbot.WatchAbove, Level: 1600, Note: "breakout", CreatedAt: time.Now()}
}

// A desk's cap holds however many calls race for its last places, and
// another desk's watches do not count against it.
func TestAddWatchCapHoldsUnderRace(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	const max = 5
	var kept atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.AddWatch(ctx, watchOf(string(rune('a'+i)), "alpha"), max)
			switch deskbot.ErrorCode(err) {
			case "":
				kept.Add(1)
			case deskbot.ECONFLICT:
			default:
				t.Errorf("AddWatch: %v", err)
			}
		}()
	}
	wg.Wait()
	if got := kept.Load(); got != max {
		t.Errorf("kept %d watches; want %d", got, max)
	}
	if err := s.AddWatch(ctx, watchOf("b1", "beta"), max); err != nil {
		t.Errorf("another desk's first watch: %v", err)
	}
	ws, err := s.Watches(ctx, "alpha")
	if err != nil || len(ws) != max {
		t.Errorf("Watches(alpha) = %d, %v; want %d", len(ws), err, max)
	}
	all, err := s.AllWatches(ctx)
	if err != nil || len(all) != max+1 {
		t.Errorf("AllWatches = %d, %v; want %d", len(all), err, max+1)
	}
}

// A watch fires once: of racing evaluators one queues the trigger, and a
// cancelled watch queues nothing.
func TestFireWatchOnce(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	w := watchOf("w1", "alpha")
	if err := s.AddWatch(ctx, w, 50); err != nil {
		t.Fatal(err)
	}
	var fired atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.FireWatch(ctx, w, deskbot.Trigger{Kind: deskbot.TriggerWatch, Text: "crossed"})
			if err != nil {
				t.Errorf("FireWatch: %v", err)
			}
			if ok {
				fired.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := fired.Load(); got != 1 {
		t.Errorf("fired %d times; want 1", got)
	}
	if n, err := s.PendingTriggers(ctx, "alpha"); err != nil || n != 1 {
		t.Errorf("alpha's inbox holds %d, %v; want 1", n, err)
	}
	tr, err := s.NextTrigger(ctx, "alpha", 0)
	if err != nil || tr == nil || tr.Kind != deskbot.TriggerWatch || tr.Text != "crossed" || tr.Desk != "alpha" {
		t.Errorf("trigger = %+v, %v", tr, err)
	}
	if ws, _ := s.AllWatches(ctx); len(ws) != 0 {
		t.Errorf("watches left after firing: %v", ws)
	}

	w2 := watchOf("w2", "alpha")
	if err := s.AddWatch(ctx, w2, 50); err != nil {
		t.Fatal(err)
	}
	// Another desk cannot cancel it.
	if _, err := s.CancelWatch(ctx, "beta", "w2"); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.Errorf("beta cancels alpha's watch: %v; want ENOTFOUND", err)
	}
	got, err := s.CancelWatch(ctx, "alpha", "w2")
	if err != nil || got.ID != "w2" || got.Note != "breakout" {
		t.Errorf("CancelWatch = %+v, %v", got, err)
	}
	if ok, err := s.FireWatch(ctx, w2, deskbot.Trigger{Kind: deskbot.TriggerWatch, Text: "late"}); ok || err != nil {
		t.Errorf("a cancelled watch fired: %v, %v", ok, err)
	}
	if n, _ := s.PendingTriggers(ctx, "alpha"); n != 1 {
		t.Errorf("alpha's inbox holds %d; want the one trigger", n)
	}
}
