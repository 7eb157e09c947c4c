package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// TestTelegramOutage has two desks talk while Telegram first refuses every
// message (502), then is unreachable, then hangs, then answers 429s. Every
// message arrives afterwards, once, in order per desk, and the sends keep
// to Telegram's pacing.
func TestTelegramOutage(t *testing.T) {
	const perDesk = 6
	desks := []string{"alpha", "beta"}
	w := newWorld(t, map[string]string{"DESKS": strings.Join(desks, ",")})
	outage := make(chan struct{})
	var closeOnce sync.Once
	begin := func() { closeOnce.Do(func() { close(outage) }) }
	t.Cleanup(begin)
	var mu sync.Mutex
	finished := 0
	// Each desk says perDesk numbered messages in one turn: five through
	// send_message, the last as its final words.
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		desk := deskOf(r)
		if strings.Contains(lastUser(r), "later") {
			return modeltest.Text(desk + " said later")
		}
		if !strings.Contains(lastUser(r), "talk") {
			return modeltest.Text("ok")
		}
		<-outage
		n := len(r.ToolResults()) + 1
		if n < perDesk {
			return modeltest.Calls(modeltest.ToolCall{Name: "send_message", Arguments: fmt.Sprintf(`{"text":"%s-msg-%d"}`, desk, n)})
		}
		mu.Lock()
		finished++
		mu.Unlock()
		return modeltest.Text(fmt.Sprintf("%s-msg-%d", desk, n))
	})

	w.start()
	w.tg.Limit(&telegramtest.Limits{PerChat: 900 * time.Millisecond, PerGroupPerMinute: 20})
	for _, d := range desks {
		w.tell(d, "talk")
	}
	deskbottest.EventuallyWithin(t, 20*time.Second, "both tells acknowledged", func() bool { return len(w.tg.Sent("setMessageReaction")) == 2 })

	start := time.Now()
	w.tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 502}) // refuses
	begin()
	deskbottest.EventuallyWithin(t, 30*time.Second, "both desks said everything", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return finished == len(desks)
	})
	time.Sleep(2 * time.Second) // the outbox retries against the 502s a while
	w.tg.Down(true)             // unreachable
	time.Sleep(2 * time.Second)
	w.tg.Down(false)
	w.tg.ClearFailures()
	w.tg.Hang("sendMessage", 0) // hangs
	time.Sleep(2 * time.Second)
	w.tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 429, RetryAfter: 1, Times: 3})
	w.tg.Release()
	outageFor := time.Since(start)

	want := len(desks) * perDesk
	token := regexp.MustCompile(`\b(alpha|beta)-msg-(\d+)\b`)
	deskbottest.EventuallyWithin(t, 90*time.Second, "every desk message delivered", func() bool {
		n := 0
		for _, m := range w.tg.BotMessages(groupID) {
			n += len(token.FindAllString(m.Plain, -1))
		}
		return n >= want
	})
	delivered := time.Since(start)
	// A duplicate would show before a later message: the outbox delivers
	// in order.
	for _, d := range desks {
		w.queue(d, "later")
	}
	deskbottest.EventuallyWithin(t, 90*time.Second, "the later messages delivered", func() bool {
		return w.countBot("alpha said later") == 1 && w.countBot("beta said later") == 1
	})

	seen := map[string][]int{}
	for _, m := range w.tg.BotMessages(groupID) {
		for _, g := range token.FindAllStringSubmatch(m.Plain, -1) {
			n, _ := strconv.Atoi(g[2])
			seen[g[1]] = append(seen[g[1]], n)
		}
	}
	for _, d := range desks {
		var wantSeq []int
		for i := 1; i <= perDesk; i++ {
			wantSeq = append(wantSeq, i)
		}
		if got := seen[d]; fmt.Sprint(got) != fmt.Sprint(wantSeq) {
			w.dumpChat()
			t.Errorf("%s's messages arrived as %v, want %v (each once, in order)", d, got, wantSeq)
		}
	}

	// Pacing, as Telegram saw it.
	var accepted []time.Time
	injected429, extra429 := 0, 0
	var retryGaps []time.Duration
	calls := w.tg.Calls("sendMessage")
	for i, c := range calls {
		switch {
		case c.OK() && c.ChatID == groupID:
			accepted = append(accepted, c.At)
		case c.Status == 429 && strings.Contains(c.Description, "retry after 1") && injected429 < 3:
			injected429++
			if i+1 < len(calls) {
				retryGaps = append(retryGaps, calls[i+1].At.Sub(c.At))
			}
		case c.Status == 429:
			extra429++
		}
	}
	minGap, maxPerMin := pacing(accepted)
	if minGap < 900*time.Millisecond {
		t.Errorf("two messages to the group %v apart; Telegram allows about one a second", minGap)
	}
	if maxPerMin > 20 {
		t.Errorf("%d messages to the group within a minute; Telegram allows 20", maxPerMin)
	}
	if extra429 > 0 {
		t.Errorf("the sender tripped the flood limit %d times by itself", extra429)
	}
	for _, g := range retryGaps {
		if g < 950*time.Millisecond {
			t.Errorf("a send %v after a 429 with retry_after=1", g)
		}
	}
	summary(t, "telegram-outage", "outage=%v(502s, down, hang, 3x429) messages=%d delivered_once_in_order=yes all_delivered_after=%v sends=%d min_gap=%v max_per_minute=%d self_inflicted_429=%d",
		outageFor.Round(time.Millisecond), want, delivered.Round(time.Millisecond), len(accepted), minGap.Round(time.Millisecond), maxPerMin, extra429)
}

// pacing returns the least gap between consecutive sends and the most sends
// within any one minute.
func pacing(at []time.Time) (minGap time.Duration, maxPerMin int) {
	minGap = time.Hour
	for i := range at {
		if i > 0 {
			minGap = min(minGap, at[i].Sub(at[i-1]))
		}
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < time.Minute; j++ {
			n++
		}
		maxPerMin = max(maxPerMin, n)
	}
	return minGap, maxPerMin
}
