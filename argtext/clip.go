package argtext

import (
	"strings"
	"unicode/utf8"
)

// Clip cuts s to at most n characters, mark included: s itself when it fits,
// else its first characters, without the spaces and newlines they end on,
// followed by mark ("…", or "… (cut)" where a reader must know text is
// missing). It counts characters, never bytes, so a cut never splits a
// UTF-8 character. Every cut of text for a person or a model goes through it.
func Clip(s string, n int, mark string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := n - utf8.RuneCountInString(mark)
	if keep <= 0 {
		return string([]rune(mark)[:max(n, 0)])
	}
	i, k := 0, 0
	for i = range s {
		if k == keep {
			break
		}
		k++
	}
	return strings.TrimRight(s[:i], " \n") + mark
}
