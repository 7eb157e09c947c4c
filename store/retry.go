package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/deskbot/deskbot/retry"
	"github.com/redis/go-redis/v9"
)

// DefaultRetryFor is how long a command that met a short outage is retried
// when Options.RetryFor is not set: longer than a restart's LOADING on a
// small data set, go-redis's once-a-second probe of a server it saw die,
// and a Sentinel failover on a quick down-after-milliseconds; short enough
// that a person who taps during a real outage hears of it while still
// looking at the chat.
const DefaultRetryFor = 5 * time.Second

// The rule, in one place for every command the store and the paper broker
// send: a command that failed before Redis ran it (the connection could
// not be made, or the server said it is loading, has no primary, or is a
// replica now) is sent again, with retry.Backoff between tries, until it
// goes through or RetryFor has passed since the first try; then the caller
// gets the last error, an EUNAVAILABLE once wrapped. A command that may
// have run (a connection lost after it was sent) is not sent again here:
// go-redis's own retries, and the transition's decision token, deal with
// those. Before Open's first ping answered nothing is retried, so a service
// that cannot reach Redis at its start says so at once.

// retryingKey marks a context whose commands are already inside a retry,
// so a nested client (a Conn taken for WAIT) does not retry again within.
type retryingKey struct{}

// retry runs f until it succeeds, fails for good, or RetryFor has passed.
// f says whether its failure may be tried again.
func (s *Store) retry(ctx context.Context, f func(ctx context.Context) (again bool, err error)) error {
	if !s.sh.up.Load() || ctx.Value(retryingKey{}) != nil {
		_, err := f(ctx)
		return err
	}
	ctx = context.WithValue(ctx, retryingKey{}, true)
	deadline := time.Now().Add(s.opts.RetryFor)
	wait := retry.Backoff{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}
	for {
		again, err := f(ctx)
		if err == nil || !again {
			return err
		}
		d := wait.Next()
		if time.Now().Add(d).After(deadline) || retry.Sleep(ctx, d) != nil {
			return err
		}
	}
}

// transient reports whether err says Redis did not run the command and may
// run it in a moment.
func transient(err error) bool {
	if err == nil {
		return false // the common case, without errors.As's reflection
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, p := range []string{"LOADING", "MASTERDOWN", "READONLY", "CLUSTERDOWN", "TRYAGAIN"} {
		if strings.HasPrefix(re.Error(), p) {
			return true
		}
	}
	return false
}

// blipHook applies retry to every command and pipeline of the client.
type blipHook struct{ s *Store }

func (h blipHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h blipHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.s.retry(ctx, func(ctx context.Context) (bool, error) {
			cmd.SetErr(nil)
			err := next(ctx, cmd)
			return transient(err), err
		})
	}
}

func (h blipHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.s.retry(ctx, func(ctx context.Context) (bool, error) {
			for _, c := range cmds {
				c.SetErr(nil)
			}
			err := next(ctx, cmds)
			if !transient(err) {
				return false, err
			}
			for _, c := range cmds {
				if e := c.Err(); e == nil || !transient(e) {
					return false, err // part of it ran: not sent again
				}
			}
			return true, err
		})
	}
}
