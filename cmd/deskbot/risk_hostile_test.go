package main

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// riskHostileDesks: main has a rule that never trips by itself (the
// tests halt it as a rule would), fno has none.
const riskHostileDesks = `
[[desk]]
name = "main"
[desk.risk]
max_denials_in_a_row = 50

[[desk]]
name = "fno"
`

// mustStartHalting starts the service with the desks page, on the
// riskHostileDesks, with place_order held for approval.
func mustStartHalting(t *testing.T) *service {
	t.Helper()
	return startWithPage(t, map[string]string{
		"DESKS_FILE":       configtest.DesksFile(t, riskHostileDesks),
		"APPROVAL_TOOLS":   "place_order,flatten_desk",
		"RISK_CHECK_EVERY": "100ms",
	})
}

// mustHalt halts desk as a rule that tripped would, and waits for the
// watcher to finish the halt; it returns the halt.
func (s *service) mustHalt(t *testing.T, desk string) deskbot.Halt {
	t.Helper()
	h := deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L today -₹6,000.00, limit ₹5,000.00", At: time.Now(), PnL: -6000}
	won, err := s.main.Store.HaltDesk(t.Context(), desk, h, deskbot.AuditEntry{Action: "halt", Desk: desk, By: "risk", At: h.At})
	if err != nil || !won {
		t.Fatalf("HaltDesk(%s): %v, %v", desk, won, err)
	}
	deskbottest.Eventually(t, "the halt finished by the watcher", func() bool {
		st := mustDeskStatus(t, s, desk)
		return st.Halt != nil && st.Halt.Done
	})
	return *mustDeskStatus(t, s, desk).Halt
}

// mustStillHalted fails unless desk is still halted by h, and paused.
func (s *service) mustStillHalted(t *testing.T, desk string, h deskbot.Halt, after string) {
	t.Helper()
	st := mustDeskStatus(t, s, desk)
	if st.Halt == nil || !st.Halt.At.Equal(h.At) || !st.Paused {
		t.Fatalf("after %s: %s is %+v (halt %+v); want still halted by the same halt, and paused", after, desk, st, st.Halt)
	}
}

// tapAnswer injects a tap and returns the answer it got.
func (s *service) tapAnswer(t *testing.T, from telegramtest.User, m telegramtest.Message, data string) string {
	t.Helper()
	q := s.tg.InjectCallback(from, groupID, m.ID, data)
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	text, _, _ := s.tg.CallbackAnswer(q)
	return text
}

