package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/exchange"
)

// stamp is t as the texts write it: India date and time.
func stamp(t time.Time) string { return t.In(deskbot.IST).Format("2006-01-02 15:04") }

// candleCache keeps candles and makes the historical requests, one per
// HistEvery, the approvers' first and then each desk's in turn. It also
// keeps funds and holdings for Fresh.
type candleCache struct {
	h    *Hub
	mu   sync.Mutex
	mem  map[string]memCandles
	fly  map[string]*flight
	jobs map[string][]*flight
	ring []string
	wake chan struct{}

	sf              singleflight.Group
	fundsAt, holdAt time.Time
	fundsV          []deskbot.SegmentFunds
	holdV           []deskbot.Holding
	requests        int64
}

type memCandles struct {
	candles []deskbot.Candle
	at      time.Time
}

// flight is one historical request and everyone waiting for it.
type flight struct {
	key     string
	q       deskbot.CandleQuery
	lane    string
	keep    bool // a span of past days: kept as a file
	done    chan struct{}
	candles []deskbot.Candle
	err     error
}

func (c *candleCache) init(h *Hub) {
	c.h, c.mem, c.fly, c.jobs = h, map[string]memCandles{}, map[string]*flight{}, map[string][]*flight{}
	c.wake = make(chan struct{}, 1)
}

// CandleRequests is how many historical requests the hub has made.
func (h *Hub) CandleRequests() int64 {
	h.candles.mu.Lock()
	defer h.candles.mu.Unlock()
	return h.candles.requests
}

func candleKey(q deskbot.CandleQuery) string {
	return fmt.Sprintf("%s|%s|%d|%d", q.Symbol, q.Interval, q.From.Unix(), q.To.Unix())
}

func (c *candleCache) file(key string) string {
	if c.h.cfg.DataDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.h.cfg.DataDir, "market", "candles", hex.EncodeToString(sum[:16])+".json")
}

// get serves q in lane: from a file or memory when the hub has it, else
// through the scheduler, sharing a request already asked.
func (c *candleCache) get(ctx context.Context, lane string, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	now := c.h.cfg.Now()
	if q.To.After(now) {
		q.To = now
	}
	if err := exchange.CheckCandles(q); err != nil {
		return nil, err
	}
	if _, err := c.h.cfg.Prices.Instrument(ctx, q.Symbol); err != nil {
		return nil, err
	}
	key := candleKey(q)
	y, m, d := now.In(deskbot.IST).Date()
	today := time.Date(y, m, d, 0, 0, 0, 0, deskbot.IST)
	keep := q.To.Before(today)
	if keep {
		if cs, ok := c.read(key); ok {
			return cs, nil
		}
	}
	c.mu.Lock()
	if e, ok := c.mem[key]; ok && time.Since(e.at) < c.h.cfg.CandleFresh {
		c.mu.Unlock()
		return e.candles, nil
	}
	f, ok := c.fly[key]
	if !ok {
		if lane != approvers && len(c.jobs[lane]) >= MaxLaneWaiting {
			c.mu.Unlock()
			return nil, deskbot.Errorf(deskbot.EINVALID, "this desk already has %d candle requests waiting; wait for their answers before asking more", MaxLaneWaiting)
		}
		f = &flight{key: key, q: q, lane: lane, keep: keep, done: make(chan struct{})}
		c.fly[key] = f
		if len(c.jobs[lane]) == 0 && lane != approvers {
			c.ring = append(c.ring, lane)
		}
		c.jobs[lane] = append(c.jobs[lane], f)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-f.done:
		return f.candles, f.err
	case <-ctx.Done():
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "the candles did not come in time; ask again (a shorter span comes sooner)")
	}
}

func (c *candleCache) read(key string) ([]deskbot.Candle, bool) {
	p := c.file(key)
	if p == "" {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	var cs []deskbot.Candle
	if json.Unmarshal(b, &cs) != nil {
		return nil, false
	}
	return cs, true
}

func (c *candleCache) write(key string, cs []deskbot.Candle) {
	p := c.file(key)
	if p == "" {
		return
	}
	b, err := json.Marshal(cs)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(p), 0o700)
	}
	if err == nil {
		tmp := p + ".tmp" + fmt.Sprint(time.Now().UnixNano())
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, p)
		}
		if err != nil {
			os.Remove(tmp)
		}
	}
	if err != nil {
		c.h.cfg.Log.Warn("candles not kept", "err", err)
	}
}

// next takes the next request: the approvers' first, then the desks' in
// turn.
func (c *candleCache) next() *flight {
	c.mu.Lock()
	defer c.mu.Unlock()
	pop := func(lane string) *flight {
		js := c.jobs[lane]
		if len(js) == 0 {
			return nil
		}
		f := js[0]
		c.jobs[lane] = js[1:]
		if len(c.jobs[lane]) == 0 {
			delete(c.jobs, lane)
		}
		return f
	}
	if f := pop(approvers); f != nil {
		return f
	}
	for len(c.ring) > 0 {
		lane := c.ring[0]
		c.ring = c.ring[1:]
		f := pop(lane)
		if f == nil {
			continue
		}
		if len(c.jobs[lane]) > 0 {
			c.ring = append(c.ring, lane)
		}
		return f
	}
	return nil
}

// loop makes the historical requests, at most one per HistEvery.
func (c *candleCache) loop(ctx context.Context) {
	var next time.Time
	for {
		f := c.next()
		if f == nil {
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			}
			continue
		}
		if retrySleepUntil(ctx, next) != nil {
			return
		}
		c.mu.Lock()
		c.requests++
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		cs, err := c.h.cfg.Market.Candles(rctx, f.q)
		cancel()
		// Paced from the answer, as quotes are (quoteLoop).
		next = time.Now().Add(c.h.cfg.HistEvery)
		if err != nil {
			f.err = marketError(err)
		} else {
			f.candles = cs
			if f.keep {
				c.write(f.key, cs)
			}
		}
		c.mu.Lock()
		delete(c.fly, f.key)
		if err == nil {
			now := time.Now()
			for k, e := range c.mem {
				if now.Sub(e.at) >= c.h.cfg.CandleFresh {
					delete(c.mem, k)
				}
			}
			c.mem[f.key] = memCandles{candles: cs, at: now}
		}
		c.mu.Unlock()
		close(f.done)
	}
}

func retrySleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// funds is the broker's funds, kept for Fresh and asked once for all
// who ask together.
func (c *candleCache) funds(ctx context.Context) ([]deskbot.SegmentFunds, error) {
	c.mu.Lock()
	if time.Since(c.fundsAt) < c.h.cfg.Fresh {
		v := c.fundsV
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	v, err, _ := c.sf.Do("funds", func() (any, error) {
		f, err := c.h.cfg.Market.Funds(ctx)
		if err != nil {
			return nil, marketError(err)
		}
		c.mu.Lock()
		c.fundsV, c.fundsAt = f, time.Now()
		c.mu.Unlock()
		return f, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]deskbot.SegmentFunds), nil
}

// holdings is the broker's holdings, kept as funds are.
func (c *candleCache) holdings(ctx context.Context) ([]deskbot.Holding, error) {
	c.mu.Lock()
	if time.Since(c.holdAt) < c.h.cfg.Fresh {
		v := c.holdV
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	v, err, _ := c.sf.Do("holdings", func() (any, error) {
		hs, err := c.h.cfg.Market.Holdings(ctx)
		if err != nil {
			return nil, marketError(err)
		}
		c.mu.Lock()
		c.holdV, c.holdAt = hs, time.Now()
		c.mu.Unlock()
		return hs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]deskbot.Holding), nil
}
