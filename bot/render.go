package bot

import (
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// Everything here renders for Telegram's HTML parse mode. Text that comes
// from a desk, a model or a person is escaped with esc, so it arrives as
// text and cannot add markup; only the literal tags written here are markup.

// Lengths of what a request message shows besides the call itself.
const (
	resultRunes  = 500 // the start of a call's result
	reasonRunes  = 600 // a person's reason for a denial
	maxDeskParts = 5   // a longer desk message is trimmed with a note
	// outcomeRoom is the room, in UTF-16 units of plain text, kept free in
	// a request message for its outcome, so the edit after a decision fits
	// one message with the call still shown whole. An outcome longer than
	// that (a long result or reason) is cut instead; the call never is.
	outcomeRoom = 900
	// cutArgsRunes is how much of a call too long to show whole is shown,
	// labelled as cut, for the person who denies it.
	cutArgsRunes = 1000
)

// esc escapes untrusted text; invalid UTF-8, which Telegram refuses, becomes U+FFFD.
func esc(s string) string { return html.EscapeString(strings.ToValidUTF8(s, "\uFFFD")) }

func ist(t time.Time) string { return words.Time(t) + " IST" }

// RenderRequest renders a held call and its keyboard: Allow once,
// Always allow, Deny, and under them Why? (ask the desk before deciding).
// The markup is new on every call, because telebot rewrites the markup it
// is given.
//
// What the approver sees is what runs: the call's canonical arguments are
// shown whole, with characters that display as nothing or as something
// else escaped (argtext.Arguments). A call that does not fit one message
// whole is never offered Allow: its row is Deny alone, and the message says
// why. The agent refuses such calls before they are held; this is the
// bot's own guard should one arrive anyway, and decide refuses a forged
// Allow on it.
//
// A broker call also reads in trading words with all they may read
// besides the call (words.Live): the desk's book as it stands (the
// position an order leaves, the desk's P&L, what a flatten would close),
// the desk's product, the last price an order at market is valued at, the
// margin it needs, the order a cancel cancels. What live lacks is left
// out.
func RenderRequest(r *deskbot.Request, live words.Live) (string, *tele.ReplyMarkup) {
	deny := tele.InlineButton{Unique: ActDeny, Data: r.ID, Text: "Deny"}
	text, whole := requestText(r, live)
	lapses := approversLine(r) + "\n\nLapses at " + ist(r.ExpiresAt) + "."
	if !whole {
		return text + lapses, &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{deny}}}
	}
	// An allow or a change names the call it was shown (the count of
	// changes): a tap on a message that showed another call does nothing.
	shown := shownArg(r)
	kb := &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{
		{Unique: ActAllowOnce, Data: shown, Text: "Allow once"},
		{Unique: ActAlwaysAllow, Data: shown, Text: "Always allow"},
		deny,
	}, {
		{Unique: ActWhy, Data: r.ID, Text: "Why?"},
	}}}
	if changeable(r) {
		kb.InlineKeyboard[1] = append(kb.InlineKeyboard[1], tele.InlineButton{Unique: ActChange, Data: shown, Text: "Change…"})
	}
	return text + lapses, kb
}

// approversLine says, while a request is open, how many approvers it needs
// and who has approved ("needs 2 approvers: Asha ✓, one more"); "" when one
// is enough. The message is edited as approvals arrive.
func approversLine(r *deskbot.Request) string {
	if r.Needs() < 2 && r.Role == "" || r.State != deskbot.StateOpen {
		return ""
	}
	s := "\n👥 This call needs " + esc(words.Approvers(r)) + ": "
	for _, a := range r.Approvals {
		s += esc(argtext.Clip(argtext.Show(a.By), 32, "…")) + " ✓, "
	}
	return s + words.More(r)
}

// shownWhole reports whether r's message shows its call whole, so Allow may
// be offered and taken.
func shownWhole(r *deskbot.Request) bool {
	_, whole := requestText(r, words.Live{})
	return whole
}

