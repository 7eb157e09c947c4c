package bot

import (
	"unicode/utf16"
	"unicode/utf8"
)

// MaxMessage is Telegram's limit on a message's text. Telegram counts the
// text after entity parsing; we count the escaped HTML in UTF-16 code units,
// which is never less, so a part that fits here fits there.
const MaxMessage = 4096

// MaxCaption is Telegram's limit on a photo caption.
const MaxCaption = 1024

// escapedLen is the UTF-16 length of one rune once escaped.
func escapedLen(r rune) int {
	switch r {
	case '&':
		return len("&amp;")
	case '<', '>':
		return len("&lt;")
	case '"', '\'':
		return len("&#34;")
	}
	return max(utf16.RuneLen(r), 1)
}

// Split cuts plain text (not yet escaped) into parts whose escaped form is
// at most limit UTF-16 units, preferring to cut after a blank line, then a
// line, then a space. Nothing is lost: the parts joined give text back.
// Parts are plain, so each is escaped (and wrapped in tags) on its own and
// no tag ever straddles two messages. limit below 8 is taken as 8, enough for
// any one escaped rune.
func Split(text string, limit int) []string {
	limit = max(limit, 8)
	var parts []string
	for len(text) > 0 {
		cut, size := 0, 0
		para, line, space := 0, 0, 0
		for i := 0; i < len(text); {
			r, w := utf8.DecodeRuneInString(text[i:])
			if size+escapedLen(r) > limit {
				break
			}
			size += escapedLen(r)
			cut = i + w
			switch {
			case r == '\n' && i > 0 && text[i-1] == '\n':
				para = cut
			case r == '\n':
				line = cut
			case r == ' ':
				space = cut
			}
			i = cut
		}
		if cut < len(text) {
			// Prefer a natural break, unless it would leave a tiny part.
			for _, b := range []int{para, line, space} {
				if b > cut/2 {
					cut = b
					break
				}
			}
		}
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	return parts
}
