package deskbot_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// The hold message is part of the product's contract (README quotes it):
// these are its words, byte for byte.
func TestHoldMessageWords(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 35, 0, 0, time.UTC) // 14:05 India time
	got := deskbot.HoldMessage("flatten_desk", "R1", at)
	want := "flatten_desk needs the user's permission, so it was not run. Request R1 was sent to them and lapses at 14:05 India time. End this turn now; do not retry flatten_desk or reach the same result another way. If they allow it, the harness runs exactly this call and tells you the result in a new message."
	if got != want {
		t.Errorf("HoldMessage:\n got %q\nwant %q", got, want)
	}
}

func TestParseHoldWords(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 35, 0, 0, time.UTC)
	msg := deskbot.HoldMessage("place_order", "0b9d6f1e-7a4c-4c2e-9a51-3f0f6a1c2b7d", at)
	tests := []struct {
		name string
		text string
		want deskbot.HoldWords
		ok   bool
	}{
		{"a hold message", msg, deskbot.HoldWords{Tool: "place_order", RequestID: "0b9d6f1e-7a4c-4c2e-9a51-3f0f6a1c2b7d", Clock: "14:05"}, true},
		{"something after it", msg + " ", deskbot.HoldWords{}, false},
		{"something before it", "x" + msg, deskbot.HoldWords{}, false},
		{"the tool named differently the second time", "a needs the user's permission, so it was not run. Request R1 was sent to them and lapses at 14:05 India time. End this turn now; do not retry b or reach the same result another way. If they allow it, the harness runs exactly this call and tells you the result in a new message.", deskbot.HoldWords{}, false},
		{"an empty id", deskbot.HoldWords{Tool: "a", Clock: "14:05"}.Message(), deskbot.HoldWords{}, false},
		{"a space in the id", deskbot.HoldWords{Tool: "a", RequestID: "R 1", Clock: "14:05"}.Message(), deskbot.HoldWords{}, false},
		{"another text", "The user denied a (request R1), so it was not run.", deskbot.HoldWords{}, false},
		{"empty", "", deskbot.HoldWords{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := deskbot.ParseHoldWords(tt.text)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseHoldWords = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if ok && got.Message() != tt.text {
				t.Errorf("Message() = %q; want the text back %q", got.Message(), tt.text)
			}
		})
	}
}
