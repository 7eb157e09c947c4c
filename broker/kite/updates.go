package kite

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
	kiteticker "github.com/zerodha/gokiteconnect/v4/ticker"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/retry"
)

// The orders' updates: Kite's day's orders read while any order is open
// (Sync), and the ticker's order updates as they happen. Either moves an
// order only from the version it read (OrderLog.Move), and never back, so
// the two agree whichever is first, and each change is told once.

// Sync reads Kite's day's orders once, when any desk's order is open, and
// moves every open order to what Kite reports of it, matched by its tag:
// its fills are booked and its desk (and, for fills and rejections, the
// chat) told. A pending order (its placing's answer lost, or a crash
// between sending and hearing back) takes Kite's state when Kite holds
// it, and is not placed when Kite's orders still show no order with its
// tag a settling time after it was recorded. Without a session Kite
// takes, Sync asks Kite nothing and returns the login's words. It returns
// how many orders moved. While any desk's GTT is active it reads Kite's
// GTTs too (syncGTTs), first.
func (b *Broker) Sync(ctx context.Context) (int, error) {
	open, err := b.orders.HasOpen(ctx)
	if err != nil {
		return 0, err
	}
	gtts, err := b.gttsFollowed(ctx)
	if err != nil || !open && !gtts {
		return 0, err
	}
	s, err := b.session(ctx)
	if err != nil {
		return 0, err
	}
	orders, err := b.kite.Orders(ctx)
	if IsSession(err) {
		return 0, b.sessionEnded(ctx, s)
	} else if err != nil {
		return 0, err
	}
	n := 0
	if gtts {
		// First: a fired GTT's order joins the open orders moved below.
		m, err := b.syncGTTs(ctx, orders)
		if IsSession(err) {
			return m, b.sessionEnded(ctx, s)
		} else if err != nil {
			return m, err
		}
		n += m
	}
	recs, err := b.orders.Open(ctx)
	if err != nil {
		return n, err
	}
	tagged := byTag(orders)
	for _, rec := range recs {
		got, ok := b.settled(rec, tagged)
		if !ok {
			continue
		}
		if _, moved, err := b.advance(ctx, rec, got, false); err != nil {
			return n, err
		} else if moved {
			n++
		}
	}
	return n, nil
}

// advance records got for the order read as from unless it moved
// meanwhile (moved false, the order as it stands); see move.
func (b *Broker) advance(ctx context.Context, from, got deskbot.PlacedOrder, answered bool) (deskbot.PlacedOrder, bool, error) {
	if got.Filled > from.Filled || got.State == deskbot.OrderRejected {
		answered = false // fills and rejections reach the chat, whoever asked
	}
	if broker.Version(got) == broker.Version(from) && got.ID == from.ID && got.Reason == from.Reason {
		return from, false, nil
	}
	got.Updated = b.now()
	return b.orders.Move(ctx, broker.Version(from), got, answered)
}

// heard moves the order a ticker update names, if it is a desk's open one.
func (b *Broker) heard(ctx context.Context, ko kiteconnect.Order) {
	if ko.Tag == "" {
		return // no desk's
	}
	recs, err := b.orders.Open(ctx)
	if err != nil {
		b.log.WarnContext(ctx, "kite: could not read the open orders for a ticker update", "err", err)
		return
	}
	for _, rec := range recs {
		if rec.Tag != ko.Tag {
			continue
		}
		got, ok := b.settled(rec, map[string]kiteconnect.Order{ko.Tag: ko})
		if !ok {
			return
		}
		if _, _, err := b.advance(ctx, rec, got, false); err != nil {
			// The next Sync reads it again.
			b.log.WarnContext(ctx, "kite: could not record a ticker update", "tag", ko.Tag, "err", err)
		}
		return
	}
}

