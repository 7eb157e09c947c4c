package agent

import (
	"encoding/json"
	"strconv"

	"github.com/deskbot/deskbot/argtext"
)

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