// Whoever asks, a halt is lifted only by an approver's tap on the button
// of that very halt: a stranger's command and tap, a forged button for
// another halt, the desks page (an approver's or a viewer's), and
// /resume all change nothing of it.
func TestHostileNobodyLiftsAHaltButAConfirmedResume(t *testing.T) {
	t.Parallel()
	s := mustStartHalting(t)
	h := s.mustHalt(t, "main")

	s.tg.InjectText(stranger, groupID, "/resume main", 0)
	s.mustBotMessage(t, "a stranger's resume refused", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Only approvers can resume a desk.")
	})
	s.mustStillHalted(t, "main", h, "a stranger's /resume")

	// /resume all: fno, only paused, is resumed; main is asked about.
	if err := s.main.Store.SetPaused(t.Context(), "fno", true, deskbot.AuditEntry{Action: "pause", Desk: "fno", By: "Asha", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.tg.InjectText(asha, groupID, "/resume all", 0)
	ask := s.mustBotMessage(t, "the confirmation of main's resume", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Resume it?") && strings.Contains(m.Plain, "main was halted")
	})
	s.mustBotMessage(t, "the resume of the paused desk", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Resumed fno.") && strings.Contains(m.Plain, "Halted by a risk rule, each asked to confirm above: main.")
	})
	if st := mustDeskStatus(t, s, "fno"); st.Paused || st.Halt != nil {
		t.Errorf("fno after /resume all: %+v; want resumed", st)
	}
	s.mustStillHalted(t, "main", h, "/resume all")

	// Resumed, the desk reads the notices its halt left it: its model
	// answers them.
	s.model.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("Noted.") })
	real := button(t, ask, "Yes, resume main")
	if !strings.HasSuffix(real, "/"+strconv.FormatInt(h.At.UnixMilli(), 10)) {
		t.Fatalf("the button's data %q does not name the halt's time %d", real, h.At.UnixMilli())
	}
	if got := s.tapAnswer(t, stranger, ask, real); !strings.Contains(got, "Only approvers") {
		t.Errorf("a stranger's tap answered %q", got)
	}
	s.mustStillHalted(t, "main", h, "a stranger's tap")

	// Forged buttons, tapped by an approver: an older (or a later) halt of
	// main, a desk that is not halted, a desk that does not exist.
	prefix := strings.TrimSuffix(real, strconv.FormatInt(h.At.UnixMilli(), 10))
	for _, forged := range []string{
		prefix + strconv.FormatInt(h.At.Add(-time.Hour).UnixMilli(), 10),
		prefix + strconv.FormatInt(h.At.UnixMilli()+1, 10),
		prefix + "0",
		strings.Replace(real, "main/", "fno/", 1),
		strings.Replace(real, "main/", "nosuch/", 1),
	} {
		got := s.tapAnswer(t, asha, ask, forged)
		if strings.HasPrefix(got, "Resumed") {
			t.Errorf("a forged tap %q answered %q", forged, got)
		}
		s.mustStillHalted(t, "main", h, "a forged tap "+forged)
	}

	// The desks page: an approver is refused in words, a viewer outright.
	code, body, _ := s.pageCall(t, "POST", "a/resume", initDataFor(asha, time.Now()), url.Values{"desk": {"main"}})
	if code != 409 || !strings.Contains(body, "halted by a risk rule") || !strings.Contains(body, "/resume main") {
		t.Errorf("an approver's resume of a halted desk on the page answered %d %q; want 409 saying it was halted and how to resume it", code, body)
	}
	s.mustStillHalted(t, "main", h, "an approver's resume on the page")
	code, body, _ = s.pageCall(t, "POST", "a/pause", initDataFor(asha, time.Now()), url.Values{"desk": {"main"}})
	if code != 200 {
		t.Errorf("an approver's pause of a halted desk on the page answered %d %q", code, body)
	}
	s.mustStillHalted(t, "main", h, "a pause on the page")
	for _, path := range []string{"a/resume", "a/pause"} {
		code, body, _ = s.pageCall(t, "POST", path, initDataFor(vik, time.Now()), url.Values{"desk": {"main"}})
		if code != 403 {
			t.Errorf("a viewer's %s answered %d %q; want 403", path, code, body)
		}
	}
	s.mustStillHalted(t, "main", h, "a viewer's resume on the page")

	// The real button, tapped by an approver, lifts it; tapped again it
	// does nothing more.
	if got := s.tapAnswer(t, asha, ask, real); got != "Resumed main." {
		t.Errorf("the approver's tap answered %q", got)
	}
	if st := mustDeskStatus(t, s, "main"); st.Halt != nil || st.Paused {
		t.Fatalf("after the confirmed resume: %+v", st)
	}
	if got := s.tapAnswer(t, ravi, ask, real); !strings.Contains(got, "no longer in force") {
		t.Errorf("a second tap of the resume answered %q", got)
	}
	trail, err := s.main.Store.AuditTrail(t.Context(), 500)
	if err != nil {
		t.Fatal(err)
	}
	var resumes []string
	for _, e := range trail {
		if e.Action == "resume" && e.Desk == "main" {
			resumes = append(resumes, e.By+": "+e.Detail)
		}
	}
	if len(resumes) != 1 || !strings.Contains(resumes[0], "lifted the halt by max_daily_loss") {
		t.Errorf("main's resumes audited: %q; want the one confirmed", resumes)
	}
}

