package bot

import (
	"context"
	"slices"
	"strings"

	"github.com/deskbot/deskbot"
)

// What TELEGRAM_QUIET may list: the kinds of message the group receives
// without a notification sound. Held calls, reminders and halts are not
// among them: they always sound, since a person must act on them.
const (
	// QuietDeskMessages: what desks say, their pictures included.
	QuietDeskMessages = "desk_messages"
	// QuietFills: the outcome of an allowed held call (running, then an
	// order's fill or a flatten's closing fills) when it comes as a
	// message of its own; the edit of the request's message that usually
	// shows it never sounds.
	QuietFills = "fills"
	// QuietReports: the day's report at REPORT_AT.
	QuietReports = "reports"
)

// QuietNames are the names TELEGRAM_QUIET may list, in the order the
// documentation gives them.
var QuietNames = []string{QuietDeskMessages, QuietFills, QuietReports}

// Quiet is what the group receives without a notification sound
// (TELEGRAM_QUIET). The zero value sounds for everything.
type Quiet struct {
	DeskMessages bool
	Fills        bool
	Reports      bool
}

// ParseQuiet reads TELEGRAM_QUIET's list. Spaces around a name and empty
// entries are ignored; an unknown name is refused, so a typo does not
// leave the group ringing while the operator thinks it is quiet.
func ParseQuiet(names []string) (Quiet, error) {
	var q Quiet
	for _, n := range names {
		switch strings.TrimSpace(n) {
		case "":
		case QuietDeskMessages:
			q.DeskMessages = true
		case QuietFills:
			q.Fills = true
		case QuietReports:
			q.Reports = true
		default:
			return Quiet{}, deskbot.Errorf(deskbot.EINVALID, "TELEGRAM_QUIET: %q is not a kind of message; it lists %s (held calls, reminders and halts always notify)",
				strings.TrimSpace(n), strings.Join(QuietNames, ", "))
		}
	}
	return q, nil
}

type silentKey struct{}

// withSilent returns ctx whose sends the Sender makes without a
// notification sound (disable_notification), when quiet is true.
func withSilent(ctx context.Context, quiet bool) context.Context {
	if !quiet {
		return ctx
	}
	return context.WithValue(ctx, silentKey{}, true)
}

// silentOf reports whether a send in ctx goes without a sound. A held call
// or a reminder (their lanes) always sounds, whatever ctx says.
func silentOf(ctx context.Context) bool {
	s, _ := ctx.Value(silentKey{}).(bool)
	l := laneOf(ctx)
	return s && l != LaneRequest && l != LaneRemind
}

// allowedStates are the states of a request whose call was allowed: its
// outcome says it is running, then shows the fill (or why there was none).
var allowedStates = []deskbot.RequestState{deskbot.StateRunning, deskbot.StateRan, deskbot.StateFailed}

// isFill reports whether r's outcome is an allowed call's (QuietFills).
func isFill(r *deskbot.Request) bool { return r != nil && slices.Contains(allowedStates, r.State) }
