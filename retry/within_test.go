package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/deskbot/deskbot/retry"
)

// An answer that comes in time is the answer, however the goroutines are
// scheduled: Within never reports a prompt fn as timed out.
func TestWithinKeepsAPromptAnswer(t *testing.T) {
	for i := range 20000 {
		v, err := retry.Within(t.Context(), time.Second, func(context.Context) (int, error) { return i, nil })
		if err != nil || v != i {
			t.Fatalf("call %d: %v, %v; want %d and no error", i, v, err, i)
		}
	}
}