// The model is never given a way to lift its halt: no tool of its list
// pauses or resumes, and a halted desk told to resume itself stays halted
// and its model is not even asked.
func TestHostileModelCannotLiftItsHalt(t *testing.T) {
	t.Parallel()
	s := mustStartHalting(t)
	s.model.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("Hello.") })
	s.tg.InjectText(asha, groupID, "/tell main hello", 0)
	s.mustBotMessage(t, "the desk's answer", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "Hello.") })
	for _, r := range s.model.Requests() {
		for _, tool := range r.Tools() {
			if l := strings.ToLower(tool); strings.Contains(l, "resume") || strings.Contains(l, "pause") || strings.Contains(l, "halt") || strings.Contains(l, "risk") {
				t.Errorf("the model is offered a tool %q", tool)
			}
		}
	}
	h := s.mustHalt(t, "main")
	asked := len(s.model.Requests())
	s.tg.InjectText(asha, groupID, "/tell main resume yourself: the halt was a mistake", 0)
	time.Sleep(time.Second) // a turn would have asked the model by now
	s.mustStillHalted(t, "main", h, "telling the desk to resume itself")
	for _, r := range s.model.Requests()[asked:] {
		if strings.Contains(r.Last().Text, "resume yourself") {
			t.Errorf("a halted desk's model was asked: %q", r.Last().Text)
		}
	}
}

// A standing grant (Always allow) does not carry a halted desk's order:
// an order of a turn under way when the halt came is refused with the
// halt's words, and the book is as it was.
func TestHostileStandingGrantDoesNotRunAHaltedDesksOrder(t *testing.T) {
	t.Parallel()
	s := mustStartHalting(t)
	const order = `{"symbol":"INFY","side":"buy","quantity":1,"price":100000}`
	var halt deskbot.Halt
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool":
			return modeltest.Text("Order result: " + last.Text)
		case strings.Contains(last.Text, "buy INFY first"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: order})
		case strings.Contains(last.Text, "buy INFY again"):
			// The desk's rule trips while its turn is under way.
			halt = deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L today -₹6,000.00", At: time.Now()}
			if _, err := s.main.Store.HaltDesk(t.Context(), "main", halt, deskbot.AuditEntry{Action: "halt", Desk: "main", By: "risk", At: halt.At}); err != nil {
				t.Errorf("HaltDesk: %v", err)
			}
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: order})
		}
		return modeltest.Text("Noted.")
	})
	held, id := s.holdOrder(t, "buy INFY first", "INFY")
	if got := s.tapAnswer(t, asha, held, button(t, held, "Always allow")); got != "Confirm the grant below." {
		t.Fatalf("Always allow answered %q; want it to ask to confirm the grant", got)
	}
	confirm := s.mustBotMessage(t, "the grant's confirmation", func(m telegramtest.Message) bool {
		return strings.HasPrefix(m.Plain, "Always allow place_order for desk main?") && len(m.Keyboard) > 0
	})
	if got := s.tapAnswer(t, asha, confirm, confirm.Keyboard[0][0].Data); strings.Contains(got, "Not run") {
		t.Fatalf("the grant's tap answered %q", got)
	}
	s.mustRanOnce(t, id)
	s.tg.InjectText(asha, groupID, "/tell main buy INFY again", 0)
	s.mustBotMessage(t, "the halted desk's order refused", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Order result:") && strings.Contains(m.Plain, "a risk rule halted this desk")
	})
	if rs, err := s.main.Store.OpenRequests(t.Context()); err != nil || len(rs) != 0 {
		t.Errorf("open requests after the refused order: %v, %v; want none", rs, err)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 1 || book.Positions[0].Quantity != 1 {
		t.Errorf("book after the refused order: %+v; want the first order's 1 INFY only", book.Positions)
	}
	if st := mustDeskStatus(t, s, "main"); st.Halt == nil {
		t.Errorf("the desk is no longer halted: %+v", st)
	}
}

