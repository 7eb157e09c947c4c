package argtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxArguments is how long a guarded call's arguments may be (as Arguments
// renders them and Length counts them) for a request message to show them
// whole. A request
// message is at most 4,096 characters; the rest is the header, the tool's
// own summary and the escaping of HTML. A call whose arguments do not fit is
// refused back to the model before any request exists, so Allow is never
// offered on a call that was shown cut.
const MaxArguments = 3000

// MaxRawArguments is how many bytes a guarded call's arguments may be as
// the desk sent them. What the approver is shown leaves out the whitespace
// between JSON's values, so a call within MaxArguments may still carry any
// amount of it; the request keeps the arguments as sent, in pieces its
// store's scripts write at once, and past a few hundred KiB of them (less
// on the embedded store) the script fails. Far above what MaxArguments
// shown characters take, even escaped and indented.
const MaxRawArguments = 64 << 10

// Show is the one way a desk's text is made visible to a person who must
// judge it (a held call's arguments): characters that display as nothing or
// as something else are shown as escapes. Format characters (bidi overrides
// such as U+202E, zero-width spaces and joiners), other characters that
// render as nothing (variation selectors, the combining grapheme joiner),
// letters of right-to-left scripts (which reorder the text around them),
// control characters, and spaces other than the ASCII space (U+00A0 and kin,
// the Braille blank) become \uXXXX, so what
// the approver reads has the same characters, in the same order, as what
// runs. Invalid UTF-8 is shown as \xNN per byte.
func Show(s string) string {
	if isPlainText(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == unicode.ReplacementChar && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case hidden(r):
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// hidden reports whether r could make shown text read differently from what
// it is.
func hidden(r rune) bool {
	switch {
	case r == ' ':
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Cc, r), unicode.Is(unicode.Co, r),
		unicode.Is(unicode.Cs, r), unicode.Is(unicode.Zs, r), unicode.Is(unicode.Zl, r),
		unicode.Is(unicode.Zp, r),
		// Default-ignorable characters render as nothing wherever they
		// are: variation selectors (which can also carry hidden bytes), the
		// combining grapheme joiner, Hangul fillers and their kin.
		unicode.Is(unicode.Variation_Selector, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r),
		r >= 0xE0000 && r <= 0xE007F, // tag characters
		r == 0x2800,                  // Braille blank: reads as a space and is none
		rightToLeft(r),
		!unicode.IsGraphic(r) && !unicode.IsSpace(r):
		return true
	}
	return false
}

// rightToLeft reports whether r lies where Unicode's right-to-left scripts
// are (Hebrew, Arabic, Syriac, Thaana, N'Ko and their kin, their
// presentation forms, the historic ones): such letters, with no bidi
// control at all, make the text between them display in reverse order
// ("./a/א/ב" reads as "./a/ב/א"), so what an approver read would not be
// the order that runs.
func rightToLeft(r rune) bool {
	return r >= 0x0590 && r <= 0x08FF || r >= 0xFB1D && r <= 0xFDFF || r >= 0xFE70 && r <= 0xFEFE ||
		r >= 0x10800 && r <= 0x10FFF || r >= 0x1E800 && r <= 0x1EFFF
}

func isPlainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// Arguments is a call's arguments as an approver sees them: canonical
// JSON (sorted keys, exact numbers) without JSON's HTML escapes (an approver
// must read "a && b", not "a \u0026\u0026 b"), through Text. Arguments
// that are not JSON are shown as they came, through Text.
func Arguments(args json.RawMessage) string {
	shown, _ := ArgumentsAndCanonical(args)
	return shown
}

// ArgumentsAndCanonical returns Arguments(args) and
// Canonical(args) from one parse of args: holding a call needs
// both (the approver's view, the audit entry), and parsing the model's
// arguments is most of what holding costs in Go. The shown form is the
// canonical one unless that holds a \u00 escape: JSON's HTML escaping,
// which the shown form leaves out, writes <, > and & as \u003c, \u003e
// and \u0026 and changes nothing else, so without such an escape the two
// encodings are the same bytes; with one, the parsed value is encoded again
// without HTML escaping.
//
// The arguments models send most, one object of plain members, take a
// shorter way to the same bytes (flatCanonical).
func ArgumentsAndCanonical(args json.RawMessage) (shown, canonical string) {
	if canon, ok := flatCanonical(args); ok {
		return Show(canon), canon
	}
	canon, v, ok := decodeCanonical(args)
	if !ok || !strings.Contains(canon, `\u00`) {
		return Show(canon), canon
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return Show(canon), canon
	}
	return Show(strings.TrimSuffix(buf.String(), "\n")), canon
}

// Length is how long shown text is as Telegram counts a message: in
// UTF-16 code units, so an emoji counts twice. Every check against
// MaxArguments, and every measure of a chat message in the bot, uses it, so
// the executor, the gate and the bot agree on what fits.
func Length(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// flatCanonical is Canonical(args) for arguments that are one
// JSON object of scalar members (strings, numbers, true, false, null)
// whose keys and strings are printable ASCII that JSON writes as it is
// (none of " \ < > & and no control character): the members sorted by key
// and written compactly, as encoding/json writes the decoded object, found
// without decoding into a map. ok is false for anything else (nesting, an
// escape, another character, a key given twice, anything after the
// object), which takes the general way. Such canonical bytes hold no
// escape, so they are also what the approver is shown.
// FuzzShownAndCanonicalArguments checks both ways agree.
func flatCanonical(args []byte) (string, bool) {
	type member struct{ key, val []byte } // key without its quotes
	var buf [8]member
	members := buf[:0]
	i := skipJSONSpace(args, 0)
	if i == len(args) || args[i] != '{' {
		return "", false
	}
	i = skipJSONSpace(args, i+1)
	if i < len(args) && args[i] == '}' {
		i++
	} else {
		for {
			key, next, ok := plainJSONString(args, i)
			if !ok {
				return "", false
			}
			i = skipJSONSpace(args, next)
			if i == len(args) || args[i] != ':' {
				return "", false
			}
			i = skipJSONSpace(args, i+1)
			start := i
			switch {
			case i < len(args) && args[i] == '"':
				_, i, ok = plainJSONString(args, i)
			case i < len(args) && (args[i] == '-' || (args[i] >= '0' && args[i] <= '9')):
				i, ok = jsonNumberEnd(args, i)
			default:
				ok = false
				for _, lit := range []string{"true", "false", "null"} {
					if bytes.HasPrefix(args[i:], []byte(lit)) {
						i, ok = i+len(lit), true
						break
					}
				}
			}
			if !ok {
				return "", false
			}
			members = append(members, member{key: key, val: args[start:i]})
			i = skipJSONSpace(args, i)
			if i == len(args) {
				return "", false
			}
			if args[i] == '}' {
				i++
				break
			}
			if args[i] != ',' {
				return "", false
			}
			i = skipJSONSpace(args, i+1)
		}
	}
	if skipJSONSpace(args, i) != len(args) {
		return "", false
	}
	slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	n := 2
	for k, m := range members {
		if k > 0 && bytes.Equal(members[k-1].key, m.key) {
			return "", false // the general way keeps the last: not this way's to judge
		}
		n += len(m.key) + len(m.val) + 4
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	for k, m := range members {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.Write(m.key)
		b.WriteString(`":`)
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.String(), true
}

// skipJSONSpace is the index of the first byte from i on that is not JSON
// whitespace.
func skipJSONSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the string starting at s[i] when every byte in it
// is printable ASCII that JSON writes unescaped (see flatCanonical): its
// contents without the quotes, and the index after the closing quote.
func plainJSONString(s []byte, i int) (str []byte, next int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return s[i+1 : j], j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// jsonNumberEnd is the index after the JSON number starting at s[i]
// (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?); ok is false when none
// starts there.
func jsonNumberEnd(s []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// Canonical returns args re-encoded with sorted keys and no spaces,
// so that two calls differing only in formatting compare equal. Numbers keep
// their exact text. Invalid JSON is returned unchanged.
func Canonical(args json.RawMessage) string {
	canon, _, _ := decodeCanonical(args)
	return canon
}

// decodeCanonical is Canonical with the value it encoded, so
// that a caller who also shows the arguments (ArgumentsAndCanonical)
// parses them once; ok is false when args is not JSON (canon is then args
// as they came).
func decodeCanonical(args json.RawMessage) (canon string, v any, ok bool) {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}", map[string]any{}, true
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(args), nil, false
	}
	// Whatever follows the first value goes to the tool with it: dropped
	// here, an approver would see {"quantity":1} of {"quantity":1}
	// {"quantity":1000}. Such arguments are shown as they came.
	if _, err := d.Token(); err != io.EOF {
		return string(args), nil, false
	}
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return string(args), nil, false
	}
	return string(b), v, true
}
