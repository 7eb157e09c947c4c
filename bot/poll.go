package bot

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
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
//
// With a leader (offsets set), the offset is also kept in the store: a batch
// counts as handed over once telebot took every update of it off its
// channel, and its last id is written to the store, fenced by the leader's
// token, before the getUpdates that confirms it to Telegram (and when
// polling stops). A new leader starts from the stored offset, so it is
// never given an update the old one confirmed, and is given again only a
// batch the old one had not finished handing over. A process whose fenced
// write is refused, or whose lease may have lapsed, stops polling without
// handing anything more over. A handler acts on an update only while this
// process may still lead, or once its own fenced write confirmed the update
// (mayHandle): an update handed over, not yet confirmed, when the lease
// passed (the process was paused between the two) is the new leader's,
// which is given it again.
type poller struct {
	timeout time.Duration
	log     *slog.Logger
	scrub   func(string) string
	// sleep waits between failed polls; tests inject one. nil is
	// retry.Sleep.
	sleep func(ctx context.Context, d time.Duration) error
	last  int
	alive pollClock // for health checks (health.go)

	// offsets keeps the offset; nil without a leader (one process).
	offsets deskbot.FencedNotes
	leader  deskbot.Leadership
	saved   int // the offset last written to the store
	savedAt time.Time
	// confirmed is saved for handlers to read: no other process is given
	// an update up to it.
	confirmed atomic.Int64
	handed    int // the last update telebot took off its channel, batch complete
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
		sleep = retry.Sleep
	}
	backoff := retry.Backoff{Min: 250 * time.Millisecond, Max: 30 * time.Second}
	if p.offsets != nil {
		if !p.loadOffset(ctx, b, sleep) {
			return
		}
		defer p.saveOffset(context.WithoutCancel(ctx), b)
	}
	for ctx.Err() == nil {
		if p.offsets != nil {
			// Before the getUpdates that confirms it to Telegram. While
			// the store cannot be reached nothing is confirmed: the
			// next leader could not know of it.
			if ok, err := p.saveOffset(ctx, b); err != nil {
				wait := backoff.Next()
				p.log.Warn("cannot save the Telegram update offset; retrying", "err", deskbot.ErrorMessage(err), "in", wait)
				if sleep(ctx, wait) != nil {
					return
				}
				continue
			} else if !ok {
				p.log.Warn("another process leads: polling stops")
				return
			}
		}
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
		if p.leader != nil && !p.leader.Valid() {
			// The lease may have passed to another process while this
			// one waited (a pause): the batch is the new leader's.
			p.log.Warn("not handing over updates: this process may no longer lead")
			return
		}
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
		if !handedOver(ctx, dest) {
			return
		}
		p.handed = p.last
	}
}

// handedOver waits until telebot took every update off dest (it hands each
// to the dispatcher at once), or the stop.
func handedOver(ctx context.Context, dest chan tele.Update) bool {
	for len(dest) > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	return true
}

// loadOffset starts from the offset kept in the store, trying until the
// store answers: polling from a guess could be given confirmed updates
// again.
func (p *poller) loadOffset(ctx context.Context, b *tele.Bot, sleep func(context.Context, time.Duration) error) bool {
	backoff := retry.Backoff{Min: 250 * time.Millisecond, Max: 5 * time.Second}
	for {
		v, err := p.offsets.Note(ctx, updateOffsetKey(b.Me.ID, b.URL))
		if err == nil || deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			if id, _ := strconv.Atoi(v); id > p.last {
				p.last = id
			}
			p.saved, p.handed = p.last, p.last
			p.confirmed.Store(int64(p.saved))
			return true
		}
		wait := backoff.Next()
		p.log.Warn("cannot read the Telegram update offset; retrying", "err", deskbot.ErrorMessage(err), "in", wait)
		if sleep(ctx, wait) != nil {
			return false
		}
	}
}

// saveOffset writes the last update handed over, if it moved, with the
// leader's token. false: the store refused the token (another process
// leads).
func (p *poller) saveOffset(ctx context.Context, b *tele.Bot) (bool, error) {
	if p.handed == p.saved && time.Since(p.savedAt) < offsetTTL/2 {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ok, err := p.offsets.PutNoteFenced(ctx, updateOffsetKey(b.Me.ID, b.URL), strconv.Itoa(p.handed), offsetTTL, p.leader.Token())
	if ok {
		p.saved, p.savedAt = p.handed, time.Now()
		p.confirmed.Store(int64(p.saved))
	}
	return ok, err
}

// mayHandle reports whether this process may act on update id now: always
// without a leader; with one, when its own fenced write confirmed id (no
// other process is given it), or while the lease is surely still its own.
// Safe for concurrent use.
func (p *poller) mayHandle(id int) bool {
	if p.offsets == nil || int64(id) <= p.confirmed.Load() {
		return true
	}
	return p.leader.Valid()
}

// mayHandle reports whether this process may act on the update numbered
// id (poller.mayHandle). The bot's own poller answers, held typed since it
// was built: every update, however it reached the handlers, passes the
// same leader check.
func (b *Bot) mayHandle(id int) bool { return b.poll.mayHandle(id) }

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
