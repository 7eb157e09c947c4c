package deskbot_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
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
		if got := deskbot.ShowText(tc.in); got != tc.want {
			t.Errorf("ShowText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShownArgumentsKeepsEveryCharacter(t *testing.T) {
	args := json.RawMessage(`{"symbol":"NIFTY\u202eTUF","quantity":50}`)
	got := deskbot.ShownArguments(args)
	if want := `{"quantity":50,"symbol":"NIFTY\u202eTUF"}`; got != want {
		t.Fatalf("ShownArguments = %q, want %q", got, want)
	}
	if strings.ContainsRune(got, '\u202e') {
		t.Fatal("a bidi override reached the shown text raw")
	}
}

func TestShownArgumentsReadAsTyped(t *testing.T) {
	got := deskbot.ShownArguments(json.RawMessage(`{"command":"test -f a && cat a > b <c"}`))
	if want := `{"command":"test -f a && cat a > b <c"}`; got != want {
		t.Fatalf("ShownArguments = %q, want %q (no JSON HTML escapes)", got, want)
	}
	if got, want := deskbot.ShownArguments(json.RawMessage(`not json`)), "not json"; got != want {
		t.Fatalf("ShownArguments(not json) = %q, want %q", got, want)
	}
}

// Telegram counts a message in UTF-16 units; so does every check against
// MaxShownArguments, or a call of emoji would pass the executor and then not
// fit the approver's message.
func TestShownLengthCountsAsTelegramDoes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"नमस्ते", 6}, {"📈", 2}, {"a📈b", 4}, {"", 0},
	} {
		if got := deskbot.ShownLength(tc.in); got != tc.want {
			t.Errorf("ShownLength(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
