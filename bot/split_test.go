package bot

import (
	"html"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"fits", "hello", 10, []string{"hello"}},
		{"empty", "", 10, nil},
		{"at a blank line", "aaaa\n\nbbbb", 8, []string{"aaaa\n\n", "bbbb"}},
		{"at a line", "aaaa\nbbbbbb", 8, []string{"aaaa\n", "bbbbbb"}},
		{"at a space", "aaaa bbbbbb", 8, []string{"aaaa ", "bbbbbb"}},
		{"hard cut", "aaaaaaaaaaaa", 8, []string{"aaaaaaaa", "aaaa"}},
		{"escapes count", "&&", 8, []string{"&", "&"}},            // "&amp;" is 5
		{"emoji is two units", "😀😀😀😀😀", 8, []string{"😀😀😀😀", "😀"}}, // never halves a rune
		{"tiny break ignored", "a bbbbbbbbbb", 8, []string{"a bbbbbb", "bbbb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.limit)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("Split(%q, %d) = %q, want %q", tt.text, tt.limit, got, tt.want)
			}
		})
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("plain text that is long enough to be cut", 12)
	f.Add("<b>bold</b> & \"quoted\" 'single'\n\nnext paragraph", 9)
	f.Add("😀 emoji 👨‍👩‍👧 family ünïcödé", 8)
	f.Add(strings.Repeat("x", 5000), 4096)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		limit %= 5000 // any int; keep it in a range worth testing
		if limit < 0 {
			limit = -limit
		}
		parts := Split(text, limit)
		if got := strings.Join(parts, ""); got != text {
			t.Fatalf("lost text: %q became %q", text, got)
		}
		for _, p := range parts {
			if p == "" {
				t.Fatalf("empty part in %q", parts)
			}
			escaped := html.EscapeString(p)
			if n := argtext.Length(escaped); n > max(limit, 8) {
				t.Fatalf("part %q is %d units, over %d", p, n, limit)
			}
			// Each part, escaped on its own, is markup Telegram accepts and
			// reads back as the part itself.
			plain, err := telegramtest.CheckHTML(escaped)
			if err != nil || plain != p {
				t.Fatalf("part %q: reads %q, %v", p, plain, err)
			}
		}
	})
}