// requestText renders what a request asks, and reports whether the call is
// shown whole. Whether it is depends on the call alone: the trading words
// above it (which may need the book) take only the room the call leaves, a
// line at a time, so a call is shown whole with or without them.
func requestText(r *deskbot.Request, live words.Live) (text string, whole bool) {
	changed := ""
	if c := r.Changed; c != nil {
		changed = "\n✏️ Changed by <b>" + esc(argtext.Clip(argtext.Show(c.By), 32, "…")) + "</b>: " + esc(argtext.Show(c.What)) + ". This is the call that runs."
	}
	r = asRuns(r)
	head := fmt.Sprintf("🔐 <b>%s</b> wants to run <b>%s</b>", esc(argtext.Show(r.Desk)), esc(argtext.Show(r.Content.ToolName)))
	foot := "\nRequest <code>" + esc(words.ShortID(r.ID)) + "</code>"
	args := argtext.Arguments(r.Content.Arguments)
	call := "\n<pre>" + esc(args) + "</pre>"
	if noArguments(args) {
		// An empty "{}" reads as something missing; the call has nothing
		// more to show than its name.
		head, call = head+" with no arguments", ""
	}
	text = head + call + changed + foot
	if room := MaxMessage - outcomeRoom - plainLen(text); room >= 0 {
		return head + fitLines(tradingWords(r, live), room) + call + changed + foot, true
	}
	n := utf8.RuneCountInString(args)
	// No Allow goes with this text, so names too long to be real are cut
	// rather than let the notice overflow the message.
	head = fmt.Sprintf("🔐 <b>%s</b> wants to run <b>%s</b>", esc(argtext.Clip(argtext.Show(r.Desk), 64, "…")), esc(argtext.Clip(argtext.Show(r.Content.ToolName), 64, "…")))
	return head + fmt.Sprintf("\n⚠️ Its arguments are %d characters long, too long to show here whole, so it cannot be allowed from the chat. Deny it; the desk can make the call shorter.", n) +
		fmt.Sprintf("\nThe first %d characters (cut; not the whole call):\n<pre>", min(n, cutArgsRunes)) + esc(argtext.Clip(args, cutArgsRunes, "…")) + "</pre>" + foot, false
}

// noArguments reports whether a call's shown arguments are none at all:
// an empty object, or null, which tools taking no arguments accept alike.
func noArguments(shown string) bool { return shown == "{}" || shown == "null" }

// fitLines renders plain lines as HTML, one "\n"-led line each, as many
// as fit in room UTF-16 units; a line that does not fit is left out with
// those after it, and "…" says so when it fits.
func fitLines(lines []string, room int) string {
	var sb strings.Builder
	used := 0
	for i, l := range lines {
		n := 1 + argtext.Length(l)
		if used+n > room || (i < len(lines)-1 && used+n+2 > room) {
			if used+2 <= room {
				sb.WriteString("\n…")
			}
			break
		}
		sb.WriteString("\n" + esc(l))
		used += n
	}
	return sb.String()
}

// RenderOutcome renders a request after its decision or lapse: the request
// (no keyboard goes with it), the call still shown whole, and what became of
// it, cut to the room left.
func RenderOutcome(r *deskbot.Request) string { return renderOutcome(r, words.Live{}) }

// renderOutcome is RenderOutcome with what the call's words read besides
// it (the desk's product: an order reads as it traded).
func renderOutcome(r *deskbot.Request, live words.Live) string {
	text, _ := requestText(r, live)
	room := MaxMessage - plainLen(text) - 2
	return text + "\n\n" + outcomeText(r, room)
}

