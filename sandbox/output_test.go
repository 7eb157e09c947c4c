package sandbox

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCollector(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      string // "" means: must be cut
		wantChars int64
	}{
		{"short", 10, []string{"hello\n"}, "hello\n", 6},
		{"exactly max", 5, []string{"ab", "cde"}, "abcde", 5},
		{"multibyte within max", 4, []string{"₹₹₹₹"}, "₹₹₹₹", 4},
		{"over max", 80, []string{strings.Repeat("abcdefgh", 20)}, "", 160},
		{"far over max", 100, []string{strings.Repeat("x", 1000), "TAIL"}, "", 1004},
		{"multibyte far over", 90, []string{strings.Repeat("₹", 500), "नमस्ते"}, "", 506},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollector(tt.max)
			for _, w := range tt.writes {
				c.Write([]byte(w))
			}
			got := c.String(tt.max)
			if n := utf8.RuneCountInString(got); n > tt.max {
				t.Errorf("got %d characters, more than the maximum %d", n, tt.max)
			}
			if c.chars != tt.wantChars {
				t.Errorf("counted %d characters, want %d", c.chars, tt.wantChars)
			}
			if tt.want != "" {
				if got != tt.want {
					t.Errorf("got %q, want %q", got, tt.want)
				}
				return
			}
			if !utf8.ValidString(got) || !strings.Contains(got, "output cut") {
				t.Fatalf("got %q, want a valid cut with a note", got)
			}
			front, back, _ := strings.Cut(got, "\n[")
			note, back, _ := strings.Cut(back, "]\n")
			all := strings.Join(tt.writes, "")
			if n := utf8.RuneCountInString(front+back+note) + 3; n > tt.max || n < tt.max-3 {
				t.Errorf("kept %d characters with the note, want %d", n, tt.max)
			}
			if !strings.HasPrefix(all, front) || !strings.HasSuffix(all, back) {
				t.Errorf("kept %q ... %q, want the head and tail of the output", front, back)
			}
		})
	}
}

func TestQuoteRoundTripsThroughBash(t *testing.T) {
	for _, s := range []string{
		"plain", "it's", `back\slash`, "new\nline", "tab\tand\x01ctl", "₹ नमस्ते", `$HOME $(id) ` + "`id`", `\x41 \'`, "\x7f\xff",
	} {
		out, err := exec.Command("bash", "--noprofile", "--norc", "-c", "printf %s "+quote(s)).Output()
		if err != nil {
			t.Fatalf("quote(%q): %v", s, err)
		}
		if got := string(out); got != s {
			t.Errorf("quote(%q) came back as %q", s, got)
		}
	}
}
