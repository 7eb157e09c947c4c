package argtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// RepeatedKey finds two keys of one object anywhere in args that are equal
// ignoring case: first as it was given first, again as it was repeated.
// It is the one rule for keys given twice. A person reads every key of a
// call, but a tool reads one copy: Go's decoder matches struct fields
// ignoring case (with Unicode folding, so "ſ" is "s" and the Kelvin sign is
// "k") and takes the last, other decoders take the first, so which copy
// runs is not what the person can see. found is false when no key repeats
// and for args that are not JSON (left to whoever parses them).
func RepeatedKey(args []byte) (first, again string, found bool) {
	type object struct {
		seen      map[string]string // folded key → key as given
		expectKey bool
	}
	var stack []*object
	d := json.NewDecoder(bytes.NewReader(args))
	for {
		tok, err := d.Token()
		if err != nil {
			return "", "", false
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.expectKey {
			f := foldKey(key)
			if first, dup := top.seen[f]; dup {
				return first, key, true
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
				return "", "", false
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
