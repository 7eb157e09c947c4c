package argtext_test

import (
	"testing"
	"unicode/utf8"

	"github.com/deskbot/deskbot/argtext"
)

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		mark string
		want string
	}{
		{"short", 10, "…", "short"},
		{"exactly10!", 10, "…", "exactly10!"},
		{"eleven chars", 10, "…", "eleven ch…"},
		{"ends on a space here", 10, "…", "ends on a…"},
		// Characters, never bytes: a ₹ is three bytes and one character.
		{"₹₹₹₹₹₹", 4, "…", "₹₹₹…"},
		{"नमस्ते दुनिया", 5, "…", "नमस्…"},
		{"a longer line of text", 12, "… (cut)", "a lon… (cut)"},
		{"abc", 0, "…", ""},
	}
	for _, tt := range tests {
		got := argtext.Clip(tt.s, tt.n, tt.mark)
		if got != tt.want {
			t.Errorf("Clip(%q, %d, %q) = %q, want %q", tt.s, tt.n, tt.mark, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q splits a character", tt.s, tt.n, got)
		}
		if n := utf8.RuneCountInString(got); n > tt.n {
			t.Errorf("Clip(%q, %d) is %d characters long", tt.s, tt.n, n)
		}
	}
}
