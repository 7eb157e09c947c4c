package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// Trades returns up to the last limit fills of the desk, oldest first. The
// journal keeps the last 1000; it is written in the same atomic step as the
// book, so it never disagrees with it.
func (p *Paper) Trades(ctx context.Context, desk string, limit int) ([]deskbot.Trade, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	lines, err := p.rdb.LRange(ctx, p.journalKey(desk), int64(-limit), -1).Result()
	if err != nil {
		return nil, wrapRedis(err)
	}
	out := make([]deskbot.Trade, 0, len(lines))
	for _, l := range lines {
		t, err := parseTrade(l)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// parseTrade reads "millis side quantity price realised symbol".
func parseTrade(l string) (deskbot.Trade, error) {
	f := strings.Fields(l)
	if len(f) != 6 {
		return deskbot.Trade{}, fmt.Errorf("paper broker: corrupt journal entry %q", l)
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return deskbot.Trade{}, fmt.Errorf("paper broker: corrupt journal entry %q", l)
	}
	nums, err := parseFloats(f[2:5])
	if err != nil {
		return deskbot.Trade{}, fmt.Errorf("paper broker: corrupt journal entry %q", l)
	}
	return deskbot.Trade{
		Fill: deskbot.Fill{
			Order:       deskbot.Order{Symbol: f[5], Side: f[1], Quantity: nums[0], Price: nums[1]},
			RealisedPnL: deskbot.RoundPaise(nums[2]),
		},
		At: time.UnixMilli(ms),
	}, nil
}
