package kite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

func TestPlaceLimitAndMarketOrders(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	for _, tc := range []struct {
		name       string
		p          kiteconnect.OrderParams
		wantStatus string
		wantMP     float64
	}{
		{"limit below the market rests", limitBuy("lim1"), kitetest.StatusOpen, 0},
		// The fake refuses a market order without market_protection, so
		// a placed one proves Place sent -1.
		{"market fills with protection -1", marketBuy("mkt1"), kitetest.StatusComplete, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := mustOrder(t, s, mustPlace(t, c, tc.p))
			if o.Status != tc.wantStatus || o.Tag != tc.p.Tag || o.MarketProtection != tc.wantMP {
				t.Errorf("got %s tag %q protection %v, want %s tag %q protection %v",
					o.Status, o.Tag, o.MarketProtection, tc.wantStatus, tc.p.Tag, tc.wantMP)
			}
		})
	}
}

func TestPlaceAfterLostAnswerMakesOneOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		how  kitetest.Loss
	}{
		{"connection dropped", kitetest.LoseByDrop},
		{"504 without a body", kitetest.LoseBy504},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustFake(t)
			c := mustClient(t, s, Options{})
			s.LoseAnswers(tc.how, 1)
			id := mustPlace(t, c, limitBuy("lost1"))
			if got, want := s.OrdersPlaced("lost1"), 1; got != want {
				t.Fatalf("orders with the tag at the fake: got %d, want %d", got, want)
			}
			if got := mustOrder(t, s, id).Tag; got != "lost1" {
				t.Errorf("Place answered %s whose tag is %q, want lost1", id, got)
			}
			if got, want := s.Requests(http.MethodPost, "/orders/*"), 1; got != want {
				t.Errorf("placements sent: got %d, want %d", got, want)
			}
		})
	}
}

func TestPlaceResendsOnlyWhenTheOrdersShowNone(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	// A 503 before Kite made anything: the day's orders show no tag, so a
	// second send is safe and makes the one order.
	s.Fail(kitetest.Failure{Method: http.MethodPost, Path: "/orders/*", Code: http.StatusServiceUnavailable, Times: 1})
	mustPlace(t, c, limitBuy("resend1"))
	if got, want := s.OrdersPlaced("resend1"), 1; got != want {
		t.Errorf("orders with the tag: got %d, want %d", got, want)
	}
	if got, want := s.Requests(http.MethodPost, "/orders/*"), 2; got != want {
		t.Errorf("placements sent: got %d, want %d", got, want)
	}
}

func TestPlaceAfterAClientTimeoutWaitsForKiteToLand(t *testing.T) {
	s := mustFake(t)
	// The HTTP client gives up at 100 ms while Kite takes 300 ms and then
	// makes the order: a read of the orders right after the timeout shows
	// nothing, and only the settling time keeps Place from sending again.
	c := mustClient(t, s, Options{HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}})
	c.settle = time.Second
	s.Slow(http.MethodPost, "/orders/*", 300*time.Millisecond)
	id := mustPlace(t, c, limitBuy("late1"))
	if got, want := s.OrdersPlaced("late1"), 1; got != want {
		t.Fatalf("orders with the tag: got %d, want %d", got, want)
	}
	if got := mustOrder(t, s, id).Tag; got != "late1" {
		t.Errorf("Place answered %s whose tag is %q, want late1", id, got)
	}
	if got, want := s.Requests(http.MethodPost, "/orders/*"), 1; got != want {
		t.Errorf("placements sent: got %d, want %d", got, want)
	}
}

func TestPlaceSameTagTwiceMakesOneOrder(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	first := mustPlace(t, c, limitBuy("twice1"))
	second := mustPlace(t, c, limitBuy("twice1"))
	if first != second {
		t.Errorf("second Place answered %s, want the first order %s", second, first)
	}
	if got, want := s.OrdersPlaced("twice1"), 1; got != want {
		t.Errorf("orders with the tag: got %d, want %d", got, want)
	}
	if got, want := s.Requests(http.MethodPost, "/orders/*"), 1; got != want {
		t.Errorf("placements sent: got %d, want %d", got, want)
	}
}

func TestConcurrentPlacesOfOneTagMakeOneOrder(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { ids[i] = mustPlace(t, c, limitBuy("same1")) })
	}
	wg.Wait()
	for i, id := range ids {
		if id != ids[0] {
			t.Errorf("Place %d answered %s, want %s", i, id, ids[0])
		}
	}
	if got, want := s.OrdersPlaced("same1"), 1; got != want {
		t.Errorf("orders with the tag: got %d, want %d", got, want)
	}
}

