package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

func ist(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, deskbot.IST)
}

func mustScheduler(t *testing.T, specs ...string) *agent.Scheduler {
	t.Helper()
	var sc []agent.Schedule
	for _, s := range specs {
		sc = append(sc, agent.Schedule{Cron: s, Text: "run " + s})
	}
	s, err := agent.NewScheduler([]agent.DeskConfig{{Name: "main", Schedules: sc}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScheduleFiresInIndiaTime(t *testing.T) {
	s := mustScheduler(t, "15 9 * * 1-5")
	tests := []struct {
		name     string
		from, to time.Time
		want     []time.Time
	}{
		// 2026-12-04 is a Friday; 09:15 India time is 03:45 UTC.
		{"weekday", time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC),
			[]time.Time{time.Date(2026, 12, 4, 3, 45, 0, 0, time.UTC)}},
		{"saturday", ist(2026, 12, 5, 0, 0), ist(2026, 12, 5, 23, 59), nil},
		{"sunday", ist(2026, 12, 6, 0, 0), ist(2026, 12, 6, 23, 59), nil},
		{"not at 09:15 UTC", time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC), time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC), nil},
		{"to is inclusive", ist(2026, 12, 4, 9, 14), ist(2026, 12, 4, 9, 15), []time.Time{ist(2026, 12, 4, 9, 15)}},
		{"from is exclusive", ist(2026, 12, 4, 9, 15), ist(2026, 12, 4, 9, 16), nil},
		{"a week", ist(2026, 12, 4, 10, 0), ist(2026, 12, 11, 10, 0),
			[]time.Time{ist(2026, 12, 7, 9, 15), ist(2026, 12, 8, 9, 15), ist(2026, 12, 9, 9, 15), ist(2026, 12, 10, 9, 15), ist(2026, 12, 11, 9, 15)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Due(tt.from, tt.to)
			if len(got) != len(tt.want) {
				t.Fatalf("Due = %v, want %v", got, tt.want)
			}
			for i, f := range got {
				if !f.At.Equal(tt.want[i]) || f.Desk != "main" || f.Text != "run 15 9 * * 1-5" {
					t.Errorf("firing %d = %+v, want at %v", i, f, tt.want[i])
				}
				if f.At.Location() != deskbot.IST {
					t.Errorf("firing %d is in %v, want India time", i, f.At.Location())
				}
			}
		})
	}
	if got, want := s.Next(ist(2026, 12, 5, 12, 0)), ist(2026, 12, 7, 9, 15); !got.Equal(want) {
		t.Errorf("Next after Saturday noon = %v, want Monday 09:15 IST", got)
	}
}

func TestScheduleFiresOnceAcrossRestart(t *testing.T) {
	st := storetest.MustOpen(t)
	ctx := t.Context()
	f := agent.Firing{Desk: "main", Cron: "15 9 * * 1-5", Text: "market open", At: ist(2026, 12, 4, 9, 15)}

	s1 := mustScheduler(t, f.Cron)
	s1.Inbox, s1.Notes = st, st
	if ok, err := s1.Fire(ctx, f); err != nil || !ok {
		t.Fatalf("first Fire = %v, %v; want queued", ok, err)
	}
	if ok, err := s1.Fire(ctx, f); err != nil || ok {
		t.Fatalf("second Fire = %v, %v; want skipped", ok, err)
	}
	// A restarted process on the same Redis looks back and finds it again.
	st2 := storetest.MustReopen(t, st)
	s2 := mustScheduler(t, f.Cron)
	s2.Inbox, s2.Notes = st2, st2
	if ok, err := s2.Fire(ctx, f); err != nil || ok {
		t.Fatalf("Fire after restart = %v, %v; want skipped", ok, err)
	}
	tr := mustNextTrigger(t, st, "main")
	if tr.Kind != deskbot.TriggerSchedule || tr.Text != "market open" || !tr.CreatedAt.Equal(f.At) {
		t.Errorf("trigger = %+v", tr)
	}
	if n, _ := st.PendingTriggers(ctx, "main"); n != 1 {
		t.Errorf("pending triggers = %d, want 1", n)
	}
}

func TestSchedulerRunCatchesUpAfterStart(t *testing.T) {
	st := storetest.MustOpen(t)
	s := mustScheduler(t, "15 9 * * 1-5")
	// The service starts a minute after the firing: it still fires, once.
	s.Inbox, s.Notes, s.Tick = st, st, 10*time.Millisecond
	var looks atomic.Int64 // each tick reads the clock once
	s.Now = func() time.Time { looks.Add(1); return ist(2026, 12, 4, 9, 16) }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	deskbottest.Eventually(t, "the schedule trigger", func() bool {
		n, _ := st.PendingTriggers(t.Context(), "main")
		return n >= 1
	})
	// A few more ticks look again and must not fire it again.
	after := looks.Load()
	deskbottest.Eventually(t, "three more ticks", func() bool { return looks.Load() >= after+3 })
	cancel()
	<-done
	if n, _ := st.PendingTriggers(t.Context(), "main"); n != 1 {
		t.Errorf("pending triggers = %d, want 1", n)
	}
}

func mustNextTrigger(t *testing.T, in deskbot.Inbox, desk string) *deskbot.Trigger {
	t.Helper()
	tr, err := in.NextTrigger(t.Context(), desk, 100*time.Millisecond)
	if err != nil || tr == nil {
		t.Fatalf("NextTrigger = %v, %v", tr, err)
	}
	return tr
}
