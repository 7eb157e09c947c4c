package bot

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// waits records the waits a retry loop asks for; after stopAfter of them
// it cancels the loop's context.
type waits struct {
	mu        sync.Mutex
	got       []time.Duration
	stopAfter int
	cancel    context.CancelFunc
}

func (w *waits) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 { // a pacing slot that is already due
		return ctx.Err()
	}
	w.mu.Lock()
	w.got = append(w.got, d)
	n := len(w.got)
	w.mu.Unlock()
	if n >= w.stopAfter && w.cancel != nil {
		w.cancel()
	}
	return ctx.Err()
}

func (w *waits) list() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// failingEvents is an event stream whose reads fail as scripted: true
// fails a read, false answers it with nothing.
type failingEvents struct {
	deskbot.EventLog
	mu     sync.Mutex
	script []bool
}

func (f *failingEvents) ReadEventsAfter(ctx context.Context, group, consumer, after string, count int, block time.Duration) ([]deskbot.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := true
	if len(f.script) > 0 {
		fail, f.script = f.script[0], f.script[1:]
	}
	if fail {
		return nil, errors.New("redis: connection refused")
	}
	return nil, nil
}

func (f *failingEvents) AckEvents(ctx context.Context, group string, ids ...string) error {
	return nil
}

const (
	ms  = time.Millisecond
	sec = time.Second
)

// While the event stream cannot be read, the outbox waits 1s, doubling up to
// a minute, and starts again from 1s after a read succeeds.
func TestOutboxBacksOff(t *testing.T) {
	t.Parallel()
	script := []bool{true, true, true, true, true, true, true, true, true, false, true, true}
	ctx, cancel := context.WithCancel(t.Context())
	w := &waits{stopAfter: 11, cancel: cancel}
	o := NewOutbox(OutboxConfig{Sleep: w.Sleep}, &failingEvents{script: script}, nil, nil, quietLog())
	if err := o.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	want := []time.Duration{sec, 2 * sec, 4 * sec, 8 * sec, 16 * sec, 32 * sec, time.Minute, time.Minute, time.Minute,
		sec, 2 * sec}
	if got := w.list(); !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}

// A 5xx or a network error is retried after MinBackoff, doubling up to
// MaxBackoff; a 429 waits what Telegram asked and leaves the doubling alone.
func TestSenderBacksOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     SenderOptions
		failures []telegramtest.Failure
		want     []time.Duration
	}{
		{
			name:     "defaults: 0.5s doubling to 30s",
			failures: []telegramtest.Failure{{Method: "sendMessage", Code: 502, Times: 9}},
			want:     []time.Duration{500 * ms, sec, 2 * sec, 4 * sec, 8 * sec, 16 * sec, 30 * sec, 30 * sec, 30 * sec},
		},
		{
			name:     "tuned bounds",
			opts:     SenderOptions{MinBackoff: 10 * ms, MaxBackoff: 35 * ms},
			failures: []telegramtest.Failure{{Method: "sendMessage", Code: 500, Times: 4}},
			want:     []time.Duration{10 * ms, 20 * ms, 35 * ms, 35 * ms},
		},
		{
			name:     "a maximum below the minimum",
			opts:     SenderOptions{MinBackoff: 20 * ms, MaxBackoff: 10 * ms},
			failures: []telegramtest.Failure{{Method: "sendMessage", Code: 502, Times: 3}},
			want:     []time.Duration{20 * ms, 20 * ms, 20 * ms},
		},
		{
			name: "429 between 5xx",
			failures: []telegramtest.Failure{
				{Method: "sendMessage", Code: 502, Times: 2},
				{Method: "sendMessage", Code: 429, RetryAfter: 3, Times: 1},
				{Method: "sendMessage", Code: 502, Times: 1},
			},
			want: []time.Duration{500 * ms, sec, 3 * sec, 2 * sec},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := telegramtest.New(t, dlToken)
			for _, f := range tt.failures {
				tg.Fail(f)
			}
			b, err := tele.NewBot(tele.Settings{URL: tg.URL, Token: dlToken, Offline: true})
			if err != nil {
				t.Fatal(err)
			}
			w := &waits{}
			opts := tt.opts
			// Pacing gaps too small to show among the waits.
			opts.PerChat, opts.Overall, opts.Sleep, opts.Log = time.Nanosecond, time.Nanosecond, w.Sleep, quietLog()
			clock := newDeliveryClock()
			opts.Now = func() time.Time { // moves on by each wait asked for
				var d time.Duration
				for _, x := range w.list() {
					d += x
				}
				return clock.Now().Add(d)
			}
			if _, err := NewSender(b, opts).Send(t.Context(), 501, "hello", nil); err != nil {
				t.Fatalf("Send: %v", err)
			}
			if got := w.list(); !slices.Equal(got, tt.want) {
				t.Errorf("waits %v, want %v", got, tt.want)
			}
		})
	}
}