func TestTooManyRequestsWaitsAndSucceeds(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		call               func(context.Context, *Client) error
	}{
		{"place", http.MethodPost, "/orders/*", func(ctx context.Context, c *Client) error {
			_, err := c.Place(ctx, "busy1", limitBuy("busy1"), "")
			return err
		}},
		{"orders", http.MethodGet, "/orders", func(ctx context.Context, c *Client) error {
			_, err := c.Orders(ctx)
			return err
		}},
		{"ltp", http.MethodGet, "/quote/ltp", func(ctx context.Context, c *Client) error {
			_, err := c.LTP(ctx, "NSE:INFY")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustFake(t)
			// Quotes are limited to 1 a second: lifted here so that four
			// retries take milliseconds, not seconds.
			c := mustClient(t, s, Options{QuotesPerSecond: 100})
			const n = 4
			s.TooManyRequests(tc.method, tc.path, n)
			if err := tc.call(ctxFor(t, 10*time.Second), c); err != nil {
				t.Fatalf("got %v, want success after %d 429s", err, n)
			}
			if got := s.Served429(); got != n {
				t.Errorf("429s served: got %d, want %d", got, n)
			}
		})
	}
	t.Run("place makes one order", func(t *testing.T) {
		s := mustFake(t)
		c := mustClient(t, s, Options{})
		s.TooManyRequests(http.MethodPost, "/orders/*", 3)
		mustPlace(t, c, marketBuy("busy2"))
		if got := s.OrdersPlaced("busy2"); got != 1 {
			t.Errorf("orders with the tag: got %d, want 1", got)
		}
	})
}

func TestRateLimitKeepsManyOrdersUnderKitesLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 3 s")
	}
	s := mustFake(t)
	// Kite's limits scaled up so that 50 orders take about 2 s, the same on
	// both sides: the client must pace itself to the fake's count.
	s.SetLimits(&kitetest.Limits{OrdersPerSecond: 25, OrdersPerMinute: 400, QuotesPerSecond: 1, OthersPerSecond: 25})
	c := mustClient(t, s, Options{OrdersPerSecond: 25, OrdersPerMinute: 400, CallsPerSecond: 25})
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = c.Place(ctxFor(t, 30*time.Second), fmt.Sprintf("rate%d", i), limitBuy(fmt.Sprintf("rate%d", i)), "")
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("order %d: %v", i, err)
		}
	}
	if got := s.AllOrdersPlaced(); got != n {
		t.Errorf("orders placed: got %d, want %d", got, n)
	}
	if got := s.Served429(); got != 0 {
		t.Errorf("the fake answered %d 429s, want none: the client must keep within the limits", got)
	}
}

func TestLimiterHoldsASlotUntilAWindowAfterTheAnswer(t *testing.T) {
	clock := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		clock = clock.Add(d)
		return nil
	}
	l := newLimiter(now, sleep, rule{2, time.Second}, rule{3, time.Minute})
	ctx := context.Background()
	for i, tc := range []struct {
		advance   time.Duration // before acquiring
		wantSleep []time.Duration
	}{
		{0, nil},
		{100 * time.Millisecond, nil},
		{0, []time.Duration{900 * time.Millisecond}},    // the first answer's second must pass
		{0, []time.Duration{time.Minute - time.Second}}, // the minute's three are used
	} {
		clock = clock.Add(tc.advance)
		slept = nil
		release, err := l.acquire(ctx)
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		release()
		if fmt.Sprint(slept) != fmt.Sprint(tc.wantSleep) {
			t.Errorf("acquire %d slept %v, want %v", i, slept, tc.wantSleep)
		}
	}
}

func TestLimiterWaitsForCallsInFlight(t *testing.T) {
	l := newLimiter(time.Now, func(ctx context.Context, d time.Duration) error { return nil }, rule{1, time.Millisecond})
	release, err := l.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire while the one slot is in flight: got %v, want the deadline", err)
	}
	release()
	time.Sleep(2 * time.Millisecond)
	if _, err := l.acquire(context.Background()); err != nil {
		t.Fatalf("acquire after the answer: %v", err)
	}
}

