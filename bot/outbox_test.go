package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

// outboxRig is a delivery rig with a real Redis store and outboxes on it.
type outboxRig struct {
	*deliveryRig
	st       *store.Store
	pictures string
}

func mustOutboxRig(t *testing.T) *outboxRig {
	t.Helper()
	r := &outboxRig{deliveryRig: mustDeliveryRig(t), st: storetest.MustOpen(t), pictures: t.TempDir()}
	return r
}

// run starts an outbox as a (re)started process would, and returns a stop
// function that waits for it to return.
func (r *outboxRig) run(t *testing.T) (stop func()) {
	t.Helper()
	return r.runWith(t, OutboxConfig{})
}

// runWith is run with cfg's Request, Open and DigestAfter.
func (r *outboxRig) runWith(t *testing.T, cfg OutboxConfig) (stop func()) {
	t.Helper()
	o := NewOutbox(OutboxConfig{
		ChatID: dlGroup, Consumer: "bot", Now: r.clock.Now, Sleep: r.clock.Sleep, Block: 20 * time.Millisecond,
		PictureRoot: func(desk string) string { return filepath.Join(r.pictures, desk) },
		Request:     cfg.Request, Open: cfg.Open, DigestAfter: cfg.DigestAfter,
	}, r.st, r.st, r.s, quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func (r *outboxRig) publish(t *testing.T, evs ...deskbot.Event) {
	t.Helper()
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = r.clock.Now()
		}
		if err := r.st.Publish(t.Context(), e); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
}

// checkAllAcked fails unless the group has nothing pending or new.
func (r *outboxRig) checkAllAcked(t *testing.T) {
	t.Helper()
	left, err := r.st.ReadEvents(t.Context(), OutboxGroup, "bot", 100, time.Millisecond)
	if err != nil || len(left) != 0 {
		t.Errorf("events left unacknowledged: %d (%v)", len(left), err)
	}
}

func said(desk, text string) deskbot.Event {
	return deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: desk, Text: text}
}

// bodies returns the plain text of the bot's messages, labels stripped.
func bodies(tg *telegramtest.Server) []string {
	var out []string
	for _, m := range tg.BotMessages(dlGroup) {
		_, body, _ := strings.Cut(m.Plain, "\n")
		out = append(out, body)
	}
	return out
}

// mustCreateRequest creates an open request in the store (not through the
// gate: the outbox is tested alone), which publishes its user_request
// event. Times are real: the store expires old requests.
func (r *outboxRig) mustCreateRequest(t *testing.T, id string) *deskbot.Request {
	t.Helper()
	req := heldRequest()
	req.ID = id
	req.CreatedAt = time.Now().Truncate(time.Minute)
	req.ExpiresAt = req.CreatedAt.Add(5 * time.Minute)
	ev := deskbot.Event{Kind: deskbot.EventUserRequest, Desk: req.Desk, Time: req.CreatedAt}
	if err := r.st.CreateRequest(t.Context(), req, deskbot.AuditEntry{Action: "hold", By: "system", At: req.CreatedAt}, ev); err != nil {
		t.Fatalf("CreateRequest: %v", err)
	}
	return req
}

func (r *outboxRig) mustTransition(t *testing.T, req *deskbot.Request, tr deskbot.Transition, kind deskbot.EventKind) {
	t.Helper()
	tr.Event = &deskbot.Event{Kind: kind, Desk: req.Desk, RequestID: req.ID, Time: tr.Now}
	if _, out, err := r.st.Transition(t.Context(), req.ID, tr); err != nil || out != deskbot.Applied {
		t.Fatalf("%s transition: %v, %v", tr.Kind, out, err)
	}
}

