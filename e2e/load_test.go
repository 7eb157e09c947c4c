package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/gate/gatetest"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/model/modeltest"
)

const (
	loadDesks    = 10
	callsPerDesk = 100 // 10 desks × 100 = 1,000 held calls
)

// fate is what the drill's approvers do with one request.
type fate struct {
	id    string
	desk  string
	sym   string
	taps  []tap // in the order injected; the first applied wins
	lapse bool  // nobody answers
}

type tap struct {
	who    int // index into approvers
	action string
	arg    string // the button's: the request id, and a confirmation's terms
	query  string
	at     time.Time
}

// TestLoad has ten desks each hold 100 guarded calls at once (1,000 open
// requests), then five approvers decide them in random order, a third of
// them tapped twice (a double tap or two people at once), and leave a tenth
// to lapse. Every request is decided or lapsed exactly once, no call runs
// without an allow, none runs twice, and the chat keeps Telegram's pacing.
func TestLoad(t *testing.T) {
	var names []string
	for i := range loadDesks {
		names = append(names, fmt.Sprintf("d%d", i))
	}
	w := newWorld(t, map[string]string{
		"DESKS":            strings.Join(names, ","),
		"APPROVAL_TOOLS":   "place_order",
		"APPROVAL_EXPIRY":  "25s",
		"SWEEP_SCHEDULE":   "@every 1s",
		"DENY_REASON_WAIT": "0s",
		"MODEL_TIMEOUT":    "60s",
	})
	burst := make([]modeltest.ToolCall, callsPerDesk)
	for k := range burst {
		burst[k] = modeltest.ToolCall{Name: "place_order", Arguments: fmt.Sprintf(`{"symbol":"S%d","side":"buy","quantity":1,"price":%d}`, k, 10000+k)}
	}
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if strings.Contains(lastUser(r), "burst") {
			// In replies of 25 calls: a reply may carry at most
			// model.DefaultMaxToolCalls.
			if k := len(r.ToolResults()); k < len(burst) {
				return modeltest.Calls(burst[k:min(k+25, len(burst))]...)
			}
			return modeltest.Text("holding 100 orders for the team")
		}
		return modeltest.Text("noted")
	})
	ctx := context.Background()
	w.start()
	peak := watchMemory(t, w)
	memBefore := usedMemory(t, w)
	t.Logf("redis before the burst: %s", redisBreakdown(t, w, 1))

	// The burst: every desk's model asks for 100 guarded orders in one turn.
	holdStart := time.Now()
	for _, d := range names {
		w.tell(d, "burst")
	}
	var open []*deskbot.Request
	deskbottest.EventuallyWithin(t, 60*time.Second, "1,000 requests held", func() bool {
		var err error
		open, err = w.st.OpenRequests(ctx)
		return err == nil && len(open) == loadDesks*callsPerDesk
	})
	holdTook := time.Since(holdStart)
	memPerRequest := (usedMemory(t, w) - memBefore) / int64(len(open))
	t.Logf("redis at the measuring point, per open request: %s", redisBreakdown(t, w, len(open)))

	// The plan: a tenth lapse; the rest get one tap, a third of them a
	// second one (a double tap by the same person or a colleague at once).
	rng := rand.New(rand.NewPCG(7, 7))
	// Always allow on an order is given by its confirmation (the first tap
	// only shows what the grant would cover): the drill taps that.
	actions := []string{bot.ActAllowOnce, bot.ActAllowOnce, bot.ActAllowOnce, bot.ActAllowOnce, bot.ActDeny, bot.ActDeny, bot.ActGrantConfirm}
	fates := make([]*fate, len(open))
	type job struct {
		f *fate
		i int
	}
	var perApprover [5][]job
	// A confirmation carries the key of the grant's terms it showed, which
	// the service checks: read as the service's gate gives them (its
	// configuration above), as a confirmation message would show them.
	terms := gatetest.MustNew(t, gate.Config{Tools: []string{"place_order"}, Limits: gatetest.HardLimits(nil, nil, broker.NewPaper(w.st, nil), w.st, nil)}, w.st, nil, nil, nil)
	for i, r := range open {
		var o struct{ Symbol string }
		if err := json.Unmarshal(r.Content.Arguments, &o); err != nil {
			t.Fatalf("request %s: %v", r.ID, err)
		}
		f := &fate{id: r.ID, desk: r.Desk, sym: o.Symbol, lapse: rng.IntN(10) == 0}
		fates[i] = f
		if f.lapse {
			continue
		}
		n := 1 + boolInt(rng.IntN(3) == 0)
		for range n {
			tp := tap{who: rng.IntN(len(approvers)), action: actions[rng.IntN(len(actions))], arg: r.ID}
			if tp.action == bot.ActGrantConfirm {
				_, key, _, err := terms.GrantTerms(t.Context(), r.ID)
				if err != nil {
					t.Fatalf("the grant's terms of %s: %v", r.ID, err)
				}
				tp.arg += ":" + key
			}
			f.taps = append(f.taps, tp)
		}
	}
	for _, f := range fates {
		for j := range f.taps {
			perApprover[f.taps[j].who] = append(perApprover[f.taps[j].who], job{f, j})
		}
	}
	var mu sync.Mutex
	tapsStart := time.Now()
	var wg sync.WaitGroup
	for a := range perApprover {
		jobs := perApprover[a]
		rand.New(rand.NewPCG(uint64(a), 1)).Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
		wg.Go(func() {
			for _, j := range jobs {
				tp := &j.f.taps[j.i]
				q := w.tap(approvers[a], 0, tp.action, tp.arg)
				mu.Lock()
				tp.query, tp.at = q, time.Now()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	totalTaps := 0
	for _, f := range fates {
		totalTaps += len(f.taps)
	}

	// Everything settles: every tap answered, every request closed.
	deskbottest.EventuallyWithin(t, 90*time.Second, "every tap answered", func() bool {
		for _, f := range fates {
			for _, tp := range f.taps {
				if _, _, ok := w.tg.CallbackAnswer(tp.query); !ok {
					return false
				}
			}
		}
		return true
	})
	answered := time.Since(tapsStart)
	final := map[deskbot.RequestState]int{}
	deskbottest.EventuallyWithin(t, 90*time.Second, "every request closed", func() bool {
		clear(final)
		for _, f := range fates {
			r, err := w.st.Request(ctx, f.id)
			if err != nil {
				return false
			}
			final[r.State]++
		}
		return final[deskbot.StateOpen]+final[deskbot.StateRunning] == 0
	})
	rss := w.svc.peakRSS()
	t.Logf("service memory at its highest sample: %s", peak())
	t.Logf("redis once every request closed, per request: %s", redisBreakdown(t, w, len(fates)))

	// The chat catches up at its pacing: every event the outbox was given
	// is acknowledged once Telegram took it. Logged, not awaited (a
	// thousand requests in digests take minutes of edits at 20 a minute).
	t.Logf("the chat's consumer group once every request closed: %s", pendingOf(t, w))

	// The audit trail, per request.
	type record struct {
		holds, decisions, runs int
		decision               string
		decidedAt, ranAt       time.Time
	}
	recs := map[string]*record{}
	for _, e := range w.audit() {
		if e.RequestID == "" {
			continue
		}
		r := recs[e.RequestID]
		if r == nil {
			r = &record{}
			recs[e.RequestID] = r
		}
		switch e.Action {
		case "hold":
			r.holds++
		case "allow_once", "always_allow", "deny", "lapse":
			r.decisions++
			r.decision, r.decidedAt = e.Action, e.At
		case "ran", "failed":
			r.runs++
			r.ranAt = e.At
		}
	}
	fills := map[string]int{} // desk/symbol -> fills
	for _, d := range names {
		for _, tr := range mustTrades(t, w, d) {
			fills[d+"/"+tr.Symbol]++
		}
	}

	var latencies []time.Duration
	var allowed, denied, lapsed, doubleRuns, runsWithoutAllow, notExactlyOnce, lapsedDecided int
	var lastDecision time.Time
	for _, f := range fates {
		r := recs[f.id]
		if r == nil || r.holds != 1 || r.decisions != 1 {
			notExactlyOnce++
			continue
		}
		allow := r.decision == "allow_once" || r.decision == "always_allow"
		n := fills[f.desk+"/"+f.sym]
		switch {
		case allow && (r.runs != 1 || n != 1):
			if r.runs > 1 || n > 1 {
				doubleRuns++
			} else {
				notExactlyOnce++
			}
		case !allow && (r.runs != 0 || n != 0):
			runsWithoutAllow++
		}
		if f.lapse != (r.decision == "lapse") {
			lapsedDecided++
		}
		switch {
		case allow:
			allowed++
			latencies = append(latencies, r.ranAt.Sub(r.decidedAt))
		case r.decision == "deny":
			denied++
		default:
			lapsed++
		}
		if r.decision != "lapse" && r.decidedAt.After(lastDecision) {
			lastDecision = r.decidedAt
		}
	}
	if notExactlyOnce+doubleRuns+runsWithoutAllow > 0 {
		t.Errorf("of %d requests: %d not decided exactly once, %d ran twice, %d ran without an allow", len(fates), notExactlyOnce, doubleRuns, runsWithoutAllow)
	}
	if lapsedDecided > 0 {
		t.Errorf("%d requests lapsed though tapped, or were decided though nobody tapped", lapsedDecided)
	}
	totalFills := 0
	for _, n := range fills {
		totalFills += n
	}
	if totalFills != allowed {
		t.Errorf("the broker filled %d orders for %d allowed requests", totalFills, allowed)
	}

	// The taps' answers: exactly one winner per tapped request.
	var already, wins int
	for _, f := range fates {
		for _, tp := range f.taps {
			a, _, _ := w.tg.CallbackAnswer(tp.query)
			switch {
			case strings.HasPrefix(a, "Allowed") || strings.HasPrefix(a, "Always allowed") || strings.HasPrefix(a, "Denied"):
				wins++
			case strings.Contains(a, "Already"):
				already++
			default:
				t.Errorf("tap answered %q", a)
			}
		}
	}
	if tapped := len(fates) - lapsed; wins != tapped {
		t.Errorf("%d taps won for %d tapped requests; want exactly one each", wins, tapped)
	}

	// Answers to taps, as Telegram timed them.
	injected := map[string]time.Time{}
	for _, f := range fates {
		for _, tp := range f.taps {
			injected[tp.query] = tp.at
		}
	}
	var answerLat []time.Duration
	for _, c := range w.tg.Calls("answerCallbackQuery") {
		if at, ok := injected[c.Params["callback_query_id"]]; ok && c.OK() {
			answerLat = append(answerLat, c.At.Sub(at))
		}
	}

	// Chat pacing: every message sent to the group, as Telegram saw it.
	var sends, edits []time.Time
	for _, c := range w.tg.Calls("sendMessage") {
		if c.OK() && c.ChatID == groupID {
			sends = append(sends, c.At)
		}
	}
	for _, c := range w.tg.Calls("editMessageText") {
		if c.OK() && c.ChatID == groupID {
			edits = append(edits, c.At)
		}
	}
	all := slices.SortedFunc(slices.Values(append(slices.Clone(sends), edits...)), func(a, b time.Time) int { return a.Compare(b) })
	minGap, perMin := pacing(sends)
	minAny, _ := pacing(all)
	if minGap < 900*time.Millisecond || perMin > 20 {
		t.Errorf("sends to the group: least gap %v, most in a minute %d; Telegram allows about 1/s and 20/min", minGap, perMin)
	}

	decideSpan := lastDecision.Sub(tapsStart)
	summary(t, "load", "desks=%d held=%d hold_burst=%v(%.0f/s) redis_per_open_request=%dB taps=%d(double=%d) decided=%d(allow=%d deny=%d) lapsed=%d exactly_once=yes runs_without_allow=%d double_runs=%d decisions/s=%.0f all_taps_answered_in=%v tap_answer_p50=%v p99=%v decision_to_run_p50=%v p99=%v peak_rss=%.1fMiB chat_sends=%d edits=%d send_min_gap=%v max_sends_per_min=%d min_gap_any=%v",
		loadDesks, len(fates), holdTook.Round(time.Millisecond), float64(len(fates))/holdTook.Seconds(), memPerRequest,
		totalTaps, totalTaps-(len(fates)-lapsed), allowed+denied, allowed, denied, lapsed, runsWithoutAllow, doubleRuns,
		float64(allowed+denied)/decideSpan.Seconds(), answered.Round(time.Millisecond),
		pct(answerLat, 50), pct(answerLat, 99), pct(latencies, 50), pct(latencies, 99),
		float64(rss)/(1<<20), len(sends), len(edits), minGap.Round(time.Millisecond), perMin, minAny.Round(time.Millisecond))
}

// usedMemory is Redis's used_memory in bytes.
func usedMemory(t *testing.T, w *world) int64 {
	t.Helper()
	info, err := w.st.Client().Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatalf("INFO memory: %v", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// redisBreakdown says where Redis's memory went, per open request: MEMORY
// USAGE of the drill's keys by kind (the first part of the key after the
// hash tag), the consumer groups' pending entries, and the clients'
// connections and buffers (INFO's mem_clients_normal). It explains the
// used_memory delta; it does not replace it.
func redisBreakdown(t *testing.T, w *world, n int) string {
	t.Helper()
	ctx := context.Background()
	c := w.st.Client()
	byKind := map[string]int64{}
	keys := map[string]int{}
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		kind := k
		if _, rest, ok := strings.Cut(k, "}:"); ok {
			kind, _, _ = strings.Cut(rest, ":")
		}
		m, err := c.MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			continue // gone meanwhile
		}
		byKind[kind] += m
		keys[kind]++
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		fmt.Fprintf(&b, "%s=%dB(%d keys) ", k, byKind[k]/int64(n), keys[k])
	}
	if groups, err := c.XInfoGroups(ctx, w.st.Key("events")).Result(); err == nil {
		for _, g := range groups {
			fmt.Fprintf(&b, "pending[%s]=%d ", g.Name, g.Pending)
		}
	}
	if list, err := c.ClientList(ctx).Result(); err == nil {
		// Each connection's own memory (tot-mem), largest first, with
		// the last command it ran: what the clients' share is made of.
		type conn struct {
			mem int64
			cmd string
		}
		var conns []conn
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			var cn conn
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "tot-mem="); ok {
					cn.mem, _ = strconv.ParseInt(v, 10, 64)
				} else if v, ok := strings.CutPrefix(f, "cmd="); ok {
					cn.cmd = v
				}
			}
			conns = append(conns, cn)
		}
		slices.SortFunc(conns, func(a, b conn) int { return int(b.mem - a.mem) })
		b.WriteString("conns(tot-mem,cmd)=")
		for _, cn := range conns {
			fmt.Fprintf(&b, "%d:%s,", cn.mem, cn.cmd)
		}
		b.WriteString(" ")
	}
	info, _ := c.Info(ctx, "memory", "clients").Result()
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range []string{"connected_clients:", "mem_clients_normal:", "used_memory_overhead:", "used_memory_dataset:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				fmt.Fprintf(&b, "%s%s ", f, v)
			}
		}
	}
	return strings.TrimSpace(b.String())
}

