package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/words"
)

// A held call's request check runs in the call's slot, before the slot is
// booked: chatter that comes while the check reads Redis waits behind it,
// so the held call goes first and the chatter at least a full gap after it.
// (At least: the gap counts from the held call's answer, which may come
// after the chatter's wait began.) The chatter's waits move the clock
// only once the held call went: on a clock that stands still a wait
// otherwise moves time on for the held call too, between its slot and its
// send, which real time does not. Were the slot booked before the check,
// the chatter would now wait for a held call that waits for it, and the
// check's wait fails the test.
func TestSenderChecksBeforeBookingTheSlot(t *testing.T) {
	t.Parallel()
	clock := newDeliveryClock()
	heldSent := make(chan struct{})
	sleep := func(ctx context.Context, d time.Duration) error {
		if laneOf(ctx) == LaneChatter {
			select {
			case <-heldSent:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return clock.Sleep(ctx, d)
	}
	s := NewSender(nil, SenderOptions{Now: clock.Now, Sleep: sleep})
	start := clock.Now()
	var mu sync.Mutex
	type send struct {
		what string
		at   time.Duration
	}
	var sent []send
	sender := func(what string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, send{what, clock.Now().Sub(start)})
			if what == "held call" {
				close(heldSent)
			}
			return nil
		}
	}
	chatter := make(chan error, 1)
	var once sync.Once
	check := func(context.Context) error {
		once.Do(func() {
			go func() {
				chatter <- s.do(WithLane(t.Context(), LaneChatter), "sendMessage", dlGroup, true, sender("chatter"))
			}()
			// The check ends once the chatter has either gone out or
			// queued behind the held call.
			deskbottest.Eventually(t, "the chatter sent or waiting", func() bool {
				s.mu.Lock()
				waiting := len(s.chats[dlGroup].waiting)
				s.mu.Unlock()
				mu.Lock()
				defer mu.Unlock()
				return waiting == 2 || len(sent) > 0
			})
		})
		return nil
	}
	if err := s.do(withCheck(WithLane(t.Context(), LaneRequest), check), "sendMessage", dlGroup, true, sender("held call")); err != nil {
		t.Fatalf("held call: %v", err)
	}
	if err := <-chatter; err != nil {
		t.Fatalf("chatter: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 || sent[0].what != "held call" || sent[0].at != 0 || sent[1].what != "chatter" {
		t.Fatalf("sent %+v; want the held call at 0s, then the chatter", sent)
	}
	if gap := sent[1].at - sent[0].at; gap < time.Second {
		t.Errorf("the chatter went %v after the held call; want at least the chat's gap, 1s", gap)
	}
}

// A held call published behind a backlog of chatter reaches the chat
// among the first messages, within Telegram's pace.
func TestOutboxHeldCallOvertakesChatter(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	r.tg.Limit(&telegramtest.Limits{PerChat: time.Second, PerGroupPerMinute: 20})
	for i := range 30 {
		r.publish(t, said([]string{"alpha", "beta", "gamma"}[i%3], fmt.Sprintf("chatter %02d", i)))
	}
	r.mustCreateRequest(t, reqID)
	r.runWith(t, OutboxConfig{Request: r.st.Request})
	deskbottest.Eventually(t, "the held call", func() bool {
		for _, m := range r.tg.BotMessages(dlGroup) {
			if strings.Contains(m.Plain, words.ShortID(reqID)) {
				return true
			}
		}
		return false
	})
	msgs := r.tg.BotMessages(dlGroup)
	at := slices.IndexFunc(msgs, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, words.ShortID(reqID)) })
	// On the rig's clock a chatter send's pacing wait takes no real time,
	// so while the approvals worker reads its notes in Redis (real time)
	// before it reaches the Sender, chatter may take a few sends; at
	// Telegram's real pace, a second a send, that is one at most. Without
	// the lanes it would be the 31st.
	if at > 5 {
		t.Errorf("the held call was message %d, after %d chatter messages; want it among the first", at+1, at)
	}
	deskbottest.Eventually(t, "all the chatter", func() bool { return len(r.tg.BotMessages(dlGroup)) == 31 })
	checkPacing(t, r.tg.Sent("sendMessage"))
	// Desks took turns: in every run of three chatter messages each desk
	// spoke once.
	var desks []string
	for _, m := range r.tg.BotMessages(dlGroup) {
		if !strings.Contains(m.Plain, words.ShortID(reqID)) {
			desks = append(desks, strings.Fields(m.Plain)[1])
		}
	}
	for i := 0; i+3 <= len(desks); i += 3 {
		if got := slices.Sorted(slices.Values(desks[i : i+3])); !slices.Equal(got, []string{"alpha", "beta", "gamma"}) {
			t.Fatalf("chatter order %v: desks did not take turns", desks)
		}
	}
	// The last message is acknowledged only after Telegram accepted it and
	// its notes were written, so seeing it is not yet seeing its ack.
	r.eventuallyAllAcked(t)
	r.checkAllAcked(t)
}