func TestOutboxDeliversEachKind(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	held := r.mustCreateRequest(t, reqID)
	lapsed := r.mustCreateRequest(t, "5f0c2d1e-0a4b-4c3d-8e9f-112233445566")
	if err := os.MkdirAll(filepath.Join(r.pictures, "alpha"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.pictures, "alpha", "chart.png"), []byte("png"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.publish(t,
		deskbot.Event{Kind: deskbot.EventToolCall, Desk: "alpha", Call: &deskbot.ToolCall{Name: "bash", Arguments: json.RawMessage(`{}`)}},
		said("alpha", "<b>bought</b> 10 INFY & <script>"),
		deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "see chart", Picture: "chart.png"},
		deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "beta", Text: "stolen", Picture: "/etc/passwd"},
		deskbot.Event{Kind: deskbot.EventModelUnreachable, Desk: "beta", Text: "all backends down"},
	)
	r.mustTransition(t, lapsed, deskbot.Transition{Kind: deskbot.TransitionLapse, Now: lapsed.ExpiresAt.Add(time.Second)}, deskbot.EventRequestLapsed)
	stop := r.run(t)
	// The request that lapsed before it could be shown is never offered:
	// one short notice says so instead.
	deskbottest.Eventually(t, "six messages", func() bool { return len(r.tg.BotMessages(dlGroup)) == 6 })
	all := r.tg.BotMessages(dlGroup)
	find := func(sub string) telegramtest.Message {
		t.Helper()
		for _, m := range all {
			if strings.Contains(m.Plain, sub) {
				return m
			}
		}
		t.Fatalf("no message has %q", sub)
		return telegramtest.Message{}
	}
	req := find("wants to run")
	if got := req.Labels(); !slices.Equal(got, []string{"Allow once", "Always allow", "Deny", "Why?"}) || !strings.Contains(req.Plain, words.ShortID(reqID)) {
		t.Errorf("request message %q buttons %q", req.Plain, got)
	}
	if fold := find("closed before they could be shown"); fold.Keyboard != nil || !strings.Contains(fold.Plain, "1 request closed") || !strings.Contains(fold.Plain, "1 lapsed") {
		t.Errorf("the lapsed request's notice: %q with %v", fold.Plain, fold.Labels())
	}
	msgs := []telegramtest.Message{req, {}, find("bought"), find("see chart"), find("stolen"), find("all backends down")}
	if want := "<b>bought</b> 10 INFY & <script>"; !strings.HasSuffix(msgs[2].Plain, want) {
		t.Errorf("desk message reads %q, want the model's markup as text %q", msgs[2].Plain, want)
	}
	if !msgs[3].Photo || !strings.Contains(msgs[3].Plain, "see chart") {
		t.Errorf("picture message: %+v", msgs[3])
	}
	if msgs[4].Photo || !strings.Contains(msgs[4].Plain, "picture was left out") {
		t.Errorf("a picture outside the desk's folder was sent: %+v", msgs[4])
	}
	// A message's route for replies is noted once Telegram has answered
	// its send, a moment after the message itself shows.
	for _, m := range msgs[2:5] {
		want := strings.Fields(m.Plain)[1]
		deskbottest.Eventually(t, fmt.Sprintf("message %d routing replies to %s", m.ID, want), func() bool {
			desk, err := r.st.Note(t.Context(), deskMessageKey(dlGroup, m.ID))
			return err == nil && desk == want
		})
	}

	// The decision edits the request's message: outcome shown, keyboard gone.
	decided := time.Now()
	r.mustTransition(t, held, deskbot.Transition{Kind: deskbot.TransitionAllow, Now: decided, UnlessHalted: held.Desk,
		Set: deskbot.RequestPatch{Decision: deskbot.AllowOnce, DecidedBy: deskbot.Person{ID: 501, Name: "Asha"}, DecidedAt: decided}},
		deskbot.EventRequestDecided)
	deskbottest.Eventually(t, "the request message to show the decision", func() bool {
		m, _ := r.tg.Message(dlGroup, msgs[0].ID)
		return strings.Contains(m.Plain, "running…")
	})
	if m, _ := r.tg.Message(dlGroup, msgs[0].ID); m.Keyboard != nil || !strings.Contains(m.Plain, "Allowed once by Asha at "+ist(decided)) {
		t.Errorf("after the decision the request shows %q with keyboard %v", m.Plain, m.Keyboard)
	}
	if n := len(r.tg.BotMessages(dlGroup)); n != 6 {
		t.Errorf("%d messages after the decision, want the same 6", n)
	}
	stop()
	r.checkAllAcked(t)
}

