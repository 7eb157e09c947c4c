package sandbox

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// collector keeps what a model can be shown of a command's output without
// holding all of it: the head and a sliding tail, each a few times the
// character limit in bytes (a character is at most 4 bytes), and a count of
// characters for the note. The tail matters because errors come last.
type collector struct {
	max    int // characters
	head   []byte
	tail   []byte
	capB   int   // bytes kept in head and in tail
	chars  int64 // all characters seen, counted as UTF-8 leading bytes
	cutMid bool  // bytes were dropped between head and tail
}

func newCollector(maxChars int) *collector {
	return &collector{max: maxChars, capB: 4 * maxChars}
}

func (c *collector) Write(p []byte) {
	for _, b := range p {
		if b&0xC0 != 0x80 {
			c.chars++
		}
	}
	if n := c.capB - len(c.head); n > 0 {
		if n > len(p) {
			n = len(p)
		}
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*c.capB { // compact now and then, not on every write
		drop := len(c.tail) - c.capB
		c.tail = append(c.tail[:0], c.tail[drop:]...)
		c.cutMid = true
	}
}

// String is the output in at most limit characters: whole when it fits,
// else its head and tail around a note that says how much was left out
// (the note counts against the limit too). A nil collector is empty.
func (c *collector) String(limit int) string {
	if c == nil {
		return ""
	}
	if !c.cutMid && c.chars <= int64(limit) {
		return strings.ToValidUTF8(string(c.head)+string(c.tail), "\uFFFD")
	}
	front, back := string(c.head), string(c.tail)
	if !c.cutMid {
		all := front + back // nothing dropped: both ends come from the whole
		front, back = all, all
	}
	note := func(cut int64) string {
		return fmt.Sprintf("\n[... output cut: %d of its %d characters left out here ...]\n", cut, c.chars)
	}
	// The note with the largest count is the longest it can be.
	keep := limit - utf8.RuneCountInString(note(c.chars))
	if keep < 2 { // no room for a note: the head alone
		return strings.ToValidUTF8(firstChars(front, limit), "\uFFFD")
	}
	keepFront := keep / 2
	f := firstChars(front, keepFront)
	b := lastChars(back, keep-keepFront)
	shown := int64(utf8.RuneCountInString(f) + utf8.RuneCountInString(b))
	return strings.ToValidUTF8(f, "\uFFFD") + note(c.chars-shown) + strings.ToValidUTF8(b, "\uFFFD")
}

func firstChars(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

func lastChars(s string, n int) string {
	i := len(s)
	for k := 0; k < n && i > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// quote renders s as a bash ANSI-C string ($'...'), so that the command
// reaches eval as one word whatever it contains: an unbalanced quote or a
// stray "}" cannot make bash read the marker line as part of the command.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString("$'")
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	b.WriteByte('\'')
	return b.String()
}
