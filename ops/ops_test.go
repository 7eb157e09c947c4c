package ops_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/deskbot/deskbot/broker"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// mustServe serves m and a health check over real HTTP on a free port.
func mustServe(t *testing.T, m *ops.Metrics, checks ...ops.Check) *ops.Server {
	t.Helper()
	s, err := ops.Listen("127.0.0.1:0", ops.RoleHealthHandler(time.Second, nil, func(string) []ops.Check { return checks }), m.Handler())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustScrape returns the value of every sample on /metrics, keyed by its
// name and labels exactly as Prometheus' text format writes them.
func mustScrape(t *testing.T, s *ops.Server) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// flattenTool is a guarded flatten_desk that answers "flat".
func flattenTool() *deskbottest.Tool {
	return &deskbottest.Tool{ToolName: deskbot.ToolFlattenDesk, About: "Closes every position.", Result: deskbot.ToolResult{Text: "flat"}}
}

// The request metrics an operator watches, fed by the real gate through the
// real event stream: held, decided by decision, lapsed and the time people
// took. An allowed call's second event (once it ran) is not a second
// decision, and history before the first start is not counted.
func TestRequestMetricsFromEvents(t *testing.T) {
	st := storetest.MustOpen(t)
	if err := st.Publish(t.Context(), deskbot.Event{Kind: deskbot.EventUserRequest, Desk: "alpha", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	clk := deskbottest.NewClock(time.Now()) // keys expire on the real Redis clock
	g := gatetest.MustNew(t, gate.Config{Tools: []string{"flatten_desk"}, Expiry: 5 * time.Minute,
		Limits: gatetest.HardLimits(nil, nil, broker.NewPaper(st, clk.Now), st, clk.Now)},
		st, agent.Registries{"alpha": agent.NewRegistry(flattenTool())}, clk.Now, slog.New(slog.DiscardHandler))
	m := ops.NewMetrics(nil)
	srv := mustServe(t, m)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.CountEvents(ctx, st, "test", nil) }()
	defer func() { cancel(); <-done }()
	deskbottest.Eventually(t, "the metrics group", func() bool {
		_, _, err := st.EventBacklog(t.Context(), ops.MetricsGroup)
		return err == nil && groupExists(t, st)
	})

	allowed, denied := gatetest.MustHold(t, g, "alpha", "flatten_desk", ""), gatetest.MustHold(t, g, "alpha", "flatten_desk", "")
	gatetest.MustHold(t, g, "alpha", "flatten_desk", "") // lapses
	clk.Add(30 * time.Second)
	if _, err := gatetest.Resolve(t.Context(), g, allowed.ID, deskbot.AllowOnce, "", deskbot.Person{ID: 1, Name: "Asha"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(30 * time.Second)
	if _, err := gatetest.Resolve(t.Context(), g, denied.ID, deskbot.Deny, "too risky", deskbot.Person{ID: 1, Name: "Asha"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(10 * time.Minute)
	if _, err := g.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}

	want := map[string]float64{
		`deskbot_requests_held_total{desk="alpha"}`:                              3,
		`deskbot_requests_decided_total{decision="allow_once",desk="alpha"}`:     1,
		`deskbot_requests_decided_total{decision="deny",desk="alpha"}`:           1,
		`deskbot_requests_lapsed_total{desk="alpha"}`:                            1,
		`deskbot_request_decision_seconds_count{decision="allow_once"}`:          1,
		`deskbot_request_decision_seconds_sum{decision="allow_once"}`:            30,
		`deskbot_request_decision_seconds_bucket{decision="deny",le="60"}`:       1,
		`deskbot_request_decision_seconds_bucket{decision="allow_once",le="15"}`: 0,
	}
	// Every event counted first, then one scrape. A scrape that happens to
	// show the last event (the lapse) is not enough: the registry collects
	// its metrics concurrently and in no fixed order, so a scrape that
	// overlaps the counter's Observe calls can show the lapse and miss the
	// decisions counted just before it. The counter acknowledges an event
	// only after counting it, so a backlog of none means all are counted.
	deskbottest.Eventually(t, "the metrics group to count every event", func() bool {
		pending, undelivered, err := st.EventBacklog(t.Context(), ops.MetricsGroup)
		return err == nil && pending == 0 && undelivered == 0
	})
	got := mustScrape(t, srv)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if t.Failed() {
		for k, v := range got {
			if strings.HasPrefix(k, "deskbot_request") {
				t.Logf("scraped %s %v", k, v)
			}
		}
	}
}

func groupExists(t *testing.T, st *store.Store) bool {
	groups, err := st.Client().XInfoGroups(t.Context(), st.Key("events")).Result()
	if err != nil {
		return false
	}
	for _, g := range groups {
		if g.Name == ops.MetricsGroup {
			return true
		}
	}
	return false
}

// mistakeTool is a place_order whose every answer marks the model's
// mistake (an error result).
func mistakeTool() *deskbottest.Tool {
	return &deskbottest.Tool{ToolName: deskbot.ToolPlaceOrder, About: "Closes every position.", Result: deskbot.ToolResult{Text: "quantity must be positive", IsError: true}}
}

// Model calls and failures by backend, against a real fake endpoint and an
// address nobody listens on; tool calls and errors by tool; Telegram retries
// and the outbox depth.
func TestCallMetrics(t *testing.T) {
	fake := modeltest.New(t)
	fake.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("ok") })
	up, err := model.New(model.Config{Name: "local", BaseURL: fake.URL + "/v1", Model: "fake", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	down, err := model.New(model.Config{Name: "gone", BaseURL: "http://127.0.0.1:1/v1", Model: "fake", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := ops.NewMetrics(func(context.Context) (int64, int64, error) { return 2, 5, nil })
	chains := map[string][]deskbot.Model{}
	for desk, chain := range m.WrapChains(map[string][]agent.Backend{"alpha": {{Model: up}, {Model: down}}}) {
		for _, b := range chain {
			chains[desk] = append(chains[desk], b.Model)
		}
	}
	req := deskbot.ModelRequest{Messages: []deskbot.Message{{Role: "user", Content: "hi"}}}
	for range 2 {
		if _, err := chains["alpha"][0].Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := chains["alpha"][1].Complete(t.Context(), req); err == nil {
		t.Fatal("a backend nobody listens on answered")
	}
	if got := chains["alpha"][0].Name(); got != "local" {
		t.Errorf("wrapped model's name = %q, want local", got)
	}

	tools := m.WrapTools(func(string) []deskbot.Tool { return []deskbot.Tool{flattenTool(), mistakeTool()} })("alpha")
	reg := agent.NewRegistry(tools...)
	for _, name := range []string{"flatten_desk", "place_order", "place_order"} {
		if _, err := reg.Run(t.Context(), "alpha", deskbot.ToolCall{ID: "c", Name: name, Arguments: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	m.OnTelegramRetry("sendMessage", 429)

	got := mustScrape(t, mustServe(t, m))
	for k, v := range map[string]float64{
		`deskbot_model_calls_total{backend="local"}`:                      2,
		`deskbot_model_failures_total{backend="local"}`:                   0,
		`deskbot_model_calls_total{backend="gone"}`:                       1,
		`deskbot_model_failures_total{backend="gone"}`:                    1,
		`deskbot_tool_calls_total{tool="flatten_desk"}`:                   1,
		`deskbot_tool_calls_total{tool="place_order"}`:                    2,
		`deskbot_tool_errors_total{tool="place_order"}`:                   2,
		`deskbot_tool_errors_total{tool="flatten_desk"}`:                  0,
		`deskbot_telegram_retries_total{code="429",method="sendMessage"}`: 1,
		`deskbot_outbox_depth{state="pending"}`:                           2,
		`deskbot_outbox_depth{state="undelivered"}`:                       5,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// A scrape while Redis is down leaves the outbox gauge out and says why,
// rather than claiming an empty outbox.
func TestOutboxDepthUnknownWhenRedisDown(t *testing.T) {
	m := ops.NewMetrics(func(context.Context) (int64, int64, error) { return 0, 0, errors.New("redis down") })
	resp, err := http.Get("http://" + mustServe(t, m).Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), `deskbot_outbox_depth{state="pending"} 0`) {
		t.Errorf("outbox depth reported as 0 while unknown")
	}
	if resp.StatusCode != 500 {
		t.Errorf("scrape with a failing collector: HTTP %d, want 500", resp.StatusCode)
	}
}

func TestHealthz(t *testing.T) {
	ok := ops.Check{Name: "redis", Func: func(context.Context) error { return nil }}
	bad := ops.Check{Name: "telegram", Func: func(context.Context) error {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "Telegram polling is not running")
	}}
	leaky := ops.Check{Name: "redis", Func: func(context.Context) error {
		return errors.New("dial tcp redis://:s3cret@10.0.0.1:6379: refused")
	}}
	slow := ops.Check{Name: "redis", Func: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	tests := []struct {
		name     string
		checks   []ops.Check
		wantCode int
		want     map[string]string
	}{
		{"all ok", []ops.Check{ok}, 200, map[string]string{"redis": "ok"}},
		{"telegram down", []ops.Check{ok, bad}, 503, map[string]string{"redis": "ok", "telegram": "Telegram polling is not running"}},
		{"raw error hidden", []ops.Check{leaky}, 503, map[string]string{"redis": "Internal error."}},
		{"hung check bounded", []ops.Check{slow}, 503, map[string]string{"redis": "Internal error."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mustServe(t, ops.NewMetrics(nil), tt.checks...)
			resp, err := http.Get("http://" + srv.Addr() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Status string
				Checks map[string]string
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Errorf("HTTP %d, want %d", resp.StatusCode, tt.wantCode)
			}
			if got, want := fmt.Sprint(body.Checks), fmt.Sprint(tt.want); got != want {
				t.Errorf("checks = %s, want %s", got, want)
			}
		})
	}
}

func TestLoggerScrubsSecrets(t *testing.T) {
	const token = "123456:AAE-secret-token"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var b strings.Builder
			log := ops.NewLogger(&b, format, "info", ops.NewRedactor(token, ""))
			log.Info("calling https://api.telegram.org/bot"+token+"/getMe", "err", errors.New("Post /bot"+token+"/x: EOF"), "url", "/bot"+token)
			log.Debug("hidden at info")
			out := b.String()
			if strings.Contains(out, token) {
				t.Errorf("token in log: %s", out)
			}
			if strings.Count(out, "[redacted]") != 3 {
				t.Errorf("want 3 redactions: %s", out)
			}
			if strings.Contains(out, "hidden at info") {
				t.Errorf("debug line at level info: %s", out)
			}
		})
	}
}

// /healthz says the role, and a standby is healthy without a Telegram
// check: it is ready to take over, not broken.
func TestHealthSaysRole(t *testing.T) {
	ok := ops.Check{Name: "redis", Func: func(context.Context) error { return nil }}
	polling := ops.Check{Name: "telegram", Func: func(context.Context) error {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "Telegram polling is not running")
	}}
	for _, tt := range []struct {
		role       string
		wantCode   int
		wantChecks string
	}{
		{ops.RoleStandby, 200, "map[redis:ok]"},
		{ops.RoleLeader, 503, "map[redis:ok telegram:Telegram polling is not running]"},
	} {
		t.Run(tt.role, func(t *testing.T) {
			h := ops.RoleHealthHandler(time.Second, func() string { return tt.role }, func(role string) []ops.Check {
				if role == ops.RoleLeader {
					return []ops.Check{ok, polling}
				}
				return []ops.Check{ok}
			})
			srv, err := ops.Listen("127.0.0.1:0", h, ops.NewMetrics(nil).Handler())
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			resp, err := http.Get("http://" + srv.Addr() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Status, Role string
				Checks       map[string]string
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode || body.Role != tt.role || fmt.Sprint(body.Checks) != tt.wantChecks {
				t.Errorf("HTTP %d role %q checks %v; want %d %q %s", resp.StatusCode, body.Role, body.Checks, tt.wantCode, tt.role, tt.wantChecks)
			}
		})
	}
}

// A stream that only ends with its request's context (the desks page's
// live events) must not hold a stop: Close ends it at once.
func TestCloseEndsStreams(t *testing.T) {
	streaming := make(chan struct{})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(streaming)
		<-r.Context().Done()
	})
	srv, err := ops.Listen("127.0.0.1:0", http.NotFoundHandler(), http.NotFoundHandler(), ops.Mount{Pattern: "/live", Handler: stream})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + srv.Addr() + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-streaming
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatalf("Close with a stream open: %v", err)
	}
	if got := time.Since(start); got > time.Second {
		t.Errorf("Close took %v with a stream open, want well under its 2 s limit", got)
	}
}

// turnsBackend runs whole turns (as Claude Code does), failing when told.
type turnsBackend struct{ fail bool }

func (turnsBackend) Name() string { return "claude" }
func (b turnsBackend) RunTurn(context.Context, agent.TurnRequest) (deskbot.ModelReply, error) {
	if b.fail {
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "the CLI crashed")
	}
	return deskbot.ModelReply{Text: "Done."}, nil
}

// A backend that runs whole turns is counted as every backend is: its
// turns as its calls, and its failures.
func TestTurnBackendsCounted(t *testing.T) {
	m := ops.NewMetrics(func(context.Context) (int64, int64, error) { return 0, 0, nil })
	chains := m.WrapChains(map[string][]agent.Backend{"alpha": {{Turns: turnsBackend{}}}, "beta": {{Turns: turnsBackend{fail: true}}}})
	for _, desk := range []string{"alpha", "alpha", "beta"} {
		_, _ = chains[desk][0].Turns.RunTurn(t.Context(), agent.TurnRequest{})
	}
	got := mustScrape(t, mustServe(t, m))
	if got, want := got[`deskbot_model_calls_total{backend="claude"}`], 3.0; got != want {
		t.Errorf("turn backend's calls = %v, want %v", got, want)
	}
	if got, want := got[`deskbot_model_failures_total{backend="claude"}`], 1.0; got != want {
		t.Errorf("turn backend's failures = %v, want %v", got, want)
	}
}