func TestOutboxOutageOfAMinuteLosesNothing(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	r.tg.Down(true)
	began := r.clock.Now()
	var want []string
	for i := range 6 {
		desk := []string{"alpha", "beta"}[i%2] // alternating: nothing coalesces
		want = append(want, fmt.Sprintf("message %d", i))
		r.publish(t, said(desk, want[i]))
	}
	stop := r.run(t)
	deskbottest.Eventually(t, "a minute of outage on the fake clock", func() bool { return r.clock.Now().Sub(began) > time.Minute })
	r.tg.Down(false)
	deskbottest.Eventually(t, "six messages after the outage", func() bool { return len(r.tg.BotMessages(dlGroup)) >= 6 })
	stop()
	r.checkAllAcked(t)
	if got := bodies(r.tg); !slices.Equal(got, want) {
		t.Errorf("after the outage the chat shows %q, want %q", got, want)
	}
	if n := r.tg.Count("sendMessage") - len(r.tg.Sent("sendMessage")); n < 5 {
		t.Errorf("only %d failed attempts: the outage was not exercised", n)
	}
}

func TestOutbox429StormIsPacedAndDropsNothing(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	r.tg.Limit(&telegramtest.Limits{PerChat: time.Second, PerGroupPerMinute: 20})
	r.tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 429, RetryAfter: 5, Times: 3})
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("update %02d", i))
		r.publish(t, said([]string{"alpha", "beta"}[i%2], want[i]))
	}
	stop := r.run(t)
	deskbottest.Eventually(t, "25 messages through the storm", func() bool { return len(r.tg.BotMessages(dlGroup)) >= 25 })
	stop()
	r.checkAllAcked(t)
	if got := bodies(r.tg); !slices.Equal(got, want) {
		t.Errorf("chat shows %q, want %q", got, want)
	}
	if refused := r.tg.Count("sendMessage") - len(r.tg.Sent("sendMessage")); refused != 3 {
		t.Errorf("%d sends refused, want only the 3 injected 429s", refused)
	}
	checkPacing(t, r.tg.Sent("sendMessage"))
}

func TestOutboxCoalescesAndSplits(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	long := strings.Repeat("Position review line that goes on. ", 286)[:10000]
	r.publish(t, said("alpha", "one"), said("alpha", "two"), said("alpha", "three"), said("beta", "other desk"), said("beta", long))
	stop := r.run(t)
	parts := len(RenderDeskMessages("beta", long))
	deskbottest.Eventually(t, "the burst and the long message's parts", func() bool { return len(r.tg.BotMessages(dlGroup)) >= 2+parts })
	stop()
	r.checkAllAcked(t)
	msgs := r.tg.BotMessages(dlGroup)
	if got, want := msgs[0].Plain, "💬 alpha\none\n\ntwo\n\nthree"; got != want {
		t.Errorf("burst arrived as %q, want %q", got, want)
	}
	var whole strings.Builder
	for _, m := range msgs[2:] {
		_, body, _ := strings.Cut(m.Plain, "\n")
		whole.WriteString(body)
	}
	if parts < 3 || whole.String() != long {
		t.Errorf("10,000 characters arrived as %d messages, %d characters", len(msgs)-2, len(whole.String()))
	}
}

