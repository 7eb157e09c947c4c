package gate

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// The entry for a desk's call: every call a desk makes is asked of the
// gate before it runs, and the gate answers run, held or refused, with the
// desk's hard limits, its four-eyes policy, the standing grants and the
// hold inside.

// Ask answers desk's call, made in the turn of trigger triggerID:
//   - refused when it passes the desk's hard limits (Config.Limits; the
//     refusal is audited there), or when it is guarded and cannot be shown
//     to an approver as it would run (arguments longer than
//     argtext.MaxArguments as shown, or one argument given twice), or
//     its arguments as sent are more than a request keeps
//     (argtext.MaxRawArguments);
//   - held when it is guarded and no standing grant covers it (Permission):
//     beforeHold runs first (the desk publishes the call's event, so the
//     request never precedes its call), then Hold;
//   - else it runs, under the grant that covers it, if any.
//
// An error means the answer is unknown (Redis): the call must not run.
// Whatever the answer, the caller calls the verdict's Release once the
// call is held or has run.
func (g *Gate) Ask(ctx context.Context, desk, triggerID string, call deskbot.ToolCall, beforeHold func()) (deskbot.Verdict, error) {
	v := deskbot.Verdict{Release: func() {}}
	// Every call, guarded or not: New built no gate without limits.
	release, refusal := g.cfg.Limits.Check(ctx, desk, call)
	if release == nil {
		g.log.InfoContext(ctx, "call refused: hard limit", "desk", desk, "trigger", triggerID, "tool", call.Name, "why", refusal)
		return refused(v, deskbot.ToolResult{IsError: true, Text: refusal, Limit: true}), nil
	}
	v.Release = release
	need, under, err := g.Permission(ctx, desk, call)
	if err != nil {
		return v, err
	}
	if !need {
		v.Grant = under
		return v, nil
	}
	// An approver must see the whole call before Allow is offered; a call
	// that cannot be shown whole never becomes a request.
	if n := argtext.Length(argtext.Arguments(call.Arguments)); n > argtext.MaxArguments {
		return g.refuseShown(ctx, v, desk, call, words.TooLongToShowMessage(call.Name, n)), nil
	}
	// Nor on a call that names one argument twice: the approver would read
	// both copies and could not tell which one runs.
	if msg := sameKeyTwice(call.Name, call.Arguments); msg != "" {
		return g.refuseShown(ctx, v, desk, call, msg), nil
	}
	// Nor on one padded (whitespace the approver is not shown) past what a
	// request keeps: refused here, before its call's event is published.
	if msg := tooLargeToKeep(call.Name, call.Arguments); msg != "" {
		return g.refuseShown(ctx, v, desk, call, msg), nil
	}
	if beforeHold != nil {
		beforeHold()
	}
	req, res, err := g.Hold(ctx, desk, triggerID, call)
	if deskbot.ErrorCode(err) == deskbot.EINVALID {
		// Hold's own guarantee (it cannot be shown whole): its words are
		// for the model, and nothing is wrong with the service.
		return g.refuseShown(ctx, v, desk, call, deskbot.ErrorMessage(err)), nil
	} else if err != nil {
		return v, err
	}
	// Said in a field, not left to the gate's wording: a turn replayed
	// from memory knows the desk waits from this alone.
	res.Held = true
	v.Held, v.Result = req, res
	return v, nil
}

func refused(v deskbot.Verdict, res deskbot.ToolResult) deskbot.Verdict {
	v.Refused, v.Result = true, res
	return v
}

func (g *Gate) refuseShown(ctx context.Context, v deskbot.Verdict, desk string, call deskbot.ToolCall, why string) deskbot.Verdict {
	g.log.InfoContext(ctx, "call refused: arguments cannot be shown as they run", "desk", desk, "tool", call.Name, "why", why)
	return refused(v, deskbot.ToolResult{IsError: true, Text: why})
}

// sameKeyTwice returns a message for the model when an object anywhere in
// args has two keys that are equal ignoring case (argtext.RepeatedKey), and
// "" otherwise: which copy runs is not what the approver can see, so such a
// call is refused before it is held.
func sameKeyTwice(tool string, args json.RawMessage) string {
	first, again, found := argtext.RepeatedKey(args)
	if !found {
		return ""
	}
	return "The arguments of " + tool + " give " + strconv.QuoteToASCII(first) + " more than once (also as " +
		strconv.QuoteToASCII(again) + "), so the user could not tell which one runs; nothing was run and no request was sent. " +
		"Give each argument once, spelled as the tool's schema spells it."
}
