package bot

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// lockedBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A part built without a logger logs nowhere, never through slog's default
// logger: that one ignores LOG_FORMAT and LOG_LEVEL and skips the service's
// secret scrubber.
func TestNoLoggerLogsNowhere(t *testing.T) {
	t.Parallel()
	var got lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&got, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	tg := telegramtest.New(t, dlToken)
	b, err := New(Config{Token: dlToken, APIURL: tg.URL, ChatID: dlGroup, Approvers: []int64{1}}, Deps{}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.explain(t.Context(), "a system failure", errors.New("boom")) // logged as an error

	tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 502, Times: 1})
	s := NewSender(b.out, SenderOptions{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if _, err := s.Send(t.Context(), dlGroup, "hello", nil); err != nil { // the 502 is logged as a retry
		t.Fatalf("Send: %v", err)
	}

	o := NewOutbox(OutboxConfig{}, nil, nil, s, nil)
	if err := o.request(t.Context(), deskbot.Event{ID: "1-0", Kind: deskbot.EventUserRequest}); err != nil { // logged as skipped
		t.Fatalf("request: %v", err)
	}

	if got.String() != "" {
		t.Errorf("logged through slog's default logger:\n%s", got.String())
	}
}
