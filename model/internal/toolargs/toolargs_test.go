package toolargs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want string // "" means refused
	}{
		{``, `{}`},
		{"  \n", `{}`},
		{`{}`, `{}`},
		{`{"a": 1.50 }`, `{"a": 1.50 }`},
		{` {"a":[1,{"b":null}]}`, ` {"a":[1,{"b":null}]}`},
		{`{"a":1,"b":{"a":2}}`, `{"a":1,"b":{"a":2}}`}, // same key at another level is fine
		{`{"a":`, ``},
		{`[1,2]`, ``},
		{`"{}"`, ``},
		{`null`, ``},
		{`{} {}`, ``},
		{`{"quantity":1,"quantity":1000}`, ``},
		{`{"a":1,"\u0061":2}`, ``},
		// Go's decoder matches keys ignoring case: which copy a tool reads
		// is not what a person reads, so case-variant keys are refused too,
		// at any depth.
		{`{"quantity":1,"Quantity":1000}`, ``},
		{`{"a":{"side":"buy","SIDE":"sell"}}`, ``},
		{"{\"a\":\"\xff\"}", ``},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("Parse(%q) = %s, want refused", c.in, got)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("Parse(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `{"a":`, `[1]`, `{"a":1,"a":2}`, `{"a":"\u00e9"}`, " {\"x\": [true, false]} "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		blank := len(bytes.TrimSpace([]byte(s))) == 0
		var obj map[string]any
		parses := json.Unmarshal([]byte(s), &obj) == nil && obj != nil
		switch {
		case err != nil && parses && utf8.ValidString(s) && !hasDuplicateKey(s):
			t.Fatalf("refused a valid object %q: %v", s, err)
		case err != nil:
			return
		case blank:
			if string(got) != "{}" {
				t.Fatalf("blank arguments gave %q, want {}", got)
			}
		case string(got) != s:
			t.Fatalf("arguments changed: %q became %q", s, got)
		case !parses:
			t.Fatalf("accepted %q, which is not a JSON object", s)
		}
	})
}

// hasDuplicateKey reports two keys of one object, at any depth, that are
// equal ignoring case (strings.EqualFold, as Go's decoder matches fields),
// found independently of Parse: each object's keys compared pairwise.
func hasDuplicateKey(s string) bool {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	dup, _ := valueHasDuplicateKey(d)
	return dup
}

// valueHasDuplicateKey reads one JSON value from d; ok is false when d
// does not hold one.
func valueHasDuplicateKey(d *json.Decoder) (dup, ok bool) {
	tok, err := d.Token()
	if err != nil {
		return false, false
	}
	switch tok {
	case json.Delim('{'):
		var keys []string
		for d.More() {
			kt, err := d.Token()
			k, isKey := kt.(string)
			if err != nil || !isKey {
				return false, false
			}
			for _, seen := range keys {
				if strings.EqualFold(seen, k) {
					dup = true
				}
			}
			keys = append(keys, k)
			inner, ok := valueHasDuplicateKey(d)
			if !ok {
				return false, false
			}
			dup = dup || inner
		}
		_, err := d.Token() // '}'
		return dup, err == nil
	case json.Delim('['):
		for d.More() {
			inner, ok := valueHasDuplicateKey(d)
			if !ok {
				return false, false
			}
			dup = dup || inner
		}
		_, err := d.Token() // ']'
		return dup, err == nil
	}
	return false, true
}
