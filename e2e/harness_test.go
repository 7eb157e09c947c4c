// Package e2e holds the fault drills: the built deskbot binary
// runs as a separate process against a redis-server the suite starts itself
// (append-only file on, no snapshots), the fake Bot API and the fake model,
// and each drill breaks one thing on purpose (kill -9, a Redis restart, a
// Telegram outage, a model dying mid-turn, a burst of 1,000 held calls) and
// checks that nothing is lost and nothing runs twice.
//
// The suite is slow by design (seconds per drill, real pacing), so it runs
// only when DESKBOT_E2E=1 (.ci/faults sets it). Without redis-server it is
// skipped, unless DESKBOT_REQUIRE_REDIS=1. DESKBOT_BIN names a prebuilt
// binary; otherwise the suite builds one. Each drill prints one line
// "SUMMARY <drill>: ..." with its figures, and appends it to the file named
// by DESKBOT_E2E_SUMMARY when set.
//
// Concurrency: drills run one after another (no t.Parallel): they measure
// timing and memory on a shared 2-core machine.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store"
	"github.com/redis/go-redis/v9"
)

const (
	token   = "424242:E2E-secret-token-never-shown"
	groupID = int64(-1009876543210)
)

// Approvers: five people who may decide, and one who may not.
var (
	approvers = []telegramtest.User{
		{ID: 201, FirstName: "Asha"}, {ID: 202, FirstName: "Ravi"}, {ID: 203, FirstName: "Meera"},
		{ID: 204, FirstName: "Kabir"}, {ID: 205, FirstName: "Tara"},
	}
	asha = approvers[0]
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mustBinary returns the deskbot binary, building it once per run.
func mustBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv("DESKBOT_E2E") != "1" {
		t.Skip("fault drills run only with DESKBOT_E2E=1 (see .ci/faults)")
	}
	buildOnce.Do(func() {
		if p := os.Getenv("DESKBOT_BIN"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "deskbot-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "deskbot")
		// Built as the Dockerfile builds the binary that ships, so that the
		// drills (the load drill's peak memory above all: a binary with
		// cgo, full paths and symbols maps 7 MiB more of itself) measure
		// what runs in production.
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binPath, "github.com/deskbot/deskbot/cmd/deskbot")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// redisProc is a redis-server of the suite's own: its port and folder stay
// the same across restarts, so a restart reads the append-only file back.
type redisProc struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func mustRedis(t *testing.T) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("DESKBOT_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server is required (DESKBOT_REQUIRE_REDIS=1) but not installed")
		}
		t.Skip("redis-server not installed: the drills start, kill and restart a Redis of their own (Debian package redis-server)")
	}
	r := &redisProc{t: t, port: freePort(t), dir: t.TempDir()}
	r.Start()
	t.Cleanup(func() {
		if r.cmd != nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
	return r
}

func (r *redisProc) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d", r.port) }

// Start runs redis-server and waits until it answers PING.
func (r *redisProc) Start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1",
		"--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--dir", r.dir, "--protected-mode", "no")
	out := logFile(r.t, filepath.Join(r.dir, "redis.log"))
	r.cmd.Stdout, r.cmd.Stderr = out, out
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("redis-server: %v", err)
	}
	deskbottest.EventuallyWithin(r.t, 10*time.Second, "redis-server answers", func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		fmt.Fprint(c, "PING\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.HasPrefix(line, "+PONG")
	})
}

// Stop shuts Redis down as an operator would (SIGTERM: the append-only file
// is flushed) and waits for it to exit.
func (r *redisProc) Stop() {
	r.t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.cmd.Wait()
	r.cmd = nil
}

// world is one drill's setting: the fakes, Redis, the service's
// environment, a client of the test's own on the same Redis and prefix, and
// the service process (replaced on restart).
type world struct {
	t     *testing.T
	tg    *telegramtest.Server
	model *modeltest.Server
	redis *redisProc
	env   map[string]string
	data  string
	st    *store.Store
	svc   *service
	logs  string // the service's log file, all its runs appended
}

