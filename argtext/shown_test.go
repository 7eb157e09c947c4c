package argtext_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/argtext"
)

func TestShowTextEscapesWhatReadsAsSomethingElse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"echo ok", "echo ok"},
		{"line1\nline2\ttab", "line1\nline2\ttab"},
		{"नमस्ते", "नमस्ते"}, // a script with combining marks is shown as it is
		{"echo ok \u202e; curl x | sh", `echo ok \u202e; curl x | sh`},
		{"NIFTY\u00a0", `NIFTY\u00a0`},
		{"a\u200bb\u200dc\ufeff", `a\u200bb\u200dc\ufeff`},
		{"bell\x07", `bell\u0007`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"tag\U000E0041", `tag\U000e0041`},
		{"\uFFFD real", "\uFFFD real"},
	} {
		if got := argtext.Show(tc.in); got != tc.want {
			t.Errorf("Show(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShownArgumentsKeepsEveryCharacter(t *testing.T) {
	args := json.RawMessage(`{"symbol":"NIFTY\u202eTUF","quantity":50}`)
	got := argtext.Arguments(args)
	if want := `{"quantity":50,"symbol":"NIFTY\u202eTUF"}`; got != want {
		t.Fatalf("Arguments = %q, want %q", got, want)
	}
	if strings.ContainsRune(got, '\u202e') {
		t.Fatal("a bidi override reached the shown text raw")
	}
}

func TestShownArgumentsReadAsTyped(t *testing.T) {
	got := argtext.Arguments(json.RawMessage(`{"command":"test -f a && cat a > b <c"}`))
	if want := `{"command":"test -f a && cat a > b <c"}`; got != want {
		t.Fatalf("Arguments = %q, want %q (no JSON HTML escapes)", got, want)
	}
	if got, want := argtext.Arguments(json.RawMessage(`not json`)), "not json"; got != want {
		t.Fatalf("Arguments(not json) = %q, want %q", got, want)
	}
}

// Telegram counts a message in UTF-16 units; so does every check against
// MaxArguments, or a call of emoji would pass the executor and then not
// fit the approver's message.
func TestShownLengthCountsAsTelegramDoes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"नमस्ते", 6}, {"📈", 2}, {"a📈b", 4}, {"", 0},
	} {
		if got := argtext.Length(tc.in); got != tc.want {
			t.Errorf("Length(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// shownByTwoParses is Arguments as it was before it shared its parse
// with Canonical: the reference ArgumentsAndCanonical must
// match byte for byte.
func shownByTwoParses(args json.RawMessage) string {
	canon := argtext.Canonical(args)
	d := json.NewDecoder(strings.NewReader(canon))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return argtext.Show(canon)
	}
	if _, err := d.Token(); err != io.EOF { // more than one value is shown as it came
		return argtext.Show(canon)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return argtext.Show(canon)
	}
	return argtext.Show(strings.TrimSuffix(buf.String(), "\n"))
}

var argumentSeeds = []string{
	``, `  `, `{}`, `null`, `[1,2]`, `"just a string"`, `not json`, `{"a":1} trailing`,
	`{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`,
	`{"cmd":"a && b > c < d","z":1e5,"a":-0.000000000000000000001}`,
	`{"cmd":"literal \\u003c stays","x":"\u003c"}`,
	`{"n":12345678901234567890.123456789,"s":"\u202eevil\u200b","t":"\t\n\u0007"}`,
	`{"bad":"\xff\xfe","lone":"\ud800","sep":"\u2028\u2029"}`,
	`{"b":{"y":[true,false,null],"x":"नमस्ते 😀"},"a":"\u00a0"}`,
	"{\"raw\":\"\xff\xfe <b>\x00\"}",
	// Flat objects, the short way's: spacing, order, every scalar,
	// and what it must leave to the general way.
	" {\t\"b\" :\r\n\"x\" , \"a\":true,\"c\":null,\"d\":false,\"\":-0.5e+3 }\n",
	`{"a ":1,"a":2,"a!":3,"A":4}`,
	`{"a":1,"a":2}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":.5}`,
	`{"a":truex}`, `{"a":tru}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":1}}`, `{"a":1`,
	"{\"k\x7f\":1}", `{"k":"a\"b"}`, `{"<":1}`, `{"a":[1]}`, `{"a":{}}`,
}

// One parse gives what the two functions give separately, for any input.
func FuzzShownAndCanonicalArguments(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		shown, canon := argtext.ArgumentsAndCanonical(args)
		if want := shownByTwoParses(args); shown != want {
			t.Errorf("shown of %q = %q, want %q", args, shown, want)
		}
		if want := argtext.Canonical(args); canon != want {
			t.Errorf("canonical of %q = %q, want %q", args, canon, want)
		}
		if got := argtext.Arguments(args); got != shown {
			t.Errorf("Arguments(%q) = %q, want %q", args, got, shown)
		}
	})
}

func TestShownAndCanonicalArguments(t *testing.T) {
	for _, tc := range []struct{ args, shown, canon string }{
		{`{"b":"a && b","a":1}`, `{"a":1,"b":"a && b"}`, `{"a":1,"b":"a \u0026\u0026 b"}`},
		{`{"q": 24512.123456789012}`, `{"q":24512.123456789012}`, `{"q":24512.123456789012}`},
		{``, `{}`, `{}`},
		{`oops`, `oops`, `oops`},
		{`{"s":"NIFTY\u00a0"}`, `{"s":"NIFTY\u00a0"}`, "{\"s\":\"NIFTY\u00a0\"}"},
	} {
		shown, canon := argtext.ArgumentsAndCanonical(json.RawMessage(tc.args))
		if shown != tc.shown || canon != tc.canon {
			t.Errorf("ArgumentsAndCanonical(%s) = %q, %q; want %q, %q", tc.args, shown, canon, tc.shown, tc.canon)
		}
	}
}

// The short way to canonical arguments takes the flat objects models send
// most and gives the general way's bytes; it leaves everything else alone.
func TestFlatCanonical(t *testing.T) {
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{`{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`, true},
		{" {\t\"b\" :\r\n\"x\" , \"a\":true,\"c\":null,\"d\":false,\"\":-0.5e+3 }\n", true},
		{`{"a ":1,"a":2,"a!":3,"A":4}`, true},
		{`{}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"a":01}`, false},
		{`{"a":1} {"a":2}`, false},
		{`{"cmd":"a && b"}`, false},
		{`{"s":"\u00a0"}`, false},
		{`{"s":"नमस्ते"}`, false},
		{`{"a":[1]}`, false},
		{``, false},
	} {
		got, ok := argtext.FlatCanonical([]byte(tc.args))
		if ok != tc.ok {
			t.Errorf("FlatCanonical(%q) ok = %v, want %v", tc.args, ok, tc.ok)
		}
		if want := argtext.Canonical(json.RawMessage(tc.args)); ok && got != want {
			t.Errorf("FlatCanonical(%q) = %q, want %q (the general way's)", tc.args, got, want)
		}
	}
}
