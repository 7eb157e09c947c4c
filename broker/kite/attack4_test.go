package kite

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// Kite ends every session at about 06:00 India time: a login at 01:30
// lasts until 06:00 that same morning, not until 06:00 the next day (the
// group would be told the session lasts a day longer than it does, and
// /login would call a dead session live).
func TestAttackSessionEndOfALoginBeforeSix(t *testing.T) {
	for _, tt := range []struct{ at, want time.Time }{
		{time.Date(2026, 12, 4, 1, 30, 0, 0, deskbot.IST), time.Date(2026, 12, 4, 6, 0, 0, 0, deskbot.IST)},
		{time.Date(2026, 12, 4, 9, 0, 0, 0, deskbot.IST), time.Date(2026, 12, 5, 6, 0, 0, 0, deskbot.IST)},
		{time.Date(2026, 12, 4, 6, 0, 0, 0, deskbot.IST), time.Date(2026, 12, 5, 6, 0, 0, 0, deskbot.IST)},
	} {
		if got := SessionEnd(tt.at); !got.Equal(tt.want) {
			t.Errorf("SessionEnd(%s) = %s; want %s", tt.at, got.In(deskbot.IST), tt.want)
		}
	}
}
