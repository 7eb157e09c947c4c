package agent

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
)

// sameKeyTwice returns a message for the model when an object anywhere in
// args has two keys that are equal ignoring case, and "" otherwise. An
// approver reads every key of a held call, but a tool reads one copy: Go's
// decoder matches struct fields ignoring case (with Unicode folding, so
// "ſ" is "s" and the Kelvin sign is "k") and takes the last, other
// decoders take the first. Which copy runs is not what the approver can
// see, so such a call is refused before it is held. Arguments that are not
// JSON are left to the tool.
func sameKeyTwice(tool string, args json.RawMessage) string {
	type object struct {
		seen      map[string]string // folded key → key as given
		expectKey bool
	}
	var stack []*object
	d := json.NewDecoder(bytes.NewReader(args))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.expectKey {
			f := foldKey(key)
			if first, dup := top.seen[f]; dup {
				return "The arguments of " + tool + " give " + strconv.QuoteToASCII(first) + " more than once (also as " +
					strconv.QuoteToASCII(key) + "), so the user could not tell which one runs; nothing was run and no request was sent. " +
					"Give each argument once, spelled as the tool's schema spells it."
			}
			top.seen[f] = key
			top.expectKey = false
			continue
		}
		if top != nil && top.seen != nil {
			top.expectKey = true // a value ended or began: a key or '}' is next
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{seen: map[string]string{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, &object{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return ""
			}
		}
	}
}

// foldKey maps every character to the smallest of its case-folding orbit,
// so keys equal under strings.EqualFold (and Go's JSON field matching) map
// to the same string.
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}
