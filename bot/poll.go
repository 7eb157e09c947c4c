package bot

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	tele "gopkg.in/telebot.v3"
)

// poller is telebot.LongPoller with what it lacks: a backoff on errors
// (LongPoller asks again at once, so a Telegram outage becomes a busy loop
// of requests) and error logs that cannot carry the token (LongPoller
// reports errors only in verbose mode, which prints URLs).
//
// Delivery: an update is confirmed to Telegram only by the next getUpdates
// (offset = last id + 1), so a batch read just before a crash is delivered
// again after the restart; handlers are idempotent for that reason.
type poller struct {
	timeout time.Duration
	log     *slog.Logger
	scrub   func(string) string
	last    int
	alive   pollClock // for health checks (health.go)
}

// Poll implements tele.Poller.
func (p *poller) Poll(b *tele.Bot, dest chan tele.Update, stop chan struct{}) {
	p.alive.start()
	defer p.alive.stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-stop:
			return
		default:
		}
		updates, err := p.get(b)
		if err != nil {
			select {
			case <-stop: // the stop cancelled the long poll; not a failure
				return
			default:
			}
			backoff = min(max(2*backoff, 250*time.Millisecond), 30*time.Second)
			p.log.Warn("telegram getUpdates failed; retrying", "err", p.scrub(err.Error()), "in", backoff)
			select {
			case <-stop:
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		p.alive.ok()
		for _, u := range updates {
			if u.ID <= p.last {
				continue
			}
			p.last = u.ID
			select {
			case dest <- u:
			case <-stop:
				return
			}
		}
	}
}

func (p *poller) get(b *tele.Bot) ([]tele.Update, error) {
	params := map[string]string{
		"offset":          strconv.Itoa(p.last + 1),
		"timeout":         strconv.Itoa(int(p.timeout / time.Second)),
		"allowed_updates": `["message","callback_query"]`,
	}
	data, err := b.Raw("getUpdates", params)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Result []tele.Update
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, err
	}
	return resp.Result, nil
}
