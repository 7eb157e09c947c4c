package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/store"
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
	if got, want := s.Due(ist(2026, 12, 5, 12, 0), ist(2026, 12, 7, 12, 0)), ist(2026, 12, 7, 9, 15); len(got) != 1 || !got[0].At.Equal(want) {
		t.Errorf("Due from Saturday noon to Monday noon = %v, want one firing, Monday 09:15 IST", got)
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

// memNotes and memInbox are the scheduler's store in memory, for tests on
// a fake clock; failNext makes the next Enqueue fail, as Redis might.
type memNotes struct {
	mu    sync.Mutex
	notes map[string]string
}

func (m *memNotes) PutNote(_ context.Context, k, v string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notes[k] = v
	return nil
}

func (m *memNotes) PutNoteOnce(_ context.Context, k, v string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.notes[k]; ok {
		return false, nil
	}
	m.notes[k] = v
	return true, nil
}

func (m *memNotes) Note(_ context.Context, k string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.notes[k]
	if !ok {
		return "", deskbot.Errorf(deskbot.ENOTFOUND, "no note %s", k)
	}
	return v, nil
}

func (m *memNotes) DeleteNote(_ context.Context, k string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.notes, k)
	return nil
}

type memInbox struct {
	deskbot.Inbox // only Enqueue is used
	mu            sync.Mutex
	queued        []deskbot.Trigger
	failAt        time.Time // Enqueue of the trigger created at this time fails once
}

func (m *memInbox) Enqueue(_ context.Context, tr deskbot.Trigger) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tr.CreatedAt.Equal(m.failAt) {
		m.failAt = time.Time{}
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "redis down")
	}
	m.queued = append(m.queued, tr)
	return nil
}

// On a fake clock: the scheduler starts, catches up on what it missed
// just before, then fires every minute once, a firing that could not be
// queued included (on a later tick).
func TestSchedulerRunFiresEachMinuteOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // the bubble's clock: 2000-01-01 00:00 UTC
		s := mustScheduler(t, "* * * * *")
		in := &memInbox{failAt: start.Add(5 * time.Minute)}
		s.Inbox, s.Notes = in, &memNotes{notes: map[string]string{}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		cancel()
		<-done

		var got []string
		for _, tr := range in.queued {
			got = append(got, tr.CreatedAt.Sub(start).String())
		}
		// CatchUp (2m) looks back to -2m: the firings at -1m and 0 are due.
		want := "-1m0s 0s 1m0s 2m0s 3m0s 4m0s 5m0s 6m0s 7m0s 8m0s 9m0s 10m0s"
		if strings.Join(got, " ") != want {
			t.Errorf("queued at %v, want %s", got, want)
		}
	})
}

func mustNextTrigger(t *testing.T, in *store.Store, desk string) *deskbot.Trigger {
	t.Helper()
	tr, err := in.NextTrigger(t.Context(), desk, 100*time.Millisecond)
	if err != nil || tr == nil {
		t.Fatalf("NextTrigger = %v, %v", tr, err)
	}
	return tr
}