// newWorld prepares a drill; extra overrides the environment. The service
// is not started: call start.
func newWorld(t *testing.T, extra map[string]string) *world {
	t.Helper()
	mustBinary(t)
	w := &world{t: t, redis: mustRedis(t), tg: telegramtest.New(t, token), model: modeltest.New(t), data: deskbottest.DataDir(t)}
	w.logs = filepath.Join(t.TempDir(), "deskbot.log")
	ids := make([]string, len(approvers))
	for i, a := range approvers {
		ids[i] = fmt.Sprint(a.ID)
	}
	w.env = map[string]string{
		"PATH":               os.Getenv("PATH"),
		"HOME":               t.TempDir(),
		"TELEGRAM_TOKEN":     token,
		"TELEGRAM_API_URL":   w.tg.URL,
		"TELEGRAM_CHAT_ID":   fmt.Sprint(groupID),
		"TELEGRAM_APPROVERS": strings.Join(ids, ","),
		"REDIS_URL":          w.redis.URL(),
		"REDIS_PREFIX":       fmt.Sprintf("e2e:%s:", strings.ToLower(t.Name())),
		"DATA_DIR":           w.data,
		"MODEL_BASE_URL":     w.model.URL + "/v1",
		"MODEL_NAME":         "fake",
		"MODEL_TIMEOUT":      "10s",
		"HTTP_ADDR":          fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"SANDBOX":            "auto",
		"SANDBOX_NETWORK":    "false",
		"DENY_REASON_WAIT":   "0s",
		"LOG_LEVEL":          "info",
		// A process started after a kill -9 leads once the dead one's lease
		// lapses: keep that short so the drills' waits hold.
		"LEADER_LEASE": "3s",
	}
	for k, v := range extra {
		w.env[k] = v
	}
	st, err := store.Open(t.Context(), store.Options{URL: w.redis.URL(), Prefix: w.env["REDIS_PREFIX"]})
	if err != nil {
		t.Fatalf("test store: %v", err)
	}
	w.st = st
	t.Cleanup(func() {
		if w.svc != nil {
			w.svc.kill()
		}
		st.Close()
		logs, _ := os.ReadFile(w.logs)
		if bytes.Contains(logs, []byte(token)) {
			t.Errorf("the bot token reached the service's logs")
		}
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(string(logs)), "\n")
			t.Logf("last lines of the service's log (%s):\n%s", w.logs, strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
	return w
}

// service is one run of the deskbot process.
type service struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start runs the binary and waits until it has started. A restart is just
// another start after a kill.
func (w *world) start() *service {
	w.t.Helper()
	before := fileSize(w.logs)
	cmd := exec.Command(binPath)
	for k, v := range w.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := logFile(w.t, w.logs)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start deskbot: %v", err)
	}
	s := &service{cmd: cmd, done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	w.svc = s
	deskbottest.EventuallyWithin(w.t, 30*time.Second, "deskbot started", func() bool {
		select {
		case <-s.done:
			w.t.Fatalf("deskbot exited at start: %v", s.err)
		default:
		}
		b, _ := os.ReadFile(w.logs)
		return int64(len(b)) > before && bytes.Contains(b[before:], []byte("deskbot started"))
	})
	return s
}

// kill ends the process with SIGKILL: no cleanup of any kind runs.
func (s *service) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func (s *service) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// peakRSS is the process's peak resident memory in bytes (VmHWM).
func (s *service) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb * 1024
		}
	}
	return 0
}

// tell injects "/tell desk text" from asha.
func (w *world) tell(desk, text string) { w.tg.InjectText(asha, groupID, "/tell "+desk+" "+text, 0) }

// queue hands desk a message straight through its inbox, with no command in
// the chat and so no reply of the bot's own to pace.
func (w *world) queue(desk, text string) {
	w.t.Helper()
	tr := deskbot.Trigger{Desk: desk, Kind: deskbot.TriggerMessage, Text: text, From: "the drill"}
	if err := w.st.Enqueue(context.Background(), tr); err != nil {
		w.t.Fatalf("queue for %s: %v", desk, err)
	}
}