func TestOutboxRestartSendsEachOnce(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	var want []string
	for i := range 8 {
		want = append(want, fmt.Sprintf("fill %d", i))
		r.publish(t, said([]string{"alpha", "beta"}[i%2], want[i]))
	}
	stop := r.run(t)
	deskbottest.Eventually(t, "three messages before the restart", func() bool { return len(r.tg.BotMessages(dlGroup)) >= 3 })
	stop() // shut down mid-batch: events read and not all acknowledged
	stop = r.run(t)
	deskbottest.Eventually(t, "all eight messages after the restart", func() bool { return len(r.tg.BotMessages(dlGroup)) >= 8 })
	stop()
	r.checkAllAcked(t)
	if got := bodies(r.tg); !slices.Equal(got, want) {
		t.Errorf("after a restart the chat shows %q, want each once: %q", got, want)
	}
}

// A desk's messages said close together are merged under one header; one
// said after a pause is a message of its own. A shutdown while the merged
// message is on its way sends it once, and none of its parts again.
func TestOutboxMergesMessagesSaidCloseTogether(t *testing.T) {
	t.Parallel()
	r := mustOutboxRig(t)
	t0 := r.clock.Now()
	at := func(e deskbot.Event, d time.Duration) deskbot.Event { e.Time = t0.Add(d); return e }
	r.publish(t, at(said("alpha", "one"), 0), at(said("alpha", "two"), 5*time.Second), at(said("alpha", "three"), 30*time.Second),
		at(said("alpha", "an hour on"), time.Hour))
	r.tg.Hang("sendMessage", 0)
	stop := r.run(t)
	deskbottest.Eventually(t, "the merged message to reach Telegram", func() bool { return r.tg.Count("sendMessage") > 0 })
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	r.tg.Release()
	<-stopped
	r.tg.ClearFailures()
	stop = r.run(t)
	r.publish(t, said("beta", "after the restart"))
	deskbottest.Eventually(t, "beta's message after the restart", func() bool {
		got := bodies(r.tg)
		return len(got) > 0 && got[len(got)-1] == "after the restart"
	})
	stop()
	r.checkAllAcked(t)
	if got, want := bodies(r.tg), []string{"one\n\ntwo\n\nthree", "an hour on", "after the restart"}; !slices.Equal(got, want) {
		t.Errorf("chat shows %q, want %q", got, want)
	}
}

// ackCounter is an event stream that records acknowledgements.
type ackCounter struct {
	OutboxEvents
	calls [][]string // one per round trip
}

func (a *ackCounter) AckEvent(_ context.Context, _ string, id string) error {
	a.calls = append(a.calls, []string{id})
	return nil
}

func (a *ackCounter) AckEvents(_ context.Context, _ string, ids ...string) error {
	if len(ids) > 0 {
		a.calls = append(a.calls, ids)
	}
	return nil
}

// What is not for the chat is acknowledged as it is read, a batch's in one
// round trip; what is for the chat waits in its lane, unacknowledged.
func TestOutboxAcksWhatIsNotForTheChatAtOnce(t *testing.T) {
	t.Parallel()
	acks := &ackCounter{}
	o := NewOutbox(OutboxConfig{}, acks, nil, nil, quietLog())
	evs := []deskbot.Event{
		{ID: "1-0", Kind: deskbot.EventToolCall, Desk: "alpha"},
		{ID: "2-0", Kind: deskbot.EventUserRequest, Desk: "alpha", RequestID: "r1"},
		{ID: "3-0", Kind: deskbot.EventToolResult, Desk: "alpha"},
		{ID: "4-0", Kind: deskbot.EventDeskState, Desk: "alpha"},
		{ID: "5-0"}, // trimmed from the stream
	}
	if err := o.enqueue(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(acks.calls), fmt.Sprint([][]string{{"1-0", "3-0", "4-0", "5-0"}}); got != want {
		t.Errorf("acknowledged %s; want %s in one round trip", got, want)
	}
	if got := o.q.heldCalls(); len(got) != 1 || got[0].ID != "2-0" {
		t.Errorf("held calls waiting = %v; want the user_request", got)
	}
}
