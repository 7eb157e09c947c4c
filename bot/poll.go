package bot

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
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
	// sleep waits between failed polls; tests inject one. nil is
	// deskbot.Sleep.
	sleep func(ctx context.Context, d time.Duration) error
	last  int
	alive pollClock // for health checks (health.go)
}

// Poll implements tele.Poller. After a failed getUpdates it waits 250ms,
// doubling up to 30s, and starts again from 250ms once Telegram answers.
func (p *poller) Poll(b *tele.Bot, dest chan tele.Update, stop chan struct{}) {
	p.alive.start()
	defer p.alive.stop()
	// telebot asks for a stop by closing stop; the waits honour a context
	// that ends with it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	sleep := p.sleep
	if sleep == nil {
		sleep = deskbot.Sleep
	}
	backoff := deskbot.Backoff{Min: 250 * time.Millisecond, Max: 30 * time.Second}
	for ctx.Err() == nil {
		updates, err := p.get(b)
		if err != nil {
			if stopped(stop) { // the stop cancelled the long poll; not a failure
				return
			}
			wait := backoff.Next()
			p.log.Warn("telegram getUpdates failed; retrying", "err", p.scrub(err.Error()), "in", wait)
			if sleep(ctx, wait) != nil {
				return
			}
			continue
		}
		backoff.Reset()
		p.alive.ok()
		for _, u := range updates {
			if u.ID <= p.last {
				continue
			}
			p.last = u.ID
			select {
			case dest <- u:
			case <-ctx.Done():
				return
			}
		}
	}
}

func stopped(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
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