// outcomeText renders what became of a request in at most room UTF-16
// units of plain text: the result or reason is what gets cut. An order
// that ran is told by where it stood when placed (words.OrderOutcome),
// never by the tool's whole answer: the rest is written for the desk's
// model (what to call next, how its fills will reach it).
func outcomeText(r *deskbot.Request, room int) string {
	by := esc(words.DecidedBy(r)) + " at " + ist(r.DecidedAt)
	decided := map[deskbot.Decision]string{
		deskbot.AllowOnce: "Allowed once", deskbot.AlwaysAllow: "Always allowed", deskbot.Deny: "Denied",
	}[r.Decision]
	// fit appends untrusted text to s, cut to at most n runes and to the
	// room left after s and the closing markup.
	fit := func(s, pre, text, post string, n int) string {
		left := room - plainLen(s+pre+post)
		return s + pre + esc(trimUnits(argtext.Clip(text, n, "…"), left)) + post
	}
	switch r.State {
	case deskbot.StateOpen:
		return "Waiting for a decision; lapses at " + ist(r.ExpiresAt) + "."
	case deskbot.StateLapsed:
		return "⌛ Lapsed at " + ist(r.ExpiresAt) + ", not run."
	case deskbot.StateDenied:
		s := "❌ Denied by " + by + "."
		if r.Reason != "" {
			s = fit(s, "\nReason: ", r.Reason, "", reasonRunes)
		}
		return s
	case deskbot.StateRunning:
		return "✅ " + decided + " by " + by + ": running…"
	case deskbot.StateInterrupted:
		return "⚠️ " + decided + " by " + by + ". The service stopped while it ran: outcome unknown. It will not be run again."
	case deskbot.StateRan, deskbot.StateFailed:
		verdict := "✅ " + decided + " by " + by + ". Ran"
		if r.State == deskbot.StateFailed || r.Result != nil && r.Result.IsError {
			verdict = "⚠️ " + decided + " by " + by + ". Failed"
		}
		if r.Result == nil || strings.TrimSpace(r.Result.Text) == "" {
			return verdict + "."
		}
		if r.Content.ToolName == deskbot.ToolPlaceOrder && !r.Result.IsError {
			if o, ok := words.OrderOutcome(r.Result.Text); ok {
				return verdict + ": " + esc(argtext.Show(o)) + "."
			}
			return verdict + "."
		}
		// A result is the desk's output: shown like its arguments. A
		// flatten's result is the record of every position it closed, so
		// it gets all the room the message has, not a glance's worth.
		n := resultRunes
		if r.Content.ToolName == deskbot.ToolFlattenDesk {
			n = MaxMessage
		}
		return fit(verdict, ":\n<pre>", argtext.Show(r.Result.Text), "</pre>", n)
	}
	return "State: " + esc(string(r.State)) + "."
}

// onOneLine is text as it leaves for a phone: every signed amount in
// the words around the markup kept whole (words.OnOneLine: "+₹0.00" never
// wraps after its sign). Only here, where the chat's text goes out: the
// words themselves also reach models, which must not read the joiner.
// What <pre> and <code> show is left as it is, character for character
// (a call's arguments are what runs), and so is text the joiners would
// push past limit (UTF-16 units of plain text): a sign that may wrap is
// better than a message Telegram refuses.
func onOneLine(text string, limit int) string {
	var b strings.Builder
	for rest := text; rest != ""; {
		i, end := verbatim(rest)
		b.WriteString(words.OnOneLine(rest[:i]))
		b.WriteString(rest[i:end])
		rest = rest[end:]
	}
	joined := b.String()
	if len(joined) != len(text) && plainLen(joined) > limit {
		return text
	}
	return joined
}

// verbatim finds the first <pre> or <code> element in HTML text: where it
// starts and where it ends (after its closing tag, or at the text's end).
// With none, both are len(text).
func verbatim(text string) (start, end int) {
	start, closing := len(text), ""
	for _, tag := range []string{"pre", "code"} {
		if i := strings.Index(text, "<"+tag+">"); i >= 0 && i < start {
			start, closing = i, "</"+tag+">"
		}
	}
	if closing == "" {
		return start, start
	}
	if j := strings.Index(text[start:], closing); j >= 0 {
		return start, start + j + len(closing)
	}
	return start, len(text)
}

// tagRx matches the markup written here; escaped text holds no '<'.
var tagRx = regexp.MustCompile(`<[^>]*>`)

// plainLen is how long HTML text is as Telegram counts it: in UTF-16 units
// of the text people read, tags removed and entities decoded.
func plainLen(htmlText string) int {
	return argtext.Length(html.UnescapeString(tagRx.ReplaceAllString(htmlText, "")))
}

// trimUnits shortens s to at most n UTF-16 units, marking a cut with "…".
func trimUnits(s string, n int) string {
	if argtext.Length(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	units := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > n-1 {
			return s[:i] + "…"
		}
		units += w
	}
	return s
}