// eventuallyAllAcked waits until the outbox holds nothing unacknowledged
// (reading only what it holds, so it takes nothing new from it).
func (r *outboxRig) eventuallyAllAcked(t *testing.T) {
	t.Helper()
	deskbottest.Eventually(t, "every event acknowledged", func() bool {
		held, err := r.st.ReadEventsAfter(t.Context(), OutboxGroup, "bot", "0", 100, 0)
		return err == nil && len(held) == 0
	})
}

// A request that closes while its message waits for a slot is not sent.
func TestOutboxChecksTheRequestRightBeforeSending(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	req := r.mustCreateRequest(t, reqID)
	lapsed := *req
	lapsed.State = deskbot.StateLapsed
	r.runWith(t, OutboxConfig{Request: func(ctx context.Context, id string) (*deskbot.Request, error) { return &lapsed, nil }})
	r.publish(t, said("alpha", "after the request"))
	deskbottest.Eventually(t, "the desk message after it", func() bool { return len(r.tg.BotMessages(dlGroup)) >= 1 })
	r.eventuallyAllAcked(t)
	for _, m := range r.tg.BotMessages(dlGroup) {
		if strings.Contains(m.Plain, words.ShortID(reqID)) {
			t.Errorf("a closed request was offered: %q", m.Plain)
		}
	}
}

// A flood of held calls is shown as one digest message per desk, a row a
// request, and the digest is edited as requests close.
func TestOutboxFloodShowsDigests(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	var reqs []*deskbot.Request
	for i := range 8 {
		reqs = append(reqs, r.mustCreateRequest(t, fmt.Sprintf("00000000-0000-4000-8000-%012d", i)))
	}
	r.runWith(t, OutboxConfig{Request: r.st.Request, Open: r.st.OpenRequests, DigestAfter: 3})
	deskbottest.Eventually(t, "a digest of eight rows", func() bool {
		m := r.tg.BotMessages(dlGroup)
		return len(m) == 1 && len(m[0].Keyboard) == 8
	})
	d := r.tg.BotMessages(dlGroup)[0]
	for i, row := range d.Keyboard {
		if got := []string{row[0].Data, row[1].Data}; !slices.Equal(got, []string{CallbackData(ActAllowOnce, reqs[i].ID), CallbackData(ActDeny, reqs[i].ID)}) {
			t.Errorf("row %d decides %q; want request %s", i+1, got, reqs[i].ID)
		}
	}
	r.mustTransition(t, reqs[0], deskbot.Transition{Kind: deskbot.TransitionDeny, Now: time.Now(),
		Set: deskbot.RequestPatch{Decision: deskbot.Deny, DecidedBy: deskbot.Person{ID: 501, Name: "Asha"}, DecidedAt: time.Now()}},
		deskbot.EventRequestDecided)
	deskbottest.Eventually(t, "the digest edited to seven rows", func() bool {
		m, _ := r.tg.Message(dlGroup, d.ID)
		return len(m.Keyboard) == 7 && !strings.Contains(fmt.Sprint(m.Keyboard), reqs[0].ID)
	})
	// A request held later joins its desk's digest; no new message.
	late := r.mustCreateRequest(t, "00000000-0000-4000-8000-000000000099")
	deskbottest.Eventually(t, "the late request in the digest", func() bool {
		m, _ := r.tg.Message(dlGroup, d.ID)
		return len(m.Keyboard) == 8 && strings.Contains(fmt.Sprint(m.Keyboard), late.ID)
	})
	if n := len(r.tg.BotMessages(dlGroup)); n != 1 {
		t.Errorf("%d messages; want the one digest", n)
	}
	r.eventuallyAllAcked(t)
}

