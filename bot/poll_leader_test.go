package bot

import (
	"sync/atomic"
	"testing"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// leadership is a process's term as the poller sees it; the lease is the
// store's real one.
type leadership struct {
	token atomic.Int64
	valid atomic.Bool
}

func (l *leadership) Token() int64 { return l.token.Load() }
func (l *leadership) Valid() bool  { return l.valid.Load() }

func mustLeadership(t *testing.T, st *store.Store) *leadership {
	t.Helper()
	token, err := st.AcquireLease(t.Context(), time.Minute)
	if err != nil || token == 0 {
		t.Fatalf("AcquireLease = %d, %v", token, err)
	}
	l := &leadership{}
	l.token.Store(token)
	l.valid.Store(true)
	return l
}

type runningPoller struct {
	dest       chan tele.Update
	stop, done chan struct{}
}

func startPoller(t *testing.T, tg *telegramtest.Server, st *store.Store, l *leadership) *runningPoller {
	t.Helper()
	b, err := tele.NewBot(tele.Settings{URL: tg.URL, Token: dlToken, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	rp := &runningPoller{dest: make(chan tele.Update, 4), stop: make(chan struct{}), done: make(chan struct{})}
	p := &poller{timeout: time.Second, log: quietLog(), scrub: func(s string) string { return s }, offsets: st, leader: l}
	go func() { defer close(rp.done); p.Poll(b, rp.dest, rp.stop) }()
	t.Cleanup(rp.halt)
	return rp
}

func (rp *runningPoller) halt() {
	select {
	case <-rp.stop:
	default:
		close(rp.stop)
	}
	<-rp.done
}

func (rp *runningPoller) next(t *testing.T) string {
	t.Helper()
	select {
	case u := <-rp.dest:
		return u.Message.Text
	case <-time.After(10 * time.Second):
		t.Fatal("no update within 10s")
		return ""
	}
}

// The next leader starts where the last one stopped handing updates over:
// the updates the old leader handed over but had not yet confirmed to
// Telegram (it stopped first) are not given to the new one again, and
// nothing after them is skipped.
func TestPollerNextLeaderNeitherSkipsNorReplays(t *testing.T) {
	t.Parallel()
	st := storetest.MustOpen(t)
	tg := telegramtest.New(t, dlToken)
	user := telegramtest.User{ID: 101, FirstName: "Asha"}
	first := mustLeadership(t, st)
	a := startPoller(t, tg, st, first)
	for _, text := range []string{"one", "two", "three"} {
		tg.InjectText(user, dlGroup, text, 0)
	}
	a.next(t)
	a.next(t)
	// From here Telegram refuses getUpdates, so the getUpdates that would
	// confirm the batch never succeeds before the leader stops.
	tg.Fail(telegramtest.Failure{Method: "getUpdates", Code: 502})
	if got := a.next(t); got != "three" {
		t.Fatalf("third update %q", got)
	}
	deskbottest.Eventually(t, "the old leader's offset saved", func() bool {
		v, err := st.Note(t.Context(), updateOffsetKey(0, tg.URL))
		return err == nil && v != "" && v != "0"
	})
	a.halt()
	if n := tg.PendingUpdates(); n != 3 {
		t.Fatalf("Telegram holds %d unconfirmed updates, want the old leader's 3", n)
	}
	if err := st.ReleaseLease(t.Context(), first.Token()); err != nil {
		t.Fatal(err)
	}
	tg.ClearFailures()
	tg.InjectText(user, dlGroup, "four", 0)

	b := startPoller(t, tg, st, mustLeadership(t, st))
	if got := b.next(t); got != "four" {
		t.Errorf("the new leader's first update is %q, want %q (the old leader had handed one, two, three over)", got, "four")
	}
}

// A poller whose term may have lapsed (a pause past the lease) hands over
// nothing and stops: the updates stay with Telegram for the new leader.
func TestPollerOfAStaleLeaderHandsNothingOver(t *testing.T) {
	t.Parallel()
	st := storetest.MustOpen(t)
	tg := telegramtest.New(t, dlToken)
	l := mustLeadership(t, st)
	l.valid.Store(false)
	tg.InjectText(telegramtest.User{ID: 101, FirstName: "Asha"}, dlGroup, "for the new leader", 0)
	p := startPoller(t, tg, st, l)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stale leader kept polling")
	}
	select {
	case u := <-p.dest:
		t.Errorf("a stale leader handed over %q", u.Message.Text)
	default:
	}
	if n := tg.PendingUpdates(); n != 1 {
		t.Errorf("Telegram holds %d unconfirmed updates, want 1", n)
	}
}

// A leader whose token no longer holds the lease, unaware of it, stops
// polling at its next save (the store refuses the offset): the batch it
// was already waiting for is the last it hands over.
func TestPollerStopsWhenAnotherLeads(t *testing.T) {
	t.Parallel()
	st := storetest.MustOpen(t)
	tg := telegramtest.New(t, dlToken)
	user := telegramtest.User{ID: 101, FirstName: "Asha"}
	l := mustLeadership(t, st)
	p := startPoller(t, tg, st, l)
	tg.InjectText(user, dlGroup, "first", 0)
	p.next(t)
	// The lease passes on during the next long poll: Telegram drops "first"
	// once that poll confirms it, which comes after the offset was saved.
	deskbottest.Eventually(t, "the next long poll", func() bool { return tg.PendingUpdates() == 0 })
	if err := st.ReleaseLease(t.Context(), l.Token()); err != nil {
		t.Fatal(err)
	}
	mustLeadership(t, st) // another process
	tg.InjectText(user, dlGroup, "second", 0)
	p.next(t) // the long poll in flight when the lease passed on
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a leader whose lease passed on kept polling")
	}
	tg.InjectText(user, dlGroup, "third", 0)
	select {
	case u := <-p.dest:
		t.Errorf("handed over %q after the store refused its offset", u.Message.Text)
	default:
	}
	if n := tg.PendingUpdates(); n != 2 {
		t.Errorf("Telegram holds %d unconfirmed updates, want 2 (second and third, for the new leader)", n)
	}
}

// A handler acts on an update while this process may still lead, or once
// its own fenced write confirmed the update; an update handed over but not
// confirmed when the lease passed (a pause between the two) is left to the
// new leader, which is given it again.
func TestPollerMayHandle(t *testing.T) {
	t.Parallel()
	st := storetest.MustOpen(t)
	l := mustLeadership(t, st)
	p := &poller{offsets: st, leader: l}
	p.handed = 7
	if ok, err := p.saveOffset(t.Context(), &tele.Bot{Me: &tele.User{ID: 1}, URL: "http://x"}); !ok || err != nil {
		t.Fatalf("saveOffset = %v, %v", ok, err)
	}
	tests := []struct {
		name  string
		valid bool
		id    int
		want  bool
	}{
		{"leading, confirmed", true, 7, true},
		{"leading, not yet confirmed", true, 8, true},
		{"lease passed, confirmed by this process", false, 7, true},
		{"lease passed, not confirmed", false, 8, false},
	}
	for _, tt := range tests {
		l.valid.Store(tt.valid)
		if got := p.mayHandle(tt.id); got != tt.want {
			t.Errorf("%s: mayHandle(%d) = %v, want %v", tt.name, tt.id, got, tt.want)
		}
	}
	if one := (&poller{}); !one.mayHandle(99) {
		t.Error("without a leader (one process) an update was not handled")
	}
}
