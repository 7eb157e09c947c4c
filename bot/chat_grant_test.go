package bot_test

import (
	"github.com/deskbot/deskbot/broker"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/words"
)

// Always allow on an order grants nothing until confirmed: the chat says
// what the grant would cover (desk, tool, cap, end) under buttons of its
// own, Cancel gives none, and the confirmation gives exactly what it said.
func TestAlwaysAllowAsksToConfirmTheGrant(t *testing.T) {
	t.Parallel()
	h := mustE2E(t) // GRANT_MAX_NOTIONAL ₹50,000, GRANT_TTL 2h; 14:00 IST
	ctx := t.Context()
	r, m := h.mustHoldShown("alpha")
	if got, _ := h.answer(h.tap(asha, m, "Always allow")); got != "Confirm the grant below." {
		t.Fatalf("Always allow answered %q", got)
	}
	c := h.grantConfirm()
	want := "Always allow place_order for desk alpha?\n" +
		"alpha may then call place_order without asking for orders up to ₹50,000.00 of exposure each and over the India day, until 16:00 IST.\n" +
		"Larger orders are still held. Confirming also runs this call now."
	if c.Plain != want {
		t.Errorf("confirmation:\n%s\nwant:\n%s", c.Plain, want)
	}
	if got := c.Labels(); !slicesEqual(got, []string{"⚠️ Grant until 16:00 IST", "Cancel"}) {
		t.Errorf("confirmation buttons = %q", got)
	}
	if gs, _ := h.gate.Grants(ctx); len(gs) != 0 || h.tool.Runs() != 0 {
		t.Fatalf("asking to confirm granted %+v and ran %d", gs, h.tool.Runs())
	}

	if got, _ := h.answer(h.tap(asha, c, "Cancel")); got != "No grant given." {
		t.Errorf("Cancel answered %q", got)
	}
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == c.ID && len(x.Keyboard) == 0 && strings.HasPrefix(x.Plain, "No grant given")
	})
	if cur, _ := h.gate.Request(ctx, r.ID); cur.State != deskbot.StateOpen {
		t.Fatalf("cancelled confirmation left the request %s", cur.State)
	}

	if got := h.grant(ravi, m); got != "Always allowed; running…" {
		t.Fatalf("confirmed grant answered %q", got)
	}
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m.ID && strings.Contains(x.Plain, "Always allowed by Ravi")
	})
	gs, err := h.gate.Grants(ctx)
	if err != nil || len(gs) != 1 {
		t.Fatalf("grants = %+v (%v), want one", gs, err)
	}
	if g := gs[0]; g.Limit != 50000 || !g.ExpiresAt.Equal(h.clock.Now().Add(2*time.Hour)) {
		t.Errorf("grant covers ₹%v until %v; want ₹50,000 until 2h from now", g.Limit, g.ExpiresAt)
	}
	grants := h.replyTo(groupID, h.say(ravi, "/grants", 0))
	if want := "for orders up to ₹50,000.00 notional; granted by Ravi (102) at 14:00 IST, until 16:00 IST"; !strings.Contains(grants.Plain, want) {
		t.Errorf("/grants:\n%s\nwant %q", grants.Plain, want)
	}
}

// A stranger cannot confirm a grant: the confirmation's buttons are an
// approver's, as the request's are.
func TestStrangerCannotConfirmAGrant(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	_, m := h.mustHoldShown("alpha")
	h.answer(h.tap(asha, m, "Always allow"))
	c := h.grantConfirm()
	if got, alert := h.answer(h.tap(stranger, c, c.Labels()[0])); got != "Only approvers can decide; nothing was changed." || !alert {
		t.Errorf("a stranger's confirmation answered %q", got)
	}
	if gs, _ := h.gate.Grants(t.Context()); len(gs) != 0 {
		t.Errorf("a stranger's tap granted %+v", gs)
	}
}

// A call run under a grant is told in the chat, with whose grant it was
// and what it covers; the tool's answer, written for the model, is not.
func TestCallRunUnderAGrantIsToldInTheChat(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	at := h.clock.Now().Add(-30 * time.Minute)
	g := &deskbot.Grant{Desk: "alpha", Tool: "place_order", GrantedBy: "Ravi (102)", GrantedAt: at, ExpiresAt: at.Add(2 * time.Hour), Limit: 50000}
	call := deskbot.ToolCall{ID: "c1", Name: "place_order", Arguments: []byte(`{"symbol":"NSE:INFY","side":"buy","quantity":10,"order_type":"LIMIT","price":1604.35}`)}
	res := deskbot.ToolResult{Text: "Order 1 placed. End this turn now."}
	if err := h.st.Publish(t.Context(), deskbot.Event{Kind: deskbot.EventToolResult, Desk: "alpha", Time: h.clock.Now(), Call: &call, Result: &res, Grant: g}); err != nil {
		t.Fatal(err)
	}
	m := h.waitMessage(func(x telegramtest.Message) bool { return strings.Contains(x.Plain, "grant") })
	want := "alpha: BUY 10 INFY LIMIT @ 1,604.35 ran under Ravi's grant of 13:30 (orders up to ₹50,000.00 of exposure each and over the India day, until 15:30 IST)."
	if m.Plain != want {
		t.Errorf("chat:\n%s\nwant:\n%s", m.Plain, want)
	}
}

