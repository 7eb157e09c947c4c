package gate_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// lossyProxy relays TCP between a client and Redis. When armed, it lets the
// next script call (EVALSHA) reach Redis and then cuts the connection
// instead of relaying the reply: Redis has applied the transition, the
// client never hears of it, and go-redis retries on a new connection.
type lossyProxy struct {
	ln    net.Listener
	redis string
	armed atomic.Bool
	skip  atomic.Int32 // script calls to let through before the cut
	cuts  atomic.Int32
	wg    sync.WaitGroup
}

func mustLossyProxy(t *testing.T, redisAddr string) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{ln: ln, redis: redisAddr}
	p.wg.Go(p.accept)
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *lossyProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.redis)
		if err != nil {
			c.Close()
			continue
		}
		var scriptSent atomic.Bool
		p.wg.Go(func() { // client -> Redis
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if p.armed.Load() && bytes.Contains(bytes.ToLower(buf[:n]), []byte("evalsha")) && p.skip.Add(-1) < 0 {
						scriptSent.Store(true)
					}
					if _, werr := s.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			s.Close()
		})
		p.wg.Go(func() { // Redis -> client
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && scriptSent.Load() && p.armed.CompareAndSwap(true, false) {
					p.cuts.Add(1)
					break // the reply is lost
				}
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
			s.Close()
			io.Copy(io.Discard, s)
		})
	}
}

// TestLostReplyStillRunsOnce: Redis records a step of the request but the
// reply is lost on the way back, and go-redis retries. For the decision, the
// decider's retry finds its own decision, so the call runs once instead of
// the person being told someone else decided and the call waiting for a
// restart; for the record of the run, the retry finds it recorded.
func TestLostReplyStillRunsOnce(t *testing.T) {
	storetest.NeedsURL(t, "a lossy proxy stands in front of one Redis server")
	for _, tt := range []struct {
		name string
		skip int32
	}{{"decision", 0}, {"record of the run", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFixture(t)
			u, err := url.Parse(storetest.URL())
			if err != nil {
				t.Fatal(err)
			}
			proxy := mustLossyProxy(t, u.Host)
			u.Host = proxy.ln.Addr().String() // same credentials, through the proxy
			via, err := store.Open(t.Context(), store.Options{URL: u.String(), Prefix: f.store.Prefix()})
			if err != nil {
				t.Fatal(err)
			}
			defer via.Close()
			g := gatetest.MustNew(t, f.cfg, via, f.runner, f.clock.Now, quietLog())

			warm := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`) // loads the script
			if _, err := gatetest.Resolve(t.Context(), g, warm.ID, deskbot.Deny, "warm-up", asha); err != nil {
				t.Fatal(err)
			}
			f.mustInbox(t, "main")

			r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
			proxy.skip.Store(tt.skip)
			proxy.armed.Store(true)
			resp, err := gatetest.Resolve(context.Background(), g, r.ID, deskbot.AllowOnce, "", asha)
			if proxy.cuts.Load() != 1 {
				t.Fatalf("the proxy cut %d replies, want 1", proxy.cuts.Load())
			}
			if err != nil {
				t.Fatalf("resolve after a lost reply: %v", err)
			}
			if got := resp.Request.State; got != deskbot.StateRan {
				t.Errorf("state = %s, want ran", got)
			}
			if got := len(f.runner.runs()); got != 1 {
				t.Errorf("runs = %d, want 1", got)
			}
			if inbox := f.mustInbox(t, "main"); len(inbox) != 1 {
				t.Errorf("desk told %d times, want once: %+v", len(inbox), inbox)
			}
			if _, err := gatetest.Resolve(t.Context(), g, r.ID, deskbot.AllowOnce, "", ravi); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
				t.Errorf("a second decider: %v, want conflict", err)
			}
		})
	}
}