func TestExpiredSessionIsASessionError(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	tok := c.accessToken()
	s.ExpireSession()
	for _, tc := range []struct {
		name string
		call func(context.Context) error
	}{
		{"place", func(ctx context.Context) error { _, err := c.Place(ctx, "exp1", limitBuy("exp1"), ""); return err }},
		{"orders", func(ctx context.Context) error { _, err := c.Orders(ctx); return err }},
		{"profile", func(ctx context.Context) error { _, err := c.Profile(ctx); return err }},
		{"ltp", func(ctx context.Context) error { _, err := c.LTP(ctx, "NSE:INFY"); return err }},
		{"cancel", func(ctx context.Context) error { return c.Cancel(ctx, "", "100000") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(ctxFor(t, 5*time.Second))
			if !IsSession(err) {
				t.Fatalf("got %v, want a session error", err)
			}
			if got, want := deskbot.ErrorCode(err), deskbot.EUNAUTHORIZED; got != want {
				t.Errorf("code: got %q, want %q", got, want)
			}
			if strings.Contains(err.Error(), tok) {
				t.Errorf("error %q holds the access token", err)
			}
		})
	}
	if got := s.AllOrdersPlaced(); got != 0 {
		t.Errorf("orders placed without a session: %d", got)
	}
}

func TestCallsEndWithTheirContextWhileKiteIsSlow(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		call               func(context.Context, *Client) error
	}{
		{"place", http.MethodPost, "/orders/*", func(ctx context.Context, c *Client) error {
			_, err := c.Place(ctx, "slow1", limitBuy("slow1"), "")
			return err
		}},
		{"place while reading orders", http.MethodGet, "/orders", func(ctx context.Context, c *Client) error {
			_, err := c.Place(ctx, "slow2", limitBuy("slow2"), "")
			return err
		}},
		{"profile", http.MethodGet, "/user/profile", func(ctx context.Context, c *Client) error {
			_, err := c.Profile(ctx)
			return err
		}},
		{"ltp", http.MethodGet, "/quote/ltp", func(ctx context.Context, c *Client) error {
			_, err := c.LTP(ctx, "NSE:INFY")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustFake(t)
			c := mustClient(t, s, Options{})
			s.Slow(tc.method, tc.path, 10*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := tc.call(ctx, c)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("returned after %v, want soon after the 200ms deadline", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want the context's error", err)
			}
		})
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	tok := c.accessToken()
	// A hostile or careless answer that echoes the secrets and an address.
	echo := fmt.Sprintf("bad token %s:%s secret %s at %s/orders?access_token=%s", testKey, tok, testSecret, s.URL, tok)
	for _, tc := range []struct {
		name string
		f    kitetest.Failure
		code string
	}{
		{"refusal", kitetest.Failure{Code: 400, ErrorType: kitetest.InputException, Message: echo}, deskbot.EINVALID},
		{"gateway", kitetest.Failure{Code: 502, Message: echo}, deskbot.EUNAVAILABLE},
		{"permission", kitetest.Failure{Code: 403, ErrorType: kitetest.PermissionException, Message: echo}, deskbot.EUNAUTHORIZED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Path, tc.f.Times = "/user/profile", 1
			s.Fail(tc.f)
			_, err := c.Profile(ctxFor(t, 5*time.Second))
			if got := deskbot.ErrorCode(err); got != tc.code {
				t.Fatalf("got %v (code %q), want code %q", err, got, tc.code)
			}
			for _, secret := range []string{tok, testSecret, s.URL} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q holds %q", err, secret)
				}
			}
		})
	}
	t.Run("login with a wrong secret", func(t *testing.T) {
		rt := s.Login(testUser)
		_, _, _, err := c.GenerateSession(ctxFor(t, 5*time.Second), rt, "wrongsecretvalue")
		if err == nil {
			t.Fatal("got no error for a wrong secret")
		}
		for _, secret := range []string{"wrongsecretvalue", rt, tok} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds %q", err, secret)
			}
		}
	})
}

func TestRefusalsAreInvalidAndNotRetried(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	p := limitBuy("tick1")
	p.Price = 1490.03 // off INFY's 0.05 tick
	_, err := c.Place(ctxFor(t, 5*time.Second), "tick1", p, "")
	if got, want := deskbot.ErrorCode(err), deskbot.EINVALID; got != want {
		t.Fatalf("got %v (code %q), want %q", err, got, want)
	}
	if !strings.Contains(deskbot.ErrorMessage(err), "Tick size") {
		t.Errorf("message %q does not carry Kite's reason", deskbot.ErrorMessage(err))
	}
	if got := s.Requests(http.MethodPost, "/orders/*"); got != 1 {
		t.Errorf("placements sent: got %d, want 1", got)
	}
}

