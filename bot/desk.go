package bot

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
	tele "gopkg.in/telebot.v3"
)

// How much of a desk /desk shows, so that one desk reads on a phone.
const (
	deskTrades    = 20  // today's last fills
	deskHeld      = 5   // held calls listed
	deskCalls     = 5   // the last turn's last tool calls
	deskCallRunes = 200 // one call with its result
	deskTrigger   = 300 // what started the last turn
	deskWords     = 600 // the desk's last words
)

// onDesk shows one desk in full: what /desks shows, then today's trades,
// open orders, held calls, and its last turn with its last tool calls. It
// reads and changes nothing else.
func (b *Bot) onDesk(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	name, _ := word(args(c))
	const usage = "/desk &lt;desk&gt;"
	if name == "" {
		return b.reply(ctx, c, "Usage: "+usage+". Desks: "+b.deskList()+".", nil)
	}
	if !b.desks[name] {
		return b.reply(ctx, c, b.unknownDesk(name, usage), nil)
	}
	parts, err := b.deskDetail(ctx, name)
	if err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not read a desk", err), nil)
	}
	for _, m := range pack(parts, MaxMessage) {
		if err := b.reply(ctx, c, m, nil); err != nil {
			return err
		}
	}
	return nil
}

// tokensLine says what the desk's models spent today (India's day), as its
// turns counted it.
func tokensLine(st deskbot.DeskStatus, now time.Time) string {
	return "Tokens today: " + words.TokensToday(st, now)
}

// deskDetail renders /desk's parts (HTML), each well under a message.
func (b *Bot) deskDetail(ctx context.Context, desk string) ([]string, error) {
	d, err := b.readDesk(ctx, desk)
	if err != nil {
		return nil, err
	}
	open, err := b.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return nil, err
	}
	var held []*deskbot.Request
	for _, r := range open {
		if r.Desk == desk {
			held = append(held, r)
		}
	}
	msgs, err := b.deps.Desks.History(ctx, desk, 2)
	if err != nil {
		return nil, err
	}
	parts := []string{d.head(len(held)) + "\n" + tokensLine(d.status, b.now()) + "\n" + esc(argtext.Clip(d.book(), 1500, "…"))}
	parts = append(parts, tradesPart(d.day)+ordersPart(d), heldPart(held, b.product(desk), b.lastPrices(ctx, held)), turnPart(lastTurnOf(msgs)))
	if b.deps.Watches != nil {
		ws, err := b.deps.Watches.Watches(ctx, desk)
		parts = append(parts, watchesPart(ws, err))
	}
	return parts, nil
}

// watchesPart lists the desk's price watches (words.WatchLine), or says
// they could not be read.
func watchesPart(ws []deskbot.Watch, err error) string {
	switch {
	case err != nil:
		return "<b>Price watches</b>: not known (they could not be read)."
	case len(ws) == 0:
		return "<b>Price watches</b>: none."
	}
	s := fmt.Sprintf("<b>Price watches</b> (%d):", len(ws))
	for _, w := range ws {
		s += "\n" + esc(words.WatchLine(w))
	}
	return s
}

// tradesPart lists today's fills.
func tradesPart(d day) string {
	var sb strings.Builder
	switch {
	case !d.known:
		sb.WriteString("<b>Trades today</b>: not known (no trade journal to read).")
	case len(d.trades) == 0:
		sb.WriteString("<b>Trades today</b>: none.")
	default:
		fmt.Fprintf(&sb, "<b>Trades today</b> (%d", len(d.trades))
		if d.partial {
			sb.WriteString(", from the fills the journal still keeps")
		}
		sb.WriteString("):")
		shown := d.trades
		if len(shown) > deskTrades {
			fmt.Fprintf(&sb, "\n(%d earlier not shown)", len(shown)-deskTrades)
			shown = shown[len(shown)-deskTrades:]
		}
		for _, t := range shown {
			sb.WriteString("\n" + esc(words.TradeLine(t.Fill, t.At)))
		}
	}
	return sb.String()
}

// ordersPart lists the desk's orders still open at the broker (resting, or
// sent and not yet answered), a line each as get_orders says them, or says
// they could not be read.
func ordersPart(d deskRead) string {
	if d.ordersErr != nil {
		return "\n<b>Open orders</b>: not known (the broker's orders could not be read)."
	}
	var open []deskbot.PlacedOrder
	for _, po := range d.orders {
		if po.Open() {
			open = append(open, po)
		}
	}
	if len(open) == 0 {
		return "\n<b>Open orders</b>: none."
	}
	s := fmt.Sprintf("\n<b>Open orders</b> (%d):", len(open))
	for i, po := range open {
		if i == deskTrades {
			return s + fmt.Sprintf("\n…and %d more", len(open)-deskTrades)
		}
		s += "\n" + esc(argtext.Show(words.PlacedLine(po)))
	}
	return s
}

