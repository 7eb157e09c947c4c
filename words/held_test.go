package words_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot/words"
)

// The hold message is part of the product's contract (README quotes it):
// these are its words, byte for byte.
func TestHoldMessageWords(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 35, 0, 0, time.UTC) // 14:05 India time
	got := words.HoldMessage("flatten_desk", "R1", at)
	want := "flatten_desk needs the user's permission, so it was not run. Request R1 was sent to them and lapses at 14:05 India time. End this turn now; do not retry flatten_desk or reach the same result another way. If they allow it, the harness runs exactly this call and tells you the result in a new message."
	if got != want {
		t.Errorf("HoldMessage:\n got %q\nwant %q", got, want)
	}
}

func TestParseHoldWords(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 35, 0, 0, time.UTC)
	msg := words.HoldMessage("place_order", "0b9d6f1e-7a4c-4c2e-9a51-3f0f6a1c2b7d", at)
	tests := []struct {
		name string
		text string
		want words.HoldWords
		ok   bool
	}{
		{"a hold message", msg, words.HoldWords{Tool: "place_order", RequestID: "0b9d6f1e-7a4c-4c2e-9a51-3f0f6a1c2b7d", Clock: "14:05"}, true},
		{"something after it", msg + " ", words.HoldWords{}, false},
		{"something before it", "x" + msg, words.HoldWords{}, false},
		{"the tool named differently the second time", "a needs the user's permission, so it was not run. Request R1 was sent to them and lapses at 14:05 India time. End this turn now; do not retry b or reach the same result another way. If they allow it, the harness runs exactly this call and tells you the result in a new message.", words.HoldWords{}, false},
		{"an empty id", words.HoldWords{Tool: "a", Clock: "14:05"}.Message(), words.HoldWords{}, false},
		{"a space in the id", words.HoldWords{Tool: "a", RequestID: "R 1", Clock: "14:05"}.Message(), words.HoldWords{}, false},
		{"another text", "The user denied a (request R1), so it was not run.", words.HoldWords{}, false},
		{"empty", "", words.HoldWords{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := words.ParseHoldWords(tt.text)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseHoldWords = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if ok && got.Message() != tt.text {
				t.Errorf("Message() = %q; want the text back %q", got.Message(), tt.text)
			}
		})
	}
}

func TestShortID(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"0b6f1c9e-7d2a-4c55-9a43-2f1e8d7c6b5a", "0b6f1c9e"},
		{"short", "short"},
		{"", ""},
	} {
		if got := words.ShortID(tc.id); got != tc.want {
			t.Errorf("ShortID(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}
