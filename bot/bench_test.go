package bot_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
)

// BenchmarkTapToRun measures the time from a tap on Allow once arriving at
// Telegram (injected into the fake Bot API on loopback) to the held call
// starting: the long poll's wake-up, telebot, the approver check, the
// gate's decision (a read and one Lua transition on real Redis) and the
// goroutine that runs the call. The floor it is compared with is one Redis
// round trip (PING) on the same connection pool, measured in the same run.
//
//	go test ./bot -run '^$' -bench TapToRun -benchtime 200x
func BenchmarkTapToRun(b *testing.B) {
	h := mustE2E(b)
	ctx := b.Context()
	floor := pingFloor(b, h)

	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		r, _, err := h.gate.Hold(ctx, "alpha", "bench", deskbot.ToolCall{ID: "c", Name: "place_order", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		// The message need not exist for the tap: the data names the request.
		h.tg.InjectCallback(asha, groupID, 1, bot.CallbackData(bot.ActAllowOnce, r.ID))
		select {
		case <-h.tool.Started:
		case <-time.After(10 * time.Second):
			b.Fatal("the held call did not start within 10s of the tap")
		}
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(floor.Nanoseconds()), "ping-ns")
	b.ReportMetric(perOp/float64(floor.Nanoseconds()), "x-ping")
}

// pingFloor is the mean time of one Redis PING.
func pingFloor(b *testing.B, h *e2e) time.Duration {
	b.Helper()
	const n = 500
	start := time.Now()
	for range n {
		if err := h.st.Ping(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / n
}
