package kite

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
)

// Kite (or whatever answers in its place) echoing the api secret and the
// session's access token back in its errors: no error the broker returns,
// and no line it logs, holds either.
func TestBrokerNeverLeaksSecrets(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{every: 20 * time.Millisecond})
	toks := r.kt.AccessTokens()
	if len(toks) != 1 {
		t.Fatalf("access tokens at the fake: %d, want 1", len(toks))
	}
	tok := toks[0]
	echo := fmt.Sprintf("bad token %s:%s secret %s", testKey, tok, testSecret)
	mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490)) // an open order, so Sync reads Kite
	var errs []error
	for _, tc := range []struct {
		name string
		f    kitetest.Failure
		call func(ctx context.Context) error
	}{
		{"refused order", kitetest.Failure{Method: http.MethodPost, Path: "/orders/*", Code: 400, ErrorType: kitetest.InputException, Message: echo, Times: 1},
			func(ctx context.Context) error {
				_, err := b.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), limit("NSE:INFY", deskbot.Buy, 1, 1490))
				return err
			}},
		{"lost answer", kitetest.Failure{Method: http.MethodPost, Path: "/orders/*", Code: 503, Message: echo, Times: 1},
			func(ctx context.Context) error {
				_, err := b.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), limit("NSE:INFY", deskbot.Buy, 1, 1490))
				return err
			}},
		{"orders read", kitetest.Failure{Method: http.MethodGet, Path: "/orders", Code: 502, Message: echo, Times: 1},
			func(ctx context.Context) error { _, err := b.Sync(ctx); return err }},
		{"margins", kitetest.Failure{Method: http.MethodPost, Path: "/margins/orders", Code: 400, ErrorType: kitetest.InputException, Message: echo, Times: 1},
			func(ctx context.Context) error {
				_, _, err := b.Margin(ctx, limit("NSE:INFY", deskbot.Buy, 1, 1490))
				return err
			}},
		{"run", kitetest.Failure{Method: http.MethodGet, Path: "/orders", Code: 500, Message: echo, Times: 3},
			func(ctx context.Context) error {
				ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				b.Run(ctx)
				return nil
			}},
	} {
		r.kt.Fail(tc.f)
		if err := tc.call(ctxFor(t, 20*time.Second)); err != nil {
			errs = append(errs, err)
		}
		r.kt.ClearFaults()
	}
	r.kt.ExpireSession() // the ticker's dial is refused, the next call says the session ended
	_, err := b.PlaceOrder(ctxFor(t, 10*time.Second), "alpha", deskbottest.NewKey(), limit("NSE:INFY", deskbot.Buy, 1, 1490))
	errs = append(errs, err)
	if len(errs) < 3 {
		t.Fatalf("only %d calls failed: the hostile answers were not served", len(errs))
	}
	logs := r.logs.String()
	if !strings.Contains(logs, "bad token") {
		t.Fatalf("the log holds none of the hostile answers, so it proves nothing:\n%s", logs)
	}
	for _, secret := range []string{tok, testSecret} {
		for _, err := range errs {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds a secret", err)
			}
		}
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret:\n%s", logs)
		}
	}
}
