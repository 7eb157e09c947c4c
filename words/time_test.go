package words_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

func TestTimeIsIndiaTime(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 11, 30, 8, 32, 0, 0, time.UTC), "14:02"},
		{time.Date(2026, 11, 30, 18, 45, 0, 0, time.UTC), "00:15"},
		{time.Date(2026, 11, 30, 14, 2, 0, 0, deskbot.IST), "14:02"},
	}
	for _, tt := range tests {
		if got := words.Time(tt.at); got != tt.want {
			t.Errorf("Time(%s) = %s, want %s", tt.at, got, tt.want)
		}
	}
}