// Run is the updates' loop, for the leader, until ctx ends: Sync every
// few seconds while any order is open, and Kite's ticker for order updates
// as they happen while a session is on. When Kite ends the session, Sync
// asks Kite nothing until a new login, and the ticker dials again only
// with a new session, after a backoff: nothing retries in a loop.
func (b *Broker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { b.runTicker(ctx) })
	t := time.NewTicker(b.every)
	defer t.Stop()
	for {
		b.syncOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// syncOnce runs Sync, logging what failed: a missing or ended session once
// per session (the login tells the group), anything else each time.
func (b *Broker) syncOnce(ctx context.Context) {
	_, err := b.Sync(ctx)
	switch {
	case err == nil || ctx.Err() != nil:
	case deskbot.ErrorCode(err) == deskbot.EUNAUTHORIZED:
		s, _ := b.login.kept(ctx)
		b.mu.Lock()
		first := !b.warnedAt.Equal(s.At) || b.warnedAt.IsZero()
		b.warnedAt = s.At
		b.mu.Unlock()
		if first {
			b.log.WarnContext(ctx, "kite: orders are not followed until an approver logs in", "err", deskbot.ErrorMessage(err))
		}
	default:
		b.log.WarnContext(ctx, "kite: could not read the day's orders; will try again", "err", err)
	}
}

// sessionWait is how often the ticker's loop looks for a session (in
// Redis, not at Kite) while there is none.
const sessionWait = 2 * time.Second

// runTicker keeps a ticker connection while a session is on. The official
// ticker redials on its own with the token it was built with, which a new
// login makes useless, so each connection is one ticker: when it ends,
// this loop waits (a backoff, reset by a connection that lasted) and
// builds the next with the session as it is then.
func (b *Broker) runTicker(ctx context.Context) {
	back := retry.Backoff{Min: time.Second, Max: time.Minute}
	for ctx.Err() == nil {
		s, err := b.login.Session(ctx)
		if err != nil {
			if retry.Sleep(ctx, sessionWait) != nil {
				return
			}
			continue
		}
		began := time.Now()
		if b.serveTicker(ctx, s) && time.Since(began) > time.Minute {
			back.Reset()
		}
		if retry.Sleep(ctx, back.Next()) != nil {
			return
		}
	}
}

// serveTicker runs one ticker connection under s until it ends, and
// reports whether it connected.
func (b *Broker) serveTicker(ctx context.Context, s deskbot.BrokerSession) bool {
	tk := kiteticker.New(b.kite.apiKey, s.AccessToken)
	tk.SetRootURL(b.ticker)
	// Auto-reconnect must stay on: without it the official ticker goes on
	// with a connection that failed to dial. No retries: this loop redials.
	tk.SetAutoReconnect(true)
	tk.SetReconnectMaxRetries(0)
	var connected atomic.Bool
	tk.OnConnect(func() {
		connected.Store(true)
		b.setTickerLive(true)
		b.log.InfoContext(ctx, "kite: the ticker is connected: order updates arrive as they happen")
	})
	tk.OnError(func(err error) {
		b.log.InfoContext(ctx, "kite: ticker", "err", scrub(err.Error(), append(b.kite.secrets(), s.AccessToken)...))
	})
	tk.OnOrderUpdate(func(o kiteconnect.Order) {
		uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		b.heard(uctx, o)
	})
	tk.ServeWithContext(ctx)
	b.setTickerLive(false)
	return connected.Load()
}

func (b *Broker) setTickerLive(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tickerLive = on
}

// TickerLive reports whether the ticker is connected now (for /healthz
// and the operator's checks).
func (b *Broker) TickerLive() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tickerLive
}

// ProbeTicker dials Kite's ticker (tickerURL, "" for the default) with the
// session s, as the update loop does, and hangs up at once: whether order
// updates can arrive as they happen. Its error names no secret.
func (c *Client) ProbeTicker(ctx context.Context, tickerURL string, s deskbot.BrokerSession) error {
	u, err := CheckTickerURL(tickerURL)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("api_key", c.apiKey)
	q.Set("access_token", s.AccessToken)
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, u.String(), nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		why := scrub(err.Error(), append(c.secrets(), s.AccessToken)...)
		if resp != nil {
			why = resp.Status
		}
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "the ticker at %s did not take the session: %s", u.Host, why)
	}
	return conn.Close()
}
