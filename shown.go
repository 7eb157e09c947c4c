package deskbot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxShownArguments is how long a guarded call's arguments may be, as
// ShownArguments renders them and ShownLength counts them, a request message can show whole. A request
// message is at most 4,096 characters; the rest is the header, the tool's
// own summary and the escaping of HTML. A call whose arguments do not fit is
// refused back to the model before any request exists, so Allow is never
// offered on a call that was shown cut.
const MaxShownArguments = 3000

// ShowText is the one way a desk's text is made visible to a person who must
// judge it (a held call's arguments): characters that display as nothing or
// as something else are shown as escapes. Format characters (bidi overrides
// such as U+202E, zero-width spaces and joiners), other characters that
// render as nothing (variation selectors, the combining grapheme joiner),
// letters of right-to-left scripts (which reorder the text around them),
// control characters, and spaces other than the ASCII space (U+00A0 and kin,
// the Braille blank) become \uXXXX, so what
// the approver reads has the same characters, in the same order, as what
// runs. Invalid UTF-8 is shown as \xNN per byte.
func ShowText(s string) string {
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

// ShownArguments is a call's arguments as an approver sees them: canonical
// JSON (sorted keys, exact numbers) without JSON's HTML escapes (an approver
// must read "a && b", not "a \u0026\u0026 b"), through ShowText. Arguments
// that are not JSON are shown as they came, through ShowText.
func ShownArguments(args json.RawMessage) string {
	shown, _ := ShownAndCanonicalArguments(args)
	return shown
}

// ShownAndCanonicalArguments returns ShownArguments(args) and
// CanonicalArguments(args) from one parse of args: holding a call needs
// both (the approver's view, the audit entry), and parsing the model's
// arguments is most of what holding costs in Go. The shown form is the
// canonical one unless that holds a \u00 escape: JSON's HTML escaping,
// which the shown form leaves out, writes <, > and & as \u003c, \u003e
// and \u0026 and changes nothing else, so without such an escape the two
// encodings are the same bytes; with one, the parsed value is encoded again
// without HTML escaping.
func ShownAndCanonicalArguments(args json.RawMessage) (shown, canonical string) {
	canon, v, ok := canonicalArguments(args)
	if !ok || !strings.Contains(canon, `\u00`) {
		return ShowText(canon), canon
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return ShowText(canon), canon
	}
	return ShowText(strings.TrimSuffix(buf.String(), "\n")), canon
}

// ShownLength is how long shown text is as Telegram counts a message: in
// UTF-16 code units, so an emoji counts twice. Every check against
// MaxShownArguments uses it, so the executor, the gate and the bot agree on
// what fits.
func ShownLength(s string) int {
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

// TooLongToShowMessage tells a desk's model that a guarded call was refused
// because its arguments cannot be shown whole to an approver.
func TooLongToShowMessage(tool string, n int) string {
	return fmt.Sprintf("%s needs the user's permission, but its arguments are %d characters long and the user can be shown at most %d, so it was not run and no request was sent. Make the call shorter (for example, write a long script to a file in your folder and run the file), then call %s again.",
		tool, n, MaxShownArguments, tool)
}

// ArgumentChecker is a Tool that can refuse a call's arguments before the
// gate holds it, so an approver is never asked about a call that would fail
// or that runs as something other than it reads (a broker symbol padded with
// U+00A0 or spelled with a look-alike letter). The error's message is what
// the model is told.
type ArgumentChecker interface {
	CheckArguments(args json.RawMessage) error
}

// CheckArguments runs t's own argument check when it has one. A wrapper
// around a tool (metrics, draining at a stop) must forward through this, or
// the executor would no longer find the check and a call the tool refuses
// would be held and shown to an approver.
func CheckArguments(t Tool, args json.RawMessage) error {
	if ch, ok := t.(ArgumentChecker); ok {
		return ch.CheckArguments(args)
	}
	return nil
}
