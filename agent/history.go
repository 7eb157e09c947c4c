package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// History is kept as two messages per turn: the trigger as the user said it,
// and one assistant message with a compact note of the calls made and the
// final words. Tool messages never enter it, so no bound on the number of
// messages can separate a tool result from the call it answers; a provider
// always receives a valid conversation.

// triggerText is the user message a trigger becomes: what kind of trigger,
// when (India time), how long ago when it is read late, and its text.
func triggerText(tr *deskbot.Trigger, now time.Time) string {
	at := tr.CreatedAt
	if at.IsZero() {
		at = now
	}
	// A trigger read long after it was sent says how long: the model
	// must not act on an old "buy now" as if it were said this minute.
	clock := words.TriggerClock(at) + words.TriggerAge(at, now)
	switch tr.Kind {
	case deskbot.TriggerMessage:
		from := tr.From
		if from == "" {
			from = "the team"
		}
		return clock + "Message from " + from + ":\n" + tr.Text
	case deskbot.TriggerSchedule:
		return clock + "Scheduled task (" + tr.From + "):\n" + tr.Text
	case deskbot.TriggerPermission:
		return clock + "Answer to your permission request:\n" + tr.Text
	case deskbot.TriggerLapse:
		return clock + "Your permission request lapsed:\n" + tr.Text
	}
	return clock + tr.Text
}

func (tl *turnLog) note(c deskbot.ToolCall, r deskbot.ToolResult, held bool) {
	outcome := oneLine(r.Text, 160)
	switch {
	case held:
		tl.held = true
		outcome = "held for the user's permission"
	case r.IsError:
		outcome = "error: " + outcome
	}
	tl.calls = append(tl.calls, fmt.Sprintf("%s %s -> %s", c.Name, oneLine(argtext.Canonical(c.Arguments), 160), outcome))
}

// Bounds of what the history keeps per turn, so that twenty turns fit the
// context of a small local model. The turn itself sees everything in full.
const (
	historyCalls = 8    // call notes kept per turn
	historyText  = 2000 // characters kept of a trigger or of the final words
)

// summary is the assistant message the history keeps for the turn.
func (tl *turnLog) summary() string {
	var b strings.Builder
	if n := len(tl.calls); n > 0 {
		calls := tl.calls
		if n > historyCalls {
			calls = append(calls[:historyCalls:historyCalls], fmt.Sprintf("and %d more", n-historyCalls))
		}
		b.WriteString(words.ToolsNote + strings.Join(calls, "; ") + ")\n")
	}
	switch {
	case tl.capped:
		b.WriteString(words.CappedNote)
	case tl.final != "":
		b.WriteString(argtext.Clip(tl.final, historyText, "… (cut)"))
	default:
		b.WriteString(words.NoReplyNote)
	}
	return strings.TrimSpace(b.String())
}

// cleanHistory makes a stored history safe to send: it starts with a user
// message, has no tool traffic, and alternates roles (consecutive messages of
// one role are merged), as the strictest provider requires.
func cleanHistory(hist []deskbot.Message) []deskbot.Message {
	var out []deskbot.Message
	for _, m := range hist {
		if (m.Role != "user" && m.Role != "assistant") || len(m.ToolCalls) > 0 || strings.TrimSpace(m.Content) == "" {
			continue
		}
		if len(out) == 0 && m.Role != "user" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content += "\n\n" + m.Content
			continue
		}
		out = append(out, deskbot.Message{Role: m.Role, Content: m.Content})
	}
	// The trigger comes next as a user message: end on the assistant.
	if n := len(out); n > 0 && out[n-1].Role == "user" {
		out = out[:n-1]
	}
	return out
}

// oneLine squeezes s onto one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	return argtext.Clip(s, n, "…")
}