// showProse makes a desk's words safe to show to people without changing
// how ordinary text reads: bidi controls (which can make text read in
// another order than it is written) and invisible spaces are shown as
// \uXXXX escapes. Joiners that emoji and scripts need are kept.
func showProse(s string) string {
	if !strings.ContainsFunc(s, invisibleInProse) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if invisibleInProse(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func invisibleInProse(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F, // Arabic letter mark, LRM, RLM
		r >= 0x202A && r <= 0x202E,                         // embeddings and overrides
		r >= 0x2066 && r <= 0x2069,                         // isolates
		r == 0x200B, r == 0x2060, r == 0xFEFF, r == 0x180E: // zero-width spaces and joiners that join nothing
		return true
	}
	return false
}

// RenderDeskMessage renders a desk's words in one message, labelled with the
// desk's name. It may exceed Telegram's limit; RenderDeskMessages splits.
func RenderDeskMessage(desk, text string) string {
	return "💬 <b>" + esc(desk) + "</b>\n" + esc(showProse(text))
}

// RenderDeskMessages renders a desk's words as messages that each fit
// Telegram's limit: whole when it fits, else in numbered parts ("1/3"), cut
// at paragraph, line or word breaks. Past maxDeskParts parts the rest is
// dropped with a note saying how much, so a runaway model cannot flood the
// group for an hour.
func RenderDeskMessages(desk, text string) []string {
	text = showProse(strings.ToValidUTF8(text, "\uFFFD"))
	if strings.TrimSpace(text) == "" {
		text = "(no text)"
	}
	if one := RenderDeskMessage(desk, text); argtext.Length(one) <= MaxMessage {
		return []string{one}
	}
	head := func(i, n int) string { return fmt.Sprintf("💬 <b>%s</b> (%d/%d)\n", esc(desk), i, n) }
	const note = "\n\n(trimmed: 1234567890 more characters not shown)"
	room := MaxMessage - argtext.Length(head(99, 99)) - len(note)
	parts := Split(text, room)
	var dropped int
	if len(parts) > maxDeskParts {
		for _, p := range parts[maxDeskParts:] {
			dropped += len([]rune(p))
		}
		parts = parts[:maxDeskParts]
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = head(i+1, len(parts)) + esc(p)
	}
	if dropped > 0 {
		out[len(out)-1] += fmt.Sprintf("\n\n(trimmed: %d more characters not shown)", dropped)
	}
	return out
}

// RenderWarning renders a model_unreachable event.
func RenderWarning(desk, text string) string {
	return "⚠️ <b>" + esc(desk) + "</b>: " + esc(argtext.Clip(showProse(text), 1000, "…"))
}

// tradingWords renders a broker call the way a trader reads it
// (words.TradingWords: the desks page shows the same words).
func tradingWords(r *deskbot.Request, live words.Live) []string {
	return words.TradingWords(r, live)
}

// brokerCall reports whether r's words need the desk's book.
func brokerCall(r *deskbot.Request) bool { return words.NeedsBook(r) || words.NeedsOrders(r) }

// requestSummary renders a request on one line of HTML, for lists and
// digests: the desk, and the call in trading words when it is a broker
// call (an order with product, the desk's where it names none), else its
// tool and the start of its arguments. It needs no book; an order at
// market is valued at its symbol's price in last (Bot.lastPrices), and
// says its notional is not known without one.
//
//	alpha: SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50 · NRML, notional ₹12,25,625.00
func requestSummary(r *deskbot.Request, product string, last map[string]float64) string {
	r = asRuns(r)
	desk := "<b>" + esc(argtext.Clip(argtext.Show(r.Desk), 64, "…")) + "</b>: "
	switch r.Content.ToolName {
	case deskbot.ToolPlaceOrder:
		if o, ok := words.OrderOf(r.Content.Arguments); ok {
			return desk + esc(argtext.Show(words.OrderSummary(o.ForDesk(product), nil, last[o.Symbol])))
		}
	case deskbot.ToolFlattenDesk:
		return desk + "flatten_desk (close every open position)"
	}
	tool := esc(argtext.Clip(argtext.Show(r.Content.ToolName), 64, "…"))
	if args := argtext.Arguments(r.Content.Arguments); !noArguments(args) {
		return desk + tool + " " + esc(argtext.Clip(args, 80, "…"))
	}
	return desk + tool + " (no arguments)"
}

// asRuns is r as the call that runs reads: the approvers' change of the
// desk's arguments, when changed (the desk's content is kept in the store).
func asRuns(r *deskbot.Request) *deskbot.Request {
	if r.Changed == nil {
		return r
	}
	cp := *r
	cp.Content.Arguments = r.Changed.Arguments
	return &cp
}

// shownArg is the callback argument of a button that acts on the call r
// shows: its id, and the count of changes once it was changed ("<id>.2").
func shownArg(r *deskbot.Request) string {
	if r.Changes == 0 {
		return r.ID
	}
	return r.ID + "." + strconv.Itoa(r.Changes)
}

// changeable reports whether r's call may be changed (Change…): an order
// whose arguments read as one.
func changeable(r *deskbot.Request) bool {
	if r.Content.ToolName != deskbot.ToolPlaceOrder {
		return false
	}
	_, err := deskbot.ParseOrder(r.Call().Arguments)
	return err == nil
}