// An order run under a grant that fills at once is told with its fill,
// as an allowed held order's outcome is (words.OrderOutcome): the fill
// reaches the chat on one path whichever way the order was allowed.
func TestOrderUnderAGrantIsToldWithItsFill(t *testing.T) {
	h := mustE2E(t)
	at := h.clock.Now().Add(-30 * time.Minute)
	g := &deskbot.Grant{Desk: "alpha", Tool: "place_order", GrantedBy: "Ravi (102)", GrantedAt: at, ExpiresAt: at.Add(2 * time.Hour), Limit: 50000}
	call := deskbot.ToolCall{ID: "c1", Name: "place_order", Arguments: []byte(`{"symbol":"NSE:INFY","side":"buy","quantity":10,"order_type":"LIMIT","price":1604.35}`)}
	var place deskbot.Tool
	for _, tl := range broker.Tools(h.broker, nil, nil) {
		if tl.Name() == deskbot.ToolPlaceOrder {
			place = tl
		}
	}
	// The paper broker's own answer to the desk: filled at once.
	res, err := place.Run(deskbot.WithCallKey(t.Context(), "c1"), "alpha", call.Arguments)
	if err != nil || res.IsError {
		t.Fatalf("place_order: %+v, %v", res, err)
	}
	if err := h.st.Publish(t.Context(), deskbot.Event{Kind: deskbot.EventToolResult, Desk: "alpha", Time: h.clock.Now(), Call: &call, Result: &res, Grant: g}); err != nil {
		t.Fatal(err)
	}
	m := h.waitMessage(func(x telegramtest.Message) bool { return strings.Contains(x.Plain, "grant") })
	head := "alpha: BUY 10 INFY LIMIT @ 1,604.35 ran under Ravi's grant of 13:30 (orders up to ₹50,000.00 of exposure each and over the India day, until 15:30 IST). Ran: order "
	if !strings.HasPrefix(m.Plain, head) || !strings.HasSuffix(m.Plain, " · complete 10 @ 1,604.35 avg.") {
		t.Errorf("chat:\n%s\nwant:\n%s… · complete 10 @ 1,604.35 avg.", m.Plain, head)
	}
}

// A grant's confirmation carries the terms it showed, and the gate checks
// them: a confirmation forged without them (the form of a tap that never
// asked), or with terms other than the ones the gate would grant now,
// grants nothing, runs nothing and says why; the one the chat sent still
// gives what it said.
func TestForgedGrantConfirmationChangesNothing(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	r, m := h.mustHoldShown("alpha")
	h.answer(h.tap(asha, m, "Always allow"))
	c := h.grantConfirm()
	for _, tt := range []struct{ name, data, want string }{
		{"without the terms", bot.CallbackData(bot.ActGrantConfirm, r.ID), "Sorry, I don't recognise that button, so nothing was done."},
		{"with other terms", bot.CallbackData(bot.ActGrantConfirm, r.ID+":0123456789ab"), words.GrantTermsChanged},
	} {
		if got, _ := h.answer(h.tg.InjectCallback(asha, groupID, c.ID, tt.data)); got != tt.want {
			t.Errorf("a confirmation %s answered %q; want %q", tt.name, got, tt.want)
		}
		if gs, _ := h.gate.Grants(ctx); len(gs) != 0 || h.tool.Runs() != 0 {
			t.Fatalf("a confirmation %s granted %+v and ran %d", tt.name, gs, h.tool.Runs())
		}
		if cur, _ := h.gate.Request(ctx, r.ID); cur.State != deskbot.StateOpen {
			t.Fatalf("a confirmation %s left the request %s", tt.name, cur.State)
		}
	}
	if got, _ := h.answer(h.tap(asha, c, c.Labels()[0])); got != "Always allowed; running…" {
		t.Fatalf("the chat's own confirmation answered %q", got)
	}
	if gs, err := h.gate.Grants(ctx); err != nil || len(gs) != 1 || gs[0].Limit != 50000 {
		t.Errorf("grants = %+v (%v); want the one confirmed", gs, err)
	}
}

// /grants says when each grant ends, and a grant with no end (GRANT_TTL 0)
// that it lasts until revoked.
func TestGrantsSayWhenEachEnds(t *testing.T) {
	t.Parallel()
	h := mustE2E(t) // 14:00 IST
	now := h.clock.Now()
	for _, g := range []deskbot.Grant{
		{Desk: "alpha", Tool: "place_order", GrantedBy: "Ravi (102)", GrantedAt: now},
		{Desk: "beta", Tool: "place_order", GrantedBy: "Asha (101)", GrantedAt: now, ExpiresAt: now.Add(2 * time.Hour), Limit: 50000},
	} {
		if err := h.st.PutGrant(t.Context(), g, deskbot.AuditEntry{Action: "grant", Desk: g.Desk, Tool: g.Tool, By: g.GrantedBy, At: now}); err != nil {
			t.Fatal(err)
		}
	}
	grants := h.replyTo(groupID, h.say(ravi, "/grants", 0))
	for _, want := range []string{
		"alpha may use place_order without asking; granted by Ravi (102) at 14:00 IST, until revoked\n",
		"beta may use place_order without asking, for orders up to ₹50,000.00 notional; granted by Asha (101) at 14:00 IST, until 16:00 IST",
	} {
		if !strings.Contains(grants.Plain+"\n", want) {
			t.Errorf("/grants:\n%s\nwant %q", grants.Plain, want)
		}
	}
}
