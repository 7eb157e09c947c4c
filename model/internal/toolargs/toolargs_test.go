package toolargs

import (
	"bytes"
	"encoding/json"
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

// hasDuplicateKey reports a repeated top-level key, found independently of
// Parse: the keys listed outnumber those decoded into a map.
func hasDuplicateKey(s string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &m) != nil {
		return false
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	depth, keys, atKey := 0, 0, false
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			// Entering the object, a key comes next; after a composite
			// value inside it, so does one.
			atKey = depth <= 1
			depth++
			continue
		case json.Delim('}'), json.Delim(']'):
			depth--
			continue
		}
		if depth == 1 {
			if atKey {
				keys++
			}
			atKey = !atKey
		}
	}
	return keys != len(m)
}