func TestKiteDownIsUnavailable(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	s.Fail(kitetest.Failure{Path: "/user/profile", Code: http.StatusServiceUnavailable})
	_, err := c.Profile(ctxFor(t, 5*time.Second))
	if got, want := deskbot.ErrorCode(err), deskbot.EUNAVAILABLE; got != want {
		t.Errorf("got %v (code %q), want %q", err, got, want)
	}
	s.Close()
	_, err = c.Orders(ctxFor(t, 5*time.Second))
	if got, want := deskbot.ErrorCode(err), deskbot.EUNAVAILABLE; got != want {
		t.Errorf("with Kite gone: got %v (code %q), want %q", err, got, want)
	}
}

func TestThinCalls(t *testing.T) {
	s := mustFake(t)
	c := mustClient(t, s, Options{})
	ctx := ctxFor(t, 10*time.Second)
	if user, err := c.Profile(ctx); err != nil || user != testUser {
		t.Errorf("Profile: got %q, %v, want %q", user, err, testUser)
	}
	prices, err := c.LTP(ctx, "NSE:INFY", "NSE:NOSUCH")
	if err != nil || len(prices) != 1 || prices["NSE:INFY"] != 1500 {
		t.Errorf("LTP: got %v, %v, want NSE:INFY at 1500 only", prices, err)
	}
	id := mustPlace(t, c, limitBuy("thin1"))
	orders, err := c.Orders(ctx)
	if err != nil || len(orders) != 1 || orders[0].OrderID != id {
		t.Fatalf("Orders: got %v, %v, want the one order %s", orders, err, id)
	}
	if err := c.Cancel(ctx, "", id); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if got := mustOrder(t, s, id).Status; got != kitetest.StatusCancelled {
		t.Errorf("status after Cancel: got %q, want %q", got, kitetest.StatusCancelled)
	}
	if err := c.Cancel(ctx, "", id); deskbot.ErrorCode(err) != deskbot.EINVALID {
		t.Errorf("second Cancel: got %v, want a refusal", err)
	}
}

// BenchmarkPlace measures Place (a read of the day's orders, then the
// placement) against the fake with limits off; BenchmarkBarePOST is the
// floor: the same form posted by net/http alone.
func BenchmarkPlace(b *testing.B) {
	s := mustFake(b)
	s.SetLimits(nil)
	c := mustClient(b, s, Options{OrdersPerSecond: 1 << 30, OrdersPerMinute: 1 << 30, CallsPerSecond: 1 << 30})
	b.ResetTimer()
	for i := range b.N {
		mustPlace(b, c, limitBuy(fmt.Sprintf("bench%d", i)))
	}
}

func BenchmarkBarePOST(b *testing.B) {
	s := mustFake(b)
	s.SetLimits(nil)
	c := mustClient(b, s, Options{})
	post := barePOST(s.URL, c.accessToken())
	b.ResetTimer()
	for i := range b.N {
		post(b, fmt.Sprintf("bench%d", i))
	}
}

// barePOST posts a buy limit order of one INFY at 1,490 tagged tag to the
// fake at base, with net/http alone: the floor a placement is measured
// against.
func barePOST(base, accessToken string) func(b *testing.B, tag string) {
	auth := "token " + testKey + ":" + accessToken
	hc := &http.Client{Timeout: 5 * time.Second}
	return func(b *testing.B, tag string) {
		b.Helper()
		form := url.Values{
			"exchange": {"NSE"}, "tradingsymbol": {"INFY"}, "transaction_type": {"BUY"}, "order_type": {"LIMIT"},
			"quantity": {"1"}, "price": {"1490"}, "product": {"MIS"}, "validity": {"DAY"}, "tag": {tag},
		}
		req, err := http.NewRequest(http.MethodPost, base+"/orders/regular", strings.NewReader(form.Encode()))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Kite-Version", "3")
		req.Header.Set("Authorization", auth)
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{"600", time.Minute}, // capped at a minute; the loop waits again if Kite still refuses
		{"soon", 0},
		{"-3", 0},
	} {
		ex := &roundTrip{retryHdr: tc.header}
		if got := ex.retryAfter(); got != tc.want {
			t.Errorf("Retry-After %q: got %v, want %v", tc.header, got, tc.want)
		}
	}
}