// heldPart lists the desk's calls waiting for a decision, an order with
// the desk's product where it names none, one at market valued at last.
func heldPart(held []*deskbot.Request, product string, last map[string]float64) string {
	if len(held) == 0 {
		return "<b>Held calls</b>: none waiting."
	}
	s := fmt.Sprintf("<b>Held calls</b> (%d; /requests shows their buttons):", len(held))
	for i, r := range held {
		if i == deskHeld {
			return s + fmt.Sprintf("\n…and %d more", len(held)-deskHeld)
		}
		s += "\n" + requestSummary(r, product, last) + " (request <code>" + esc(words.ShortID(r.ID)) + "</code>)"
	}
	return s
}

// lastTurn is a desk's last turn as its history keeps it: the trigger as
// the desk was told it, then one note of the calls it made and its words.
type lastTurn struct {
	found   bool
	at      string   // the trigger's India time, "14:00"; "" when unknown
	trigger string   // what started the turn
	calls   []string // "tool args -> outcome", oldest first
	words   string
}

// The history's wording (words.ToolsNote, words.TriggerClock): the trigger
// opens with its India time, the turn's note with the calls it made.
var (
	triggerClockRx = regexp.MustCompile(words.TriggerClockPattern)
	// The note that tells the model how old the trigger was: not for people.
	triggerAgeRx = regexp.MustCompile(words.TriggerAgePattern)
	// A call opens with its tool's name and its canonical JSON arguments;
	// "and 3 more" stands for the calls the note left out.
	callStartRx = regexp.MustCompile(`^([A-Za-z0-9_.-]+ (\{|\[|null -> )|and \d+ more$)`)
)

// lastTurnOf reads the last turn from the end of a desk's history, in
// people's words: the notes the service wrote there for the model (how old
// the trigger was, a turn that ended without words) are left out or said
// as people say them.
func lastTurnOf(msgs []deskbot.Message) lastTurn {
	var t lastTurn
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role != "assistant" {
		i--
	}
	if i < 0 {
		return t
	}
	t.found = true
	note := msgs[i].Content
	if rest, ok := strings.CutPrefix(note, words.ToolsNote); ok {
		if calls, final, ok := strings.Cut(rest, ")\n"); ok {
			t.calls, note = splitCalls(calls), final
		}
	}
	switch note {
	case words.NoReplyNote:
		note = words.NoReplyWords
	case words.CappedNote:
		note = words.CappedWords
	}
	t.words = note
	if i > 0 && msgs[i-1].Role == "user" {
		trig := msgs[i-1].Content
		if m := triggerClockRx.FindStringSubmatch(trig); m != nil {
			t.at, trig = m[1], trig[len(m[0]):]
		}
		if m := triggerAgeRx.FindString(trig); m != "" {
			trig = trig[len(m):]
		}
		t.trigger = trig
	}
	return t
}

// splitCalls splits the note's "; "-joined calls. A call's arguments or
// result may hold "; " too, so a piece that does not open like a call
// (callStartRx) belongs to the one before it.
func splitCalls(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "; ") {
		if len(out) > 0 && !callStartRx.MatchString(p) {
			out[len(out)-1] += "; " + p
			continue
		}
		out = append(out, p)
	}
	return out
}

// turnPart renders the last turn: when and why, the last calls with their
// results clipped, and the desk's last words. The desk's and the model's
// text is shown as prose, escaped.
func turnPart(t lastTurn) string {
	if !t.found {
		return "<b>Last turn</b>: none yet."
	}
	prose := func(s string, n int) string {
		return esc(showProse(argtext.Clip(strings.Join(strings.Fields(s), " "), n, "…")))
	}
	s := "<b>Last turn</b>"
	if t.at != "" {
		s += ", for a trigger at " + html.EscapeString(t.at) + " IST"
	}
	s += ":\n" + prose(t.trigger, deskTrigger)
	if len(t.calls) > 0 {
		calls := t.calls
		s += fmt.Sprintf("\n<b>Its tool calls</b> (%d", len(calls))
		if len(calls) > deskCalls {
			s += fmt.Sprintf(", the last %d", deskCalls)
			calls = calls[len(calls)-deskCalls:]
		}
		s += "):"
		for _, c := range calls {
			s += "\n• " + prose(c, deskCallRunes)
		}
	}
	return s + "\n<b>Its last words</b>: " + prose(t.words, deskWords)
}
