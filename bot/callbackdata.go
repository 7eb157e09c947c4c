package bot

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
)

// Callback actions: the Unique of each inline button. Short, because the
// whole of "\f<action>|<arg>" must fit in Telegram's 64 bytes.
const (
	ActAllowOnce      = "a1" // arg: request id, and ".<changes>" once changed (ShownCall)
	ActAlwaysAllow    = "aa" // arg: request id, and ".<changes>" once changed
	ActDeny           = "dn" // arg: request id
	ActSkipReason     = "sk" // arg: request id
	ActFlattenAsk     = "fl" // arg: desk or "all"
	ActFlattenConfirm = "fc" // arg: desk or "all"
	ActCancel         = "fx" // arg: desk or "all", or empty
	ActRevoke         = "rv" // arg: "desk/tool"
	ActOpen           = "op" // arg: request id; sends the request's own message
	ActResumeHalted   = "rh" // arg: "desk/<halt's time in ms>": that halt, and no later one
	ActWhy            = "wy" // arg: request id; asks its desk why
	ActChange         = "ch" // arg: request id, and ".<changes>" once changed; asks for a change of the call
	ActLogin          = "li" // arg: "kite"; answers the approver with the broker's login page, as /login
	ActGrantConfirm   = "ag" // arg: as ActAlwaysAllow, then ":<terms' key>"; the confirmed Always allow of a capped tool
	ActGrantCancel    = "gx" // arg: request id; the grant's confirmation cancelled, nothing decided
)

// MaxCallbackData is Telegram's limit on callback data, in bytes.
const MaxCallbackData = 64

// termsSep parts a grant confirmation's call from the key of the terms it
// showed (deskbot.Gate.GrantTerms), which the gate checks.
const termsSep = ":"

var (
	termsArg = regexp.MustCompile(`^[0-9a-f]{1,16}$`)
	toolArg  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	msArg    = regexp.MustCompile(`^[0-9]{1,16}$`)
)

// NewButton builds an inline button for action and arg, checked the same way
// ParseCallback checks what comes back (the 64 bytes among it), so the bot
// never sends a button it would refuse. Buttons whose arg is a desk or a
// grant, which may be long, are built through it; an error leaves the
// button out.
func NewButton(label, action, arg string) (telebot.InlineButton, error) {
	if _, _, err := ParseCallback("\f" + action + "|" + arg); err != nil {
		return telebot.InlineButton{}, err
	}
	return telebot.InlineButton{Unique: action, Data: arg, Text: label}, nil
}

// ParseCallback reads callback data: "\f<action>|<arg>" as telebot puts it on
// the wire, or the same without the leading "\f" (as a handler registered for
// the action sees it split). The data comes from the client and carries no
// trust: anything malformed, too long, of an unknown action or with an
// argument of the wrong shape is an EINVALID error. A valid result still
// has to be checked against the store.
func ParseCallback(raw string) (action, arg string, err error) {
	if len(raw) > MaxCallbackData {
		return "", "", deskbot.Errorf(deskbot.EINVALID, "That button is not valid.")
	}
	s := strings.TrimPrefix(raw, "\f")
	action, arg, ok := strings.Cut(s, "|")
	if !ok {
		return "", "", deskbot.Errorf(deskbot.EINVALID, "That button is not valid.")
	}
	if !validArg(action, arg) {
		return "", "", deskbot.Errorf(deskbot.EINVALID, "That button is not valid.")
	}
	return action, arg, nil
}

func validArg(action, arg string) bool {
	switch action {
	case ActDeny, ActSkipReason, ActOpen, ActWhy, ActGrantCancel:
		return isRequestID(arg)
	case ActAllowOnce, ActAlwaysAllow, ActChange:
		_, _, ok := ShownCall(arg)
		return ok
	case ActGrantConfirm:
		shown, terms, cut := strings.Cut(arg, termsSep)
		_, _, ok := ShownCall(shown)
		return ok && cut && termsArg.MatchString(terms)
	case ActFlattenAsk, ActFlattenConfirm:
		return deskOrAll(arg)
	case ActCancel:
		return arg == "" || deskOrAll(arg)
	case ActLogin:
		return arg == "kite"
	case ActRevoke:
		desk, tool, ok := strings.Cut(arg, "/")
		return ok && deskbot.ValidDeskName(desk) == nil && toolArg.MatchString(tool)
	case ActResumeHalted:
		desk, ms, ok := strings.Cut(arg, "/")
		return ok && deskbot.ValidDeskName(desk) == nil && msArg.MatchString(ms)
	}
	return false
}

// deskOrAll accepts a desk's name (the one rule, deskbot.ValidDeskName) or
// the word for every desk.
func deskOrAll(arg string) bool { return arg == deskbot.AllDesks || deskbot.ValidDeskName(arg) == nil }

// isRequestID accepts only the canonical lowercase form of a UUID, the one
// the store issues, so that one request has exactly one spelling.
func isRequestID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// changesArg is a count of changes as a button carries it: 1 to 9999, no
// leading zero (0 is written as nothing).
var changesArg = regexp.MustCompile(`^[1-9][0-9]{0,3}$`)

// ShownCall reads the argument of a button that acts on the call its
// message showed: "<request id>" (the call as the desk asked it) or
// "<request id>.<changes>" (after that many changes).
func ShownCall(arg string) (id string, changes int, ok bool) {
	id, n, dotted := strings.Cut(arg, ".")
	if !isRequestID(id) {
		return "", 0, false
	}
	if !dotted {
		return id, 0, true
	}
	if !changesArg.MatchString(n) {
		return "", 0, false
	}
	changes, err := strconv.Atoi(n)
	return id, changes, err == nil
}