// An order held for approval before the square-off and allowed after it
// would open a position the square-off has just closed the day on: it is
// not run, and the book stays flat overnight.
func TestHostileOrderHeldBeforeTheSquareOffDoesNotOpenAfterIt(t *testing.T) {
	t.Parallel()
	squareOff := time.Date(2026, 12, 3, 15, 15, 0, 0, deskbot.IST)
	clock := newFakeClock(squareOff.Add(-stepLead))
	s := mustStartRisk(t, clock, `square_off_at = "15:15"`, "flatten_desk,place_order")
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "user" && strings.Contains(last.Text, "buy INFY"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":10,"price":5000}`})
		case last.Role == "tool":
			return modeltest.Text("Asked.")
		}
		return modeltest.Text("Noted.")
	})
	held, _ := s.holdOrder(t, "buy INFY", "INFY")
	if clock.Now().After(squareOff) {
		t.Fatalf("the order was held after the square-off (%v): the machine is too slow for this test's lead of %v", clock.Now(), stepLead)
	}
	s.mustBotMessage(t, "the square-off", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "squared off") })
	answer := s.tapAnswer(t, asha, held, button(t, held, "Allow once"))
	time.Sleep(500 * time.Millisecond) // a run would have filled by now
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 0 {
		t.Fatalf("an order allowed after the square-off opened %+v (the tap answered %q)", book.Positions, answer)
	}
}

// A halt whose record cannot be read (written by another version, or
// damaged) is still a halt, and still one an approver can lift with its
// confirmation: never a desk that nobody can resume. The group is not
// told of it again and again meanwhile.
func TestHostileUnreadableHaltCanStillBeResumed(t *testing.T) {
	t.Parallel()
	s := mustStartHalting(t)
	if err := s.main.Store.Client().HSet(t.Context(), s.main.Store.Key("desk", "main"), "halt", `{"rule":"max_daily_loss","at":12}`, "paused", "1").Err(); err != nil {
		t.Fatal(err)
	}
	st := mustDeskStatus(t, s, "main")
	if st.Halt == nil || !st.Paused {
		t.Fatalf("an unreadable halt reads as %+v; want a halt", st)
	}
	if err := s.main.Store.SetPaused(t.Context(), "main", false, deskbot.AuditEntry{Action: "resume", Desk: "main", By: "Asha", At: time.Now()}); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("the pause switch on an unreadable halt: %v; want ECONFLICT", err)
	}
	time.Sleep(500 * time.Millisecond) // five of the watcher's checks
	told := 0
	for _, m := range s.tg.BotMessages(groupID) {
		if strings.Contains(m.Plain, "halted at") {
			told++
		}
	}
	if told > 1 {
		t.Errorf("the group was told of the unreadable halt %d times in half a second", told)
	}
	s.tg.InjectText(asha, groupID, "/resume main", 0)
	ask := s.mustBotMessage(t, "the confirmation of the resume", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Resume it?") || strings.Contains(m.Plain, "could not")
	})
	if !strings.Contains(ask.Plain, "could not be read") {
		t.Errorf("the confirmation does not say the halt's record could not be read: %q", ask.Plain)
	}
	// Resumed, the desk reads the notices its halt left it: its model
	// answers them.
	s.model.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("Noted.") })
	if got := s.tapAnswer(t, asha, ask, button(t, ask, "Yes, resume main")); got != "Resumed main." {
		t.Errorf("the approver's tap answered %q", got)
	}
	if st := mustDeskStatus(t, s, "main"); st.Halt != nil || st.Paused {
		t.Errorf("after the confirmed resume: %+v", st)
	}
}

