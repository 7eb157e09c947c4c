package broker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

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
