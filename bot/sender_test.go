package bot

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

const (
	dlToken       = "424242:SECRET-delivery-token-abc"
	dlGroup int64 = -1009876543210
)

// newDeliveryClock is the fake clock deliveries run on: its Sleep moves it
// on, so pacing and backoff run in no time, and also yields for a moment
// in real time, so a retry loop cannot spin the CPU.
func newDeliveryClock() *deskbottest.Clock {
	c := deskbottest.NewClock(time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC))
	c.SetYield(100 * time.Microsecond)
	return c
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// deliveryRig is a fake Telegram on the fake clock and a Sender to it.
type deliveryRig struct {
	tg      *telegramtest.Server
	clock   *deskbottest.Clock
	s       *Sender
	retries map[int]int // code -> count
	mu      sync.Mutex
}

func mustDeliveryRig(t *testing.T) *deliveryRig {
	t.Helper()
	r := &deliveryRig{tg: telegramtest.New(t, dlToken), clock: newDeliveryClock(), retries: map[int]int{}}
	r.tg.SetNow(r.clock.Now)
	b, err := tele.NewBot(tele.Settings{URL: r.tg.URL, Token: dlToken, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	r.s = NewSender(b, SenderOptions{
		Now: r.clock.Now, Sleep: r.clock.Sleep, Log: quietLog(),
		OnRetry: func(_ string, code int) { r.mu.Lock(); r.retries[code]++; r.mu.Unlock() },
	})
	return r
}

func (r *deliveryRig) retried(code int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retries[code]
}

// checkPacing fails if accepted sends to chat break Telegram's limits.
func checkPacing(t *testing.T, calls []telegramtest.Call) {
	t.Helper()
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].At.Sub(calls[i-1].At); gap < time.Second {
			t.Errorf("sends %d and %d only %v apart", i-1, i, gap)
		}
		if i >= 20 {
			if span := calls[i].At.Sub(calls[i-20].At); span < time.Minute {
				t.Errorf("21 sends within %v", span)
			}
		}
	}
}

func TestSenderPacesWithinTelegramLimits(t *testing.T) {
	t.Parallel()
	r := mustDeliveryRig(t)
	r.tg.Limit(&telegramtest.Limits{PerChat: time.Second, PerGroupPerMinute: 20})
	const private int64 = 501
	for i := range 45 {
		chat := dlGroup
		if i%3 == 0 {
			chat = private
		}
		if _, err := r.s.Send(t.Context(), chat, "n", nil); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if n := len(r.tg.Calls("sendMessage")) - len(r.tg.Sent("sendMessage")); n != 0 {
		t.Errorf("%d sends refused by the flood limits, want 0", n)
	}
	var group []telegramtest.Call
	for _, c := range r.tg.Sent("sendMessage") {
		if c.ChatID == dlGroup {
			group = append(group, c)
		}
	}
	if len(group) != 30 {
		t.Fatalf("%d group messages, want 30", len(group))
	}
	checkPacing(t, group)
	// 30 group messages at 20 a minute cannot take less than a minute, and
	// pacing should not take much more.
	if span := group[29].At.Sub(group[0].At); span > 75*time.Second {
		t.Errorf("30 group messages took %v, want about a minute", span)
	}
}

// Concurrent callers of every lane get distinct slots that keep the limits
// between them. Each slot is the time the sender booked for its caller:
// the shared fake clock, which every sleeper moves, may have moved on by
// the time a caller could read it.
func TestSenderSlotsUnderConcurrency(t *testing.T) {
	t.Parallel()
	clock := newDeliveryClock()
	s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: clock.Sleep})
	slots := make(chan time.Time, 50)
	var wg sync.WaitGroup
	for i := range 50 {
		ctx := WithLane(t.Context(), Lane(i%4))
		wg.Go(func() {
			at, err := s.acquire(ctx, dlGroup, true, laneOf(ctx), nil)
			if err != nil {
				t.Error(err)
			}
			slots <- at
		})
	}
	wg.Wait()
	close(slots)
	var calls []telegramtest.Call
	for at := range slots {
		calls = append(calls, telegramtest.Call{At: at})
	}
	slices.SortFunc(calls, func(a, b telegramtest.Call) int { return a.At.Compare(b.At) })
	checkPacing(t, calls)
}