// Digest pages stay within Telegram's limits; each open request is one row
// deciding exactly it; Allow only on a call the row shows whole.
func TestDigestPages(t *testing.T) {
	t.Parallel()
	var rows []*deskbot.Request
	for i := range 150 {
		r := heldRequest()
		r.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		if i%10 == 0 {
			r.Content.Arguments = json.RawMessage(`{"note":"` + strings.Repeat("x", 400) + `"}`)
		}
		rows = append(rows, r)
	}
	pages := DigestPages("alpha", rows)
	seen := map[string]int{}
	for p, pg := range pages {
		if n := plainLen(pg.Text); n > MaxMessage {
			t.Errorf("page %d is %d characters", p, n)
		}
		buttons := 0
		for _, row := range pg.Markup.InlineKeyboard {
			buttons += len(row)
			if len(row) != 2 || row[0].Data != row[1].Data {
				t.Fatalf("page %d row %v: want two buttons on one request", p, row)
			}
			for _, b := range row {
				if n := len(CallbackData(b.Unique, b.Data)); n > MaxCallbackData {
					t.Errorf("callback data of %d bytes", n)
				}
			}
			seen[row[0].Data]++
		}
		if buttons > 100 {
			t.Errorf("page %d has %d buttons", p, buttons)
		}
	}
	for i, r := range rows {
		if seen[r.ID] != 1 {
			t.Errorf("request %d has %d rows", i, seen[r.ID])
		}
	}
	for _, pg := range pages {
		for _, row := range pg.Markup.InlineKeyboard {
			var i int
			fmt.Sscanf(row[0].Data[len(row[0].Data)-12:], "%d", &i)
			want := ActAllowOnce
			if i%10 == 0 {
				want = ActOpen
			}
			if row[0].Unique != want || row[1].Unique != ActDeny {
				t.Errorf("request %d row offers %s, %s; want %s, %s", i, row[0].Unique, row[1].Unique, want, ActDeny)
			}
		}
	}
}

// What closes requests gives way to a held call: the outbox does both
// one after the other, and each close takes a slot of the chat, so with a
// held call waiting closeAll stops before its next event and leaves the
// rest in their lane, for the step after the held call.
func TestOutboxCloseGivesWayToAHeldCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		held     bool
		wantSent int
	}{
		{"no held call waiting", false, 3},
		{"a held call waiting", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustOutboxRig(t)
			o := NewOutbox(OutboxConfig{ChatID: dlGroup, Now: r.clock.Now, Sleep: r.clock.Sleep}, r.st, r.st, r.s, quietLog())
			var closes []deskbot.Event
			for i := range 3 {
				closes = append(closes, deskbot.Event{ID: fmt.Sprintf("1-%d", i+1), Kind: deskbot.EventRisk, Desk: "alpha", Text: fmt.Sprintf("warning %d", i)})
			}
			o.q.add(closes...)
			if tt.held {
				o.q.add(deskbot.Event{ID: "1-9", Kind: deskbot.EventUserRequest, Desk: "alpha", RequestID: reqID})
			}
			if err := o.closeAll(WithLane(t.Context(), LaneClose), o.q.closing()); err != nil {
				t.Fatal(err)
			}
			if got := len(r.tg.BotMessages(dlGroup)); got != tt.wantSent {
				t.Errorf("%d warnings sent; want %d", got, tt.wantSent)
			}
			if got, want := len(o.q.closing()), 3-tt.wantSent; got != want {
				t.Errorf("%d left in the closing lane; want %d", got, want)
			}
		})
	}
}

// A reminder waits while the outbox holds a held call still to be shown,
// and goes once it was: it never takes a slot of the chat that call could
// use.
func TestReminderWaitsForHeldCallsToBeShown(t *testing.T) {
	t.Parallel()
	b := &Bot{outbox: &Outbox{q: newLanes()}}
	b.outbox.q.add(deskbot.Event{ID: "1-1", Kind: deskbot.EventUserRequest, Desk: "alpha", RequestID: reqID},
		deskbot.Event{ID: "1-2", Kind: deskbot.EventRisk, Desk: "alpha", Text: "a warning"})
	done := make(chan error, 1)
	go func() { done <- b.heldCallsFirst(t.Context()) }()
	b.outbox.q.drop("1-2") // what closes requests does not hold a reminder back
	select {
	case err := <-done:
		t.Fatalf("the reminder went (%v) while a held call waited to be shown", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.outbox.q.drop("1-1")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reminder still waits after the held call was shown")
	}
}
