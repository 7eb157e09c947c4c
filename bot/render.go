package bot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
)

// Everything here renders for Telegram's HTML parse mode. Text that comes
// from a desk, a model or a person is escaped with esc, so it arrives as
// text and cannot add markup; only the literal tags written here are markup.

// Lengths, in runes of plain text, chosen so that a request with its outcome
// always fits one message (4,096).
const (
	argValueRunes = 200  // one string value in the arguments
	argsRunes     = 2000 // the arguments as a whole
	resultRunes   = 500  // the start of a call's result
	reasonRunes   = 600  // a person's reason for a denial
	maxDeskParts  = 5    // a longer desk message is trimmed with a note
)

// esc escapes untrusted text; invalid UTF-8, which Telegram refuses, becomes U+FFFD.
func esc(s string) string { return html.EscapeString(strings.ToValidUTF8(s, "\uFFFD")) }

func ist(t time.Time) string { return deskbot.Clock(t) + " IST" }

// RenderRequest renders a held call and its keyboard: exactly one row,
// Allow once, Always allow, Deny. The markup is new on every call, because
// telebot rewrites the markup it is given.
func RenderRequest(r *deskbot.Request) (string, *tele.ReplyMarkup) {
	kb := &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{
		{Unique: ActAllowOnce, Data: r.ID, Text: "Allow once"},
		{Unique: ActAlwaysAllow, Data: r.ID, Text: "Always allow"},
		{Unique: ActDeny, Data: r.ID, Text: "Deny"},
	}}}
	return requestText(r) + "\n\nLapses at " + ist(r.ExpiresAt) + ".", kb
}

func requestText(r *deskbot.Request) string {
	return fmt.Sprintf("🔐 <b>%s</b> wants to run <b>%s</b>\n<pre>%s</pre>\nRequest <code>%s</code>",
		esc(r.Desk), esc(r.Content.ToolName), esc(compactArgs(r.Content.Arguments)), esc(r.ID))
}

// RenderOutcome renders a request after its decision or lapse: the request
// (no keyboard goes with it) and what became of it.
func RenderOutcome(r *deskbot.Request) string {
	return requestText(r) + "\n\n" + outcomeText(r)
}

func outcomeText(r *deskbot.Request) string {
	by := esc(r.DecidedBy) + " at " + ist(r.DecidedAt)
	decided := map[deskbot.Decision]string{
		deskbot.AllowOnce: "Allowed once", deskbot.AlwaysAllow: "Always allowed", deskbot.Deny: "Denied",
	}[r.Decision]
	switch r.State {
	case deskbot.StateOpen:
		return "Waiting for a decision; lapses at " + ist(r.ExpiresAt) + "."
	case deskbot.StateLapsed:
		return "⌛ Lapsed at " + ist(r.ExpiresAt) + ", not run."
	case deskbot.StateDenied:
		s := "❌ Denied by " + by + "."
		if r.Reason != "" {
			s += "\nReason: " + esc(trimRunes(r.Reason, reasonRunes))
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
		return verdict + ":\n<pre>" + esc(trimRunes(r.Result.Text, resultRunes)) + "</pre>"
	}
	return "State: " + esc(string(r.State)) + "."
}

// compactArgs renders a call's arguments as one line of JSON with sorted
// keys, long strings trimmed. Numbers keep their exact text.
func compactArgs(raw json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader([]byte(deskbot.CanonicalArguments(raw))))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return trimRunes(string(raw), argsRunes) // not JSON: shown as it came
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // escaping is esc's job; people should read '<' not \u003c
	if err := enc.Encode(trimValues(v)); err != nil {
		return trimRunes(string(raw), argsRunes)
	}
	return trimRunes(strings.TrimSpace(buf.String()), argsRunes)
}

func trimValues(v any) any {
	switch t := v.(type) {
	case string:
		return trimRunes(t, argValueRunes)
	case map[string]any:
		for k, x := range t {
			t[k] = trimValues(x)
		}
	case []any:
		for i, x := range t {
			t[i] = trimValues(x)
		}
	}
	return v
}

// RenderDeskMessage renders a desk's words in one message, labelled with the
// desk's name. It may exceed Telegram's limit; RenderDeskMessages splits.
func RenderDeskMessage(desk, text string) string {
	return "💬 <b>" + esc(desk) + "</b>\n" + esc(text)
}

// RenderDeskMessages renders a desk's words as messages that each fit
// Telegram's limit: whole when it fits, else in numbered parts ("1/3"), cut
// at paragraph, line or word breaks. Past maxDeskParts parts the rest is
// dropped with a note saying how much, so a runaway model cannot flood the
// group for an hour.
func RenderDeskMessages(desk, text string) []string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if strings.TrimSpace(text) == "" {
		text = "(no text)"
	}
	if one := RenderDeskMessage(desk, text); utf16Len(one) <= MaxMessage {
		return []string{one}
	}
	head := func(i, n int) string { return fmt.Sprintf("💬 <b>%s</b> (%d/%d)\n", esc(desk), i, n) }
	const note = "\n\n(trimmed: 1234567890 more characters not shown)"
	room := MaxMessage - utf16Len(head(99, 99)) - len(note)
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
	return "⚠️ <b>" + esc(desk) + "</b>: " + esc(trimRunes(text, 1000))
}