// Reminders leave the last sends of a group's minute to held calls: a
// minute of reminders never makes a request nobody has seen wait for the
// next minute.
func TestSenderRemindersLeaveHeldCallsRoom(t *testing.T) {
	t.Parallel()
	clock := newDeliveryClock()
	s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: clock.Sleep})
	start := clock.Now()
	remind := WithLane(t.Context(), LaneRemind)
	// Reminders go as fast as they may until the next one must wait for
	// the next minute.
	sent := 0
	for {
		p := s.chats[dlGroup]
		if p != nil && !s.slot(p, dlGroup, true, LaneRemind, clock.Now()).Before(start.Add(time.Minute)) {
			break
		}
		if _, err := s.acquire(remind, dlGroup, true, LaneRemind, nil); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	if got, want := sent, 12; got != want {
		t.Errorf("%d reminders in the minute; want %d (20 less the 8 kept for held calls)", got, want)
	}
	for i := range 8 {
		before := clock.Now()
		if _, err := s.acquire(t.Context(), dlGroup, true, LaneRequest, nil); err != nil {
			t.Fatal(err)
		}
		if waited := clock.Now().Sub(before); waited > time.Second {
			t.Errorf("held call %d after a minute of reminders waited %v; want at most the per-chat gap", i, waited)
		}
	}
}

// A reminder waiting for its share of the group's minute holds back
// nothing it does not need: the edit that closes a request, and a send of a
// lane with the whole minute, go at once (the outbox sends one thing at a
// time, so a held edit would hold back every held call behind it).
func TestSenderWaitingReminderHoldsBackNoEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		counts bool
	}{
		{"an edit", false},
		{"a send of a lane with the whole minute", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newDeliveryClock()
			release := make(chan struct{})
			defer close(release)
			sleep := func(ctx context.Context, d time.Duration) error {
				if d > 5*time.Second { // the reminder's wait for the next minute
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return clock.Sleep(ctx, d)
			}
			s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: sleep})
			remind := WithLane(t.Context(), LaneRemind)
			for range 12 {
				if _, err := s.acquire(remind, dlGroup, true, LaneRemind, nil); err != nil {
					t.Fatal(err)
				}
			}
			go s.acquire(remind, dlGroup, true, LaneRemind, nil) //nolint:errcheck // ends with the test
			deskbottest.Eventually(t, "the 13th reminder waits", func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.chats[dlGroup].waiting) == 1
			})
			ctx, cancel := context.WithTimeout(WithLane(t.Context(), LaneClose), 2*time.Second)
			defer cancel()
			before := clock.Now()
			if _, err := s.acquire(ctx, dlGroup, tt.counts, LaneClose, nil); err != nil {
				t.Fatalf("closing a request behind a waiting reminder: %v; want it sent", err)
			}
			if waited := clock.Now().Sub(before); waited > time.Second {
				t.Errorf("waited %v behind the reminder; want at most the chat's gap", waited)
			}
		})
	}
}