// botMessage waits for a bot message in the group that matches.
func (w *world) botMessage(what string, timeout time.Duration, match func(telegramtest.Message) bool) telegramtest.Message {
	w.t.Helper()
	var found telegramtest.Message
	deskbottest.EventuallyWithin(w.t, timeout, what, func() bool {
		for _, m := range w.tg.BotMessages(groupID) {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// countBot counts the bot's messages in the group whose plain text
// contains s, and the occurrences of s in them.
func (w *world) countBot(s string) int {
	n := 0
	for _, m := range w.tg.BotMessages(groupID) {
		n += strings.Count(m.Plain, s)
	}
	return n
}

func (w *world) dumpChat() {
	for _, m := range w.tg.ChatMessages(groupID) {
		w.t.Logf("chat #%d bot=%v %q %v", m.ID, m.FromBot, m.Plain, m.Labels())
	}
}

// tap injects a button press by who on message msgID.
func (w *world) tap(who telegramtest.User, msgID int, action, requestID string) string {
	return w.tg.InjectCallback(who, groupID, msgID, telegramtest.CallbackData(action, requestID))
}

// request reads a request through the test's own client.
func (w *world) request(id string) *deskbot.Request {
	w.t.Helper()
	r, err := w.st.Request(context.Background(), id)
	if err != nil {
		w.t.Fatalf("request %s: %v", id, err)
	}
	return r
}

// audit returns the whole audit trail.
func (w *world) audit() []deskbot.AuditEntry {
	w.t.Helper()
	a, err := w.st.AuditTrail(context.Background(), 1_000_000)
	if err != nil {
		w.t.Fatalf("audit trail: %v", err)
	}
	return a
}

// deskOf names the desk a model request came from (the system prompt opens
// with `You are "<desk>"`).
func deskOf(r modeltest.Request) string {
	_, rest, ok := strings.Cut(r.System(), `You are "`)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, `"`)
	return name
}

// summary prints a drill's figures where .ci/faults finds them.
func summary(t *testing.T, drill, format string, args ...any) {
	line := fmt.Sprintf("SUMMARY %s: %s", drill, fmt.Sprintf(format, args...))
	fmt.Println(line)
	if p := os.Getenv("DESKBOT_E2E_SUMMARY"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	t.Log(line)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func logFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// mustTrades returns the desk's fills from the paper broker's journal.
func mustTrades(t *testing.T, w *world, desk string) []deskbot.Trade {
	t.Helper()
	tr, err := broker.NewPaper(w.st, time.Now).Trades(context.Background(), desk, 100_000)
	if err != nil {
		t.Fatalf("trades of %s: %v", desk, err)
	}
	return tr
}

// lastUser is the text of the last user message of a model request: the
// trigger the turn is about.
func lastUser(r modeltest.Request) string {
	ms := r.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" {
			return ms[i].Text
		}
	}
	return ""
}

// leaseKeys are the leader lease's keys as store/keys.go names them: the
// lease, its term counter and its holder. Only a drill that makes Redis
// forget leadership writes touches them.
func (w *world) leaseKeys() (lease, terms, holder string) {
	return w.st.Key("leader"), w.st.Key("leader", "term"), w.st.Key("leader", "holder")
}

// leaseTerms is the lease's term counter as Redis holds it (0: none yet).
func (w *world) leaseTerms() int64 {
	w.t.Helper()
	_, terms, _ := w.leaseKeys()
	n, err := w.st.Client().Get(context.Background(), terms).Int64()
	if err != nil && err != redis.Nil {
		w.t.Fatalf("lease term counter: %v", err)
	}
	return n
}

// loseLeaseWrites puts the lease's keys back as they stood before the last
// take, the term counter at before: what Redis serves after losing that
// take (a restart without persistence, the last second of an append-only
// file with appendfsync everysec, a failover to a replica that lacked it).
func (w *world) loseLeaseWrites(before int64) {
	w.t.Helper()
	lease, terms, holder := w.leaseKeys()
	ctx := context.Background()
	p := w.st.Client().TxPipeline()
	p.Del(ctx, lease, holder)
	if before == 0 {
		p.Del(ctx, terms)
	} else {
		p.Set(ctx, terms, before, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		w.t.Fatalf("lose the lease's writes: %v", err)
	}
}
