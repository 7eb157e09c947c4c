package deskbot_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/deskbot/deskbot"
)

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
