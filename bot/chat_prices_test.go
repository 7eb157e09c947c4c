package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// hubAt is the market (the hub) as the bot reads it: symbol's last price,
// set at a time.
type hubAt struct {
	deskbot.Market
	p deskbot.Price
}

func (m hubAt) LastPrice(context.Context, string) (deskbot.Price, bool, error) {
	return m.p, m.p.Value > 0, nil
}

// /desks and /desk show a position's last price from the market with its
// age, and mark it stale, never current, when older than PRICE_MAX_AGE.
func TestDesksShowPositionPriceAge(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tradeAcrossMidnight()
	now := h.clock.Now()
	for _, tt := range []struct {
		name string
		at   time.Time
		want string
	}{
		{"fresh", now.Add(-12 * time.Second), "RELIANCE: long 2, avg 100.00, last 1,604.35 · 12 s ago, open"},
		{"stale", now.Add(-3 * time.Minute), "RELIANCE: long 2, avg 100.00, last 1,604.35 · stale, 3 min old, open"},
	} {
		h.market = hubAt{p: deskbot.Price{Value: 1604.35, At: tt.at}}
		h.restart()
		for _, cmd := range []string{"/desks", "/desk alpha"} {
			if got := h.replyTo(groupID, h.say(ravi, cmd, 0)).Plain; !strings.Contains(got, tt.want) {
				t.Errorf("%s: %s shows %q; want it to contain %q", tt.name, cmd, got, tt.want)
			}
		}
	}
}
