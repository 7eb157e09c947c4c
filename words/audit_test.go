package words_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot/words"
)

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{5294369 * time.Nanosecond, "5 ms"},
		{300 * time.Microsecond, "1 ms"},
		{1234 * time.Millisecond, "1.2 s"},
		{2 * time.Second, "2 s"},
		{42400 * time.Millisecond, "42 s"},
		{3 * time.Minute, "3 min"},
		{200 * time.Second, "3 min 20 s"},
		{2 * time.Hour, "2 h"},
		{125*time.Minute + 20*time.Second, "2 h 5 min"},
	} {
		if got := words.Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// The trail's codes reach people in words.
func TestAuditInWords(t *testing.T) {
	for _, tt := range []struct{ action, detail, wantAction, wantDetail string }{
		{"allow_once", "", "Allowed once", ""},
		{"always_allow", "", "Always allowed", ""},
		{"ran", "5.294369ms", "Ran", "took 5 ms"},
		{"failed", "1m2.4s", "Failed", "took 1 min 2 s"},
		{"deny", "too big", "Denied", "too big"},
		{"something_new", "x", "something new", "x"},
	} {
		if got := words.AuditAction(tt.action); got != tt.wantAction {
			t.Errorf("AuditAction(%q) = %q, want %q", tt.action, got, tt.wantAction)
		}
		if got := words.AuditDetail(tt.action, tt.detail); got != tt.wantDetail {
			t.Errorf("AuditDetail(%q, %q) = %q, want %q", tt.action, tt.detail, got, tt.wantDetail)
		}
	}
}
