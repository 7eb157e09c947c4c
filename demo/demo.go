// Package demo plays, on this machine alone, everything deskbot talks to
// but Redis and the broker: Telegram, as the fake Bot API the tests use
// (package telegramtest); the team's group, as a web page that drives that
// fake; and, when no model server answers, a scripted desk model (on the
// fake model server of package modeltest). `deskbot demo` (Main, run.go)
// starts it and the service pointed at it, configured as StartAll says.
// The service's normal run never does: nothing here is reachable from it.
//
// The chat page shows the group as the fake holds it (the bot's messages
// with their buttons, edits and reactions, and people's messages) and turns
// what a person types or taps into the update Telegram would send for it,
// from one of three people: two approvers and a member. It opens the desks
// page signed in as the person chosen, with initData signed by the fake
// bot's made-up token as Telegram would sign it.
//
// Everything is served on loopback only, and the page answers only
// requests addressed to its own host and port from its own origin (see
// guard): another site open in the same browser cannot post as an
// approver.
//
// Concurrency: a Demo is safe for concurrent use. Its handlers run on the
// HTTP server's goroutines and share the fakes (safe themselves) and what
// Start set, which nothing changes after.
package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// Person is someone the chat page can speak and tap as.
type Person struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Approver bool   `json:"approver"`
}

// People are the team the demo plays: two approvers (TELEGRAM_APPROVERS)
// and a member of the group who is not one.
var People = []Person{
	{ID: 101, Name: "Asha", Approver: true},
	{ID: 102, Name: "Ravi", Approver: true},
	{ID: 103, Name: "Vik"},
}

// ChatID is the team's group: a supergroup, as Telegram numbers them.
const ChatID int64 = -1001234567890

// Desk is the one desk the demo runs.
const Desk = "main"

// Options says where the demo serves and what it opens.
type Options struct {
	// Addr is the chat page's loopback host:port; "" takes a free port
	// on 127.0.0.1.
	Addr string
	// DesksPage is the desks page's address (WEBAPP_URL): the chat page
	// opens it signed in as the person chosen. "" leaves it out.
	DesksPage string
	// ModelURL is a model server's base URL (MODEL_BASE_URL). When it
	// answers within ProbeTimeout the desks use it; otherwise (and when
	// "") the scripted desk model.
	ModelURL     string
	ProbeTimeout time.Duration
	Log          *slog.Logger
}

// Demo is the running demo: the fake Bot API, the scripted model (unless
// a model server answered) and the chat page.
type Demo struct {
	// URL is the chat page: the one address the demo prints.
	URL string
	// Scripted reports whether the desks talk to the scripted model
	// rather than a model server found at Options.ModelURL.
	Scripted bool

	opts   Options
	token  string
	tg     *telegramtest.Server
	model  *modeltest.Server // nil when a model server answered
	host   string            // the page's host:port, as requests must name it
	srv    *http.Server
	served chan struct{}
}

// Start starts the fakes and serves the chat page. Close stops them.
func Start(ctx context.Context, opts Options) (*Demo, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if !loopback(addr) {
		return nil, fmt.Errorf("demo: %s is not a loopback address; the demo plays Telegram for this machine only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	d := &Demo{opts: opts, token: madeUpToken(), host: ln.Addr().String(), served: make(chan struct{})}
	d.URL = "http://" + d.host + "/"
	d.Scripted = opts.ModelURL == "" || !answers(ctx, opts.ModelURL, cmp.Or(opts.ProbeTimeout, time.Second))
	if d.Scripted {
		d.model = modeltest.Start(scriptedDesk)
	}
	d.tg = telegramtest.Start(d.token)
	d.srv = &http.Server{Handler: d.guard(d.routes()), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(d.served)
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo: the chat page stopped", "err", err)
		}
	}()
	return d, nil
}

// Environ is what the service must be given to run against the demo:
// the Bot API, the group, its approvers and, when scripted, the model.
// The caller adds the rest (the desks page's address, HTTP_ADDR).
func (d *Demo) Environ() map[string]string {
	var approvers []string
	for _, p := range People {
		if p.Approver {
			approvers = append(approvers, strconv.FormatInt(p.ID, 10))
		}
	}
	env := map[string]string{
		"TELEGRAM_TOKEN":     d.token,
		"TELEGRAM_API_URL":   d.tg.URL,
		"TELEGRAM_CHAT_ID":   strconv.FormatInt(ChatID, 10),
		"TELEGRAM_APPROVERS": strings.Join(approvers, ","),
		"DESKS":              Desk,
	}
	if d.model != nil {
		env["MODEL_PROVIDER"] = "openai"
		env["MODEL_BASE_URL"] = d.model.URL + "/v1"
		env["MODEL_NAME"] = "scripted-desk"
		env["MODEL_API_KEY"] = ""
	}
	return env
}

// Close stops the chat page and the fakes. The service should be closed
// first: it says goodbye to the chat through the fake.
func (d *Demo) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	<-d.served
	d.tg.Close()
	if d.model != nil {
		d.model.Close()
	}
	return err
}

// madeUpToken is a bot token of the form Telegram gives (the bot's id, a
// colon, a secret), fresh each run: the fake accepts only it, so nothing
// else on the machine can act as the bot, and it is never printed.
func madeUpToken() string {
	return strconv.FormatInt(telegramtest.BotUser.ID, 10) + ":demo-" + rand.Text()
}

// loopback reports whether addr's host is a loopback IP or "localhost".
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// answers reports whether an HTTP server answers at base (a model API's
// base URL) within timeout: any answer, even an error status, means a
// server is there for the desks to use.
func answers(ctx context.Context, base string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}