// Chatter leaves the last sends of the group's minute to the lanes above
// it, and the next caller served is the highest lane, then the earliest.
func TestSenderLanes(t *testing.T) {
	t.Parallel()
	clock := newDeliveryClock()
	s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: clock.Sleep})
	chatter := WithLane(t.Context(), LaneChatter)
	start := clock.Now()
	for range 12 {
		if _, err := s.acquire(chatter, dlGroup, true, LaneChatter, nil); err != nil {
			t.Fatal(err)
		}
	}
	p := s.chats[dlGroup]
	now := clock.Now()
	if got, want := now.Sub(start), 47*time.Second; got != want {
		t.Errorf("12 chatter sends took %v; want %v (bursts of three, spread evenly over the minute)", got, want)
	}
	if got, want := s.slot(p, dlGroup, true, LaneChatter, now), start.Add(time.Minute); !got.Equal(want) {
		t.Errorf("13th chatter slot at %v; want %v (a minute after the first)", got.Sub(start), want.Sub(start))
	}
	// The other eight sends of the minute are left to the lanes above.
	for i := range 8 {
		before := clock.Now()
		if _, err := s.acquire(t.Context(), dlGroup, true, []Lane{LaneRequest, LaneClose, LaneReply}[i%3], nil); err != nil {
			t.Fatal(err)
		}
		if waited := clock.Now().Sub(before); waited > time.Second {
			t.Errorf("send %d above chatter waited %v; want at most the per-chat gap", i, waited)
		}
	}

	q := &pace{changed: make(chan struct{})}
	ws := []*waiter{{lane: LaneChatter, seq: 1}, {lane: LaneReply, seq: 2}, {lane: LaneChatter, seq: 3}, {lane: LaneRequest, seq: 4}, {lane: LaneRequest, seq: 5}}
	q.waiting = append(q.waiting, ws...)
	var order []uint64
	for len(q.waiting) > 0 {
		w := q.first()
		order = append(order, w.seq)
		q.remove(w)
	}
	if want := []uint64{4, 5, 2, 1, 3}; !slices.Equal(order, want) {
		t.Errorf("served %v; want %v", order, want)
	}
}

func TestSenderRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failure   telegramtest.Failure
		down      bool
		wantErr   string
		wantCalls int
		minSlept  time.Duration
		retryCode int
	}{
		{name: "429 waits retry_after", failure: telegramtest.Failure{Method: "sendMessage", Code: 429, RetryAfter: 7, Times: 2}, wantCalls: 3, minSlept: 14 * time.Second, retryCode: 429},
		{name: "5xx backs off", failure: telegramtest.Failure{Method: "sendMessage", Code: 502, Times: 4}, wantCalls: 5, minSlept: 7500 * time.Millisecond, retryCode: 502},
		{name: "500 backs off", failure: telegramtest.Failure{Method: "sendMessage", Code: 500, Times: 1}, wantCalls: 2, retryCode: 500},
		{name: "400 is final", failure: telegramtest.Failure{Method: "sendMessage", Code: 400, Description: "Bad Request: chat not found"}, wantErr: "chat not found", wantCalls: 1},
		{name: "403 is final", failure: telegramtest.Failure{Method: "sendMessage", Code: 403}, wantErr: "kicked", wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustDeliveryRig(t)
			r.tg.Fail(tt.failure)
			before := r.clock.Slept()
			_, err := r.s.Send(t.Context(), dlGroup, "hello", nil)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := r.tg.Count("sendMessage"); got != tt.wantCalls {
				t.Errorf("%d calls, want %d", got, tt.wantCalls)
			}
			if slept := r.clock.Slept() - before; slept < tt.minSlept {
				t.Errorf("waited %v in all, want at least %v", slept, tt.minSlept)
			}
			if tt.retryCode != 0 && r.retried(tt.retryCode) != tt.wantCalls-1 {
				t.Errorf("OnRetry(%d) told %d times, want %d", tt.retryCode, r.retried(tt.retryCode), tt.wantCalls-1)
			}
		})
	}
}

func TestSenderOutageNeverLeaksToken(t *testing.T) {
	t.Parallel()
	r := mustDeliveryRig(t)
	r.tg.Down(true)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := r.s.Send(ctx, dlGroup, "hello", nil); done <- err }()
	deskbottest.Eventually(t, "three tries during the outage", func() bool { return r.tg.Count("sendMessage") >= 3 })
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error shows the token: %v", err)
	}
	if r.retried(0) < 2 {
		t.Errorf("network errors retried %d times, want several", r.retried(0))
	}
}

