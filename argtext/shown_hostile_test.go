package argtext_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/argtext"
)

// A hostile desk hides a character in a held call that renders as nothing
// (or as a plain space) but is not one of the format characters: the
// approver would read "cat report.csv" while another file is read. Every
// such character must reach the approver as an escape.
func TestHostileInvisibleCharactersAreShownEscaped(t *testing.T) {
	for _, r := range []rune{
		0x034F,         // combining grapheme joiner: default ignorable, renders as nothing
		0x17B4, 0x17B5, // Khmer inherent vowels: default ignorable
		0x180B, 0x180C, 0x180D, 0x180F, // Mongolian free variation selectors
		0xE0100, 0xE01EF, // variation selectors supplement
		0xE0080, 0xE0FFF, // default ignorable, unassigned in the tag block's neighbours
		0x2800, // Braille pattern blank: reads as a space and is none
	} {
		t.Run(fmt.Sprintf("U+%04X", r), func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"command": "cat report" + string(r) + ".csv"})
			got := argtext.Arguments(args)
			if strings.ContainsRune(got, r) {
				t.Errorf("Arguments(%s) = %q: U+%04X reached the approver raw", args, got, r)
			}
			if !strings.Contains(got, fmt.Sprintf("%04x", r)) {
				t.Errorf("Arguments(%s) = %q: no escape of U+%04X", args, got, r)
			}
		})
	}
}

// Right-to-left letters need no bidi control to reorder what surrounds
// them: "./keep/א/ב/old" displays as "./keep/ב/א/old". An approver would
// read one path while another is removed, so they are shown escaped.
func TestHostileRightToLeftLettersAreShownEscaped(t *testing.T) {
	for _, s := range []string{
		"rm -rf ./keep/\u05d0/\u05d1/old",     // Hebrew
		"rm -rf ./keep/\u0627/\u0628/old",     // Arabic
		"echo \u0661\u0662\u0663",             // Arabic-Indic digits, which read as other digits
		"rm -rf ./keep/\U0001e900/b",          // Adlam
		"rm -rf ./keep/\ufb50/\ufe8f/old",     // Arabic presentation forms
		"rm -rf ./keep/\U00010800/\U00010801", // a historic right-to-left script
	} {
		args, _ := json.Marshal(map[string]string{"command": s})
		got := argtext.Arguments(args)
		for _, r := range got {
			if r >= 0x80 {
				t.Errorf("Arguments(%q) = %q: U+%04X reaches the approver raw", s, got, r)
				break
			}
		}
	}
	// Left-to-right scripts are shown as they are.
	if got := argtext.Show("नमस्ते ₹500"); got != "नमस्ते ₹500" {
		t.Errorf("Text changed a left-to-right text: %q", got)
	}
}

// A hostile desk sends a second JSON value after the first: the tool gets
// the whole text, so the approver and the audit trail must see it all, not
// the harmless first object alone.
func TestHostileArgumentsAfterTheFirstValueAreShown(t *testing.T) {
	for _, args := range []string{
		`{"quantity":1} {"quantity":1000}`,
		`{"quantity":1}{"quantity":1000}`,
		"{\"quantity\":1}\n{\"quantity\":1000}",
		`{"quantity":1} junk`,
	} {
		shown, canon := argtext.ArgumentsAndCanonical(json.RawMessage(args))
		for name, got := range map[string]string{"shown": shown, "canonical": canon, "Arguments": argtext.Arguments(json.RawMessage(args)), "Canonical": argtext.Canonical(json.RawMessage(args))} {
			if tail := args[strings.Index(args, "}")+1:]; !strings.Contains(got, strings.TrimSpace(tail)) {
				t.Errorf("%s of %q = %q: what follows the first value is hidden", name, args, got)
			}
		}
	}
	// One value with space around it is one value.
	if got, want := argtext.Canonical(json.RawMessage(" {\"b\":1,\"a\":2}\n")), `{"a":2,"b":1}`; got != want {
		t.Errorf("Canonical of one spaced object = %q; want %q", got, want)
	}
}