// watchMemory samples the service's memory every 50 ms until the returned
// func is called, which says what the sample with the highest Rss held:
// smaps_rollup's split between anonymous memory (heap, stacks) and the
// binary's pages, and the Go runtime's own figures from /metrics.
func watchMemory(t *testing.T, w *world) func() string {
	t.Helper()
	pid := w.svc.cmd.Process.Pid
	stop := make(chan struct{})
	done := make(chan string)
	go func() {
		var best int64
		var bestText string
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- bestText
				return
			case <-tick.C:
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
			if err != nil {
				continue
			}
			kb := map[string]int64{}
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if len(f) == 3 && f[2] == "kB" {
					kb[strings.TrimSuffix(f[0], ":")], _ = strconv.ParseInt(f[1], 10, 64)
				}
			}
			if kb["Rss"] <= best {
				continue
			}
			best = kb["Rss"]
			bestText = fmt.Sprintf("rss=%.1fMiB anon=%.1fMiB file=%.1fMiB", float64(kb["Rss"])/1024, float64(kb["Anonymous"])/1024, float64(kb["Rss"]-kb["Anonymous"])/1024)
			if m, err := goMemory(w); err == nil {
				bestText += " " + m
			}
		}
	}()
	return func() string { close(stop); return <-done }
}

// goMemory is the service's Go memory as its /metrics tells it.
func goMemory(w *world) (string, error) {
	resp, err := http.Get("http://" + w.env["HTTP_ADDR"] + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_sys_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines", "go_memstats_sys_bytes"} {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				if name == "go_goroutines" {
					fmt.Fprintf(&b, "%s=%.0f ", strings.TrimPrefix(name, "go_"), f)
				} else {
					fmt.Fprintf(&b, "%s=%.1fMiB ", strings.TrimPrefix(strings.TrimSuffix(name, "_bytes"), "go_memstats_"), f/(1<<20))
				}
			}
		}
	}
	return strings.TrimSpace(b.String()), nil
}

// pendingOf says how many events each consumer group holds unacknowledged.
func pendingOf(t *testing.T, w *world) string {
	t.Helper()
	groups, err := w.st.Client().XInfoGroups(context.Background(), w.st.Key("events")).Result()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, g := range groups {
		fmt.Fprintf(&b, "pending[%s]=%d ", g.Name, g.Pending)
	}
	return strings.TrimSpace(b.String())
}

// pct is the p-th percentile of ds (rounded to the millisecond).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, len(s)*p/100)].Round(time.Millisecond)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