func TestSenderEditNotModifiedIsDone(t *testing.T) {
	t.Parallel()
	r := mustDeliveryRig(t)
	m, err := r.s.Send(t.Context(), dlGroup, "<b>held</b>", htmlOpts(&tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{{Unique: ActDeny, Data: reqID, Text: "Deny"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second edit is "message is not modified"
		if err := r.s.Edit(t.Context(), dlGroup, m.ID, "<b>denied</b>", nil); err != nil {
			t.Fatalf("edit: %v", err)
		}
	}
	got, _ := r.tg.Message(dlGroup, m.ID)
	if got.Plain != "denied" || got.Keyboard != nil {
		t.Errorf("message shows %q with keyboard %v", got.Plain, got.Keyboard)
	}
	if err := r.s.Edit(t.Context(), dlGroup, 999, "x", nil); TelegramCode(err) != 400 {
		t.Errorf("edit of a missing message: %v, want a 400", err)
	}
}

// A call answered after its slot (Telegram was slow to answer) keeps the
// gap to the next from when it was answered.
func TestSenderGapCountsFromTheSend(t *testing.T) {
	t.Parallel()
	clock := newDeliveryClock()
	s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: clock.Sleep})
	at, err := s.acquire(t.Context(), dlGroup, true, LaneRequest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := clock.Sleep(t.Context(), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	s.moved(dlGroup, true, at)
	sent := clock.Now()
	next, err := s.acquire(t.Context(), dlGroup, true, LaneRequest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gap := next.Sub(sent); gap < time.Second {
		t.Errorf("next call %v after the late one; want at least a second", gap)
	}
}

// Telegram counts a send somewhere between its start and its answer. A slow
// send must not let the 21st of a minute start before a minute has passed
// since the first was answered, or Telegram may see 21 in its own minute.
func TestSenderMinuteCountsFromTheAnswer(t *testing.T) {
	t.Parallel()
	clock := newDeliveryClock()
	s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: clock.Sleep})
	var starts, answers []time.Time
	for range 21 {
		err := s.do(t.Context(), "sendMessage", dlGroup, true, func() error {
			starts = append(starts, clock.Now())
			if err := clock.Sleep(t.Context(), 2*time.Second); err != nil { // a slow request
				return err
			}
			answers = append(answers, clock.Now())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := starts[20].Sub(answers[0]); got < time.Minute {
		t.Errorf("the 21st send started %v after the first was answered; want at least a minute", got)
	}
}

// Approvals first: a caller of a lane that shows or closes requests queued
// beside a reminder due in the same slot goes before it (the outbox shows
// held calls and closes requests one after the other, so a close served
// after reminders holds back every held call behind it); replies and
// chatter go after it. Each case books a reminder, then queues a second
// reminder and the caller for the next slot, and compares their slots.
func TestSenderServesApprovalsFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		lane       Lane
		counts     bool
		wantBefore bool // served before the waiting reminder
	}{
		{"a held call", LaneRequest, true, true},
		{"an edit closing a request", LaneClose, false, true},
		{"an outcome sent anew", LaneClose, true, true},
		{"a reply", LaneReply, true, false},
		{"chatter", LaneChatter, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := deskbottest.NewClock(deskbottest.FixedNow)
			release := make(chan struct{})
			// Sleepers wait until both callers are queued, so which goes
			// first is the Sender's choice, not the goroutines' race.
			sleep := func(ctx context.Context, d time.Duration) error {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				clock.Add(d)
				return nil
			}
			s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: sleep})
			remind := WithLane(t.Context(), LaneRemind)
			if _, err := s.acquire(remind, dlGroup, true, LaneRemind, nil); err != nil {
				t.Fatal(err)
			}
			type booked struct {
				at  time.Time
				err error
			}
			second, other := make(chan booked, 1), make(chan booked, 1)
			go func() {
				at, err := s.acquire(remind, dlGroup, true, LaneRemind, nil)
				second <- booked{at, err}
			}()
			go func() {
				at, err := s.acquire(WithLane(t.Context(), tt.lane), dlGroup, tt.counts, tt.lane, nil)
				other <- booked{at, err}
			}()
			deskbottest.Eventually(t, "both callers queued", func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.chats[dlGroup].waiting) == 2
			})
			close(release)
			r, o := <-second, <-other
			if r.err != nil || o.err != nil {
				t.Fatalf("reminder: %v; %s: %v", r.err, tt.name, o.err)
			}
			if got := o.at.Before(r.at); got != tt.wantBefore {
				t.Errorf("%s booked %v after the first reminder, the waiting reminder %v: before it = %v, want %v",
					tt.name, o.at.Sub(deskbottest.FixedNow), r.at.Sub(deskbottest.FixedNow), got, tt.wantBefore)
			}
		})
	}
}