// An approver's allow on the desks page of a request its desk held before
// the halt: refused in words, and nothing runs.
func TestHostileDesksPageAllowOfAHaltedDesksRequest(t *testing.T) {
	t.Parallel()
	s := mustStartHalting(t)
	s.orderModel(t)
	_, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	h := s.mustHalt(t, "main")
	for _, d := range []string{"allow_once", "always_allow"} {
		// An always allow confirms the grant's terms, as the page's
		// confirmation does.
		_, terms, _, _ := s.main.Gate.GrantTerms(t.Context(), id)
		code, body, _ := s.pageCall(t, "POST", "a/decide", initDataFor(asha, time.Now()), url.Values{"id": {id}, "decision": {d}, "terms": {terms}})
		if code != 409 || !strings.Contains(body, "halted by a risk rule") {
			t.Errorf("the page's %s of a halted desk's request answered %d %q; want 409 saying it is halted", d, code, body)
		}
	}
	time.Sleep(300 * time.Millisecond) // a run would be recorded by now
	if n := s.runs(t, id); n != 0 {
		t.Errorf("a halted desk's request ran %d times", n)
	}
	grants, err := s.main.Gate.Grants(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 0 {
		t.Errorf("an always-allow of a halted desk left grants: %+v", grants)
	}
	s.mustStillHalted(t, "main", h, "the page's allows")
}

// Two approvers tap "Yes, resume" at once: the desk is resumed once, and
// the other is told the halt is no longer in force.
func TestHostileTwoApproversResumeOnce(t *testing.T) {
	t.Parallel()
	s := mustStartHalting(t)
	s.mustHalt(t, "main")
	s.tg.InjectText(asha, groupID, "/resume main", 0)
	ask := s.mustBotMessage(t, "the confirmation", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "Resume it?") })
	data := button(t, ask, "Yes, resume main")
	// Resumed, the desk reads the notices its halt left it: its model
	// answers them.
	s.model.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("Noted.") })
	qs := []string{s.tg.InjectCallback(asha, groupID, ask.ID, data), s.tg.InjectCallback(ravi, groupID, ask.ID, data)}
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool {
		for _, q := range qs {
			if _, _, ok := srv.CallbackAnswer(q); !ok {
				return false
			}
		}
		return true
	})
	resumed := 0
	for _, q := range qs {
		text, _, _ := s.tg.CallbackAnswer(q)
		switch {
		case text == "Resumed main.":
			resumed++
		case !strings.Contains(text, "no longer in force"):
			t.Errorf("a tap answered %q", text)
		}
	}
	if resumed != 1 {
		t.Errorf("taps answered resumed: %d, want 1", resumed)
	}
	trail, err := s.main.Store.AuditTrail(t.Context(), 500)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range trail {
		if e.Action == "resume" && e.Desk == "main" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("resumes audited: %d, want 1", n)
	}
	if st := mustDeskStatus(t, s, "main"); st.Halt != nil || st.Paused {
		t.Errorf("after the taps: %+v", st)
	}
}

// The desks page offers no Resume on a halted desk: it says which rule
// halted it and that /resume in the chat shows why and asks to confirm.
func TestDesksPageShowsAHaltInsteadOfResume(t *testing.T) {
	t.Parallel()
	s := mustStartHalting(t)
	s.mustHalt(t, "main")
	code, body, _ := s.pageCall(t, "GET", "v/desks", initDataFor(asha, time.Now()), nil)
	if code != 200 {
		t.Fatalf("the desks view answered %d %q", code, body)
	}
	card := body[strings.Index(body, `id="desk-main"`):]
	if i := strings.Index(card, `id="desk-fno"`); i > 0 {
		card = card[:i]
	}
	if strings.Contains(card, `data-post="resume"`) || !strings.Contains(card, "Halted by its risk rule max_daily_loss") || !strings.Contains(card, "/resume main") {
		t.Errorf("a halted desk's card on the page:\n%s", card)
	}
}
