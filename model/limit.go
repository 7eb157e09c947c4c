package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// A model's reply is input from outside the service, so it is bounded
// before it is read: a provider that misbehaves (or a man in the middle of a
// local server) must not make the service read an endless body or hand the
// desk thousands of tool calls. A reply past a bound is broken: the next
// backend of the chain takes over, and when every backend fails the chat is
// told once, as for any outage.
const (
	// DefaultMaxReplyBytes bounds the bytes read of one response body. A
	// streamed reply carries about 200 bytes of envelope per token, so 4 MiB
	// holds some 20,000 streamed tokens; an unstreamed one far more.
	DefaultMaxReplyBytes = 4 << 20
	// DefaultMaxToolCalls bounds the tool calls of one reply. A step needs
	// a handful; each call is a model step's worth of work for the desk.
	DefaultMaxToolCalls = 32
)

// tooLargeError is a response body that went past MaxReplyBytes.
type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("answer larger than %d bytes; stopped reading it", e.max)
}

// overCap records, per request, that its body hit the cap, whatever an SDK
// makes of the read error on its way back.
type overCapKey struct{}

func withCapTrace(ctx context.Context) (context.Context, *atomic.Bool) {
	hit := new(atomic.Bool)
	return context.WithValue(ctx, overCapKey{}, hit), hit
}

// cappedClient returns a copy of hc whose response bodies end with an error
// one byte past max.
func cappedClient(hc *http.Client, max int64) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &cappedTransport{base: base, max: max}
	return &c
}

type cappedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	hit, _ := req.Context().Value(overCapKey{}).(*atomic.Bool)
	res.Body = &cappedBody{rc: res.Body, left: t.max, max: t.max, hit: hit}
	return res, nil
}

type cappedBody struct {
	rc        io.ReadCloser
	left, max int64
	hit       *atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &tooLargeError{b.max}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left { // one byte past the cap: there is more
		n, b.left = int(b.left), -1
		if b.hit != nil {
			b.hit.Store(true)
		}
		return n, &tooLargeError{b.max}
	}
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// overCap names the bound a reply went past, if any.
func (c *Config) overCap(err error, hit *atomic.Bool, a attempt) error {
	var tl *tooLargeError
	if errors.As(err, &tl) || hit.Load() {
		return &brokenError{fmt.Sprintf("answer larger than %d bytes; stopped reading it", c.MaxReplyBytes)}
	}
	if err == nil && len(a.calls) > c.MaxToolCalls {
		return c.tooManyCalls()
	}
	return nil
}

// tooManyCalls is the error of a reply with more than MaxToolCalls calls; a
// stream stops being read at the first call past the cap.
func (c *Config) tooManyCalls() error {
	return &brokenError{fmt.Sprintf("answer had more tool calls than the %d allowed", c.MaxToolCalls)}
}
