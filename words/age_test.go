package words_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot/words"
)

func TestAgoSaysDurationsAsPeopleDo(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{2*time.Minute + 59*time.Second, "2 minutes"},
		{time.Minute, "1 minute"},
		{time.Hour, "1 hour"},
		{65 * time.Minute, "1 hour 5 minutes"},
		{3*time.Hour + 5*time.Minute, "3 hours 5 minutes"},
		{24*time.Hour + 30*time.Minute, "1 day"},
		{50 * time.Hour, "2 days 2 hours"},
	} {
		if got := words.Ago(tt.d); got != tt.want {
			t.Errorf("Ago(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestTriggerAgeIsSilentWhileFresh(t *testing.T) {
	sent := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC) // 10:30 India time
	if got := words.TriggerAge(sent, sent.Add(words.StaleTriggerAfter-time.Second)); got != "" {
		t.Errorf("a fresh trigger's age = %q, want none", got)
	}
	if got := words.TriggerAge(time.Time{}, sent); got != "" {
		t.Errorf("a trigger with no time's age = %q, want none", got)
	}
	want := "(This was sent 2 minutes ago, at 10:30 India time; it is 10:32 India time now. Prices, positions and orders may have changed since: check them before acting on it.)\n"
	if got := words.TriggerAge(sent, sent.Add(words.StaleTriggerAfter)); got != want {
		t.Errorf("a stale trigger's age = %q, want %q", got, want)
	}
}
