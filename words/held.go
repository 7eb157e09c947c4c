package words

import (
	"strings"
	"time"
)

// The hold message is what a desk's model reads when its call was held for
// a person (package gate says it; README quotes it). It is made of three
// words only: the tool, the request's id and the clock at which the request
// lapses. Whoever reads a hold message back (the page) and whoever rebuilt
// one from its words (the store, for entries kept that way before it kept
// the text as said) share one definition: this one.

// HoldWords are what a hold message says that varies: the tool held, the
// request's id, and the India clock ("15:04") at which it lapses.
type HoldWords struct {
	Tool, RequestID, Clock string
}

// The hold message's fixed text around its words. The tool is named twice.
const (
	holdA = " needs the user's permission, so it was not run. Request "
	holdB = " was sent to them and lapses at "
	holdC = " India time. End this turn now; do not retry "
	holdD = " or reach the same result another way. If they allow it, the harness runs exactly this call and tells you the result in a new message."
)

// HoldMessage tells the model its call of tool was held as request id,
// lapsing at expires.
func HoldMessage(tool, id string, expires time.Time) string {
	return HoldWords{Tool: tool, RequestID: id, Clock: Time(expires)}.Message()
}

// Message is the hold message the words make, word for word.
func (w HoldWords) Message() string {
	return w.Tool + holdA + w.RequestID + holdB + w.Clock + holdC + w.Tool + holdD
}

// ParseHoldWords takes a hold message apart. ok only when text is exactly
// the message its words make (so that Message gives text back byte for
// byte) and none of the words is empty or has a space.
func ParseHoldWords(text string) (w HoldWords, ok bool) {
	tool, rest, ok := strings.Cut(text, holdA)
	if !ok {
		return HoldWords{}, false
	}
	id, rest, ok := strings.Cut(rest, holdB)
	if !ok {
		return HoldWords{}, false
	}
	clock, _, ok := strings.Cut(rest, holdC)
	if !ok {
		return HoldWords{}, false
	}
	w = HoldWords{Tool: tool, RequestID: id, Clock: clock}
	for _, s := range []string{tool, id, clock} {
		if s == "" || strings.ContainsAny(s, " \n") {
			return HoldWords{}, false
		}
	}
	if w.Message() != text {
		return HoldWords{}, false
	}
	return w, true
}
