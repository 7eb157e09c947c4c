package deskbot_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

func TestCanonicalArguments(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{``, `{}`},
		{`  `, `{}`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{ "a" : { "z":1, "y":[2, 1] } }`, `{"a":{"y":[2,1],"z":1}}`},
		// Numbers keep their exact text: 24512.123456789012 must not round.
		{`{"price":24512.123456789012,"q":1e3}`, `{"price":24512.123456789012,"q":1e3}`},
		{`{"broken":`, `{"broken":`},
	}
	for _, tt := range tests {
		if got := deskbot.CanonicalArguments(json.RawMessage(tt.in)); got != tt.want {
			t.Errorf("CanonicalArguments(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorCodeAndMessage(t *testing.T) {
	coded := deskbot.Errorf(deskbot.ECONFLICT, "Already allowed by %s at %s IST.", "Asha", "14:02")
	tests := []struct {
		err         error
		code, human string
	}{
		{nil, "", ""},
		{coded, deskbot.ECONFLICT, "Already allowed by Asha at 14:02 IST."},
		{fmt.Errorf("resolve: %w", coded), deskbot.ECONFLICT, "Already allowed by Asha at 14:02 IST."},
		// A plain error may carry an address or a secret: never shown.
		{errors.New("dial tcp redis://:hunter2@10.0.0.1:6379"), deskbot.EINTERNAL, "Internal error."},
	}
	for _, tt := range tests {
		if got := deskbot.ErrorCode(tt.err); got != tt.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", tt.err, got, tt.code)
		}
		if got := deskbot.ErrorMessage(tt.err); got != tt.human {
			t.Errorf("ErrorMessage(%v) = %q, want %q", tt.err, got, tt.human)
		}
	}
}

func TestParseDecision(t *testing.T) {
	for _, s := range []string{"allow_once", "always_allow", "deny"} {
		if d, err := deskbot.ParseDecision(s); err != nil || string(d) != s {
			t.Errorf("ParseDecision(%q) = %q, %v", s, d, err)
		}
	}
	for _, s := range []string{"", "Allow once", "ALLOW_ONCE", "allow"} {
		_, err := deskbot.ParseDecision(s)
		want := "Permission is allow_once, always_allow or deny, not '" + s + "'"
		if deskbot.ErrorCode(err) != deskbot.EINVALID || deskbot.ErrorMessage(err) != want {
			t.Errorf("ParseDecision(%q) = %v, want %q", s, err, want)
		}
	}
}

func TestClockIsIndiaTime(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 11, 30, 8, 32, 0, 0, time.UTC), "14:02"},
		{time.Date(2026, 11, 30, 18, 45, 0, 0, time.UTC), "00:15"},
		{time.Date(2026, 11, 30, 14, 2, 0, 0, deskbot.IST), "14:02"},
	}
	for _, tt := range tests {
		if got := deskbot.Clock(tt.at); got != tt.want {
			t.Errorf("Clock(%s) = %s, want %s", tt.at, got, tt.want)
		}
	}
}
