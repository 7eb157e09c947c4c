package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/deskbot/deskbot/config"
)

// `deskbot demo` runs the whole service on this machine with nothing
// else: the embedded Redis, the paper broker, the desks of
// docs/desks.example.toml (DesksFile adapts them) on the scripted desk
// model (or the model server at MODEL_BASE_URL when one answers) and, in
// place of Telegram, the team's group played by a local page (Demo). It
// prints the page's one loopback address and runs until a signal. The
// service itself is the command's (Service): this file assembles what it
// runs against and how it is configured.

// Service is the whole service as the demo runs it: started by Run,
// stopped by Close, its failures on Errs.
type Service interface {
	Run(ctx context.Context) error
	Close() error
	Errs() <-chan error
}

// NewService builds the service (without starting it) on cfg, logging to
// logs.
type NewService[S Service] func(cfg config.Config, logs io.Writer) S

// demoPassEnv are the variables a demo takes from the environment: how
// the desks reach a model of the person's own, and how it logs. The rest
// is the demo's: Telegram, Redis (embedded), the desks, the addresses.
var demoPassEnv = []string{
	"MODEL_PROVIDER", "MODEL_BASE_URL", "MODEL_API_KEY", "MODEL_NAME", "MODEL_TIMEOUT", "ANTHROPIC_API_KEY",
	"LOG_LEVEL", "LOG_FORMAT", "SANDBOX", "SANDBOX_NETWORK",
}

// Run is a demo and the service running against it.
type Run[S Service] struct {
	Demo    *Demo
	Main    S
	Desks   []string // the desks it runs, from the example desks file
	dirs    []string // its DATA_DIR and its desks file's folder, deleted at the stop
	started bool     // Main was built: Close closes it
}

// StartAll starts the demo's fakes, then the service newService builds
// pointed at them, on the variables of environ that demoPassEnv lets
// through. Its logs go to logs.
func StartAll[S Service](ctx context.Context, environ map[string]string, logs io.Writer, newService NewService[S]) (*Run[S], error) {
	// The service's port is picked free, then bound by the service a
	// moment later; another process may take it in between. Then the demo
	// starts again on another.
	for try := 1; ; try++ {
		r, err := startOnce(ctx, environ, logs, newService)
		if err == nil || try == 5 || !errors.Is(err, syscall.EADDRINUSE) {
			return r, err
		}
	}
}

func startOnce[S Service](ctx context.Context, environ map[string]string, logs io.Writer, newService NewService[S]) (_ *Run[S], err error) {
	r := &Run[S]{}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	// The service's own HTTP (the desks page, /healthz) on a loopback
	// port of its own, never 8080: a real run may be using it.
	httpAddr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	desksPage := "http://" + httpAddr + "/desks/"
	modelURL := environ["MODEL_BASE_URL"]
	if modelURL == "" {
		modelURL = defaultModelURL
	}
	if r.Demo, err = Start(ctx, Options{DesksPage: desksPage, ModelURL: modelURL,
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}); err != nil {
		return nil, err
	}
	// DATA_DIR, and apart from it the desks file: the desks' folders
	// are DATA_DIR's, and nothing else is.
	for range 2 {
		dir, err := os.MkdirTemp("", "deskbot-demo-")
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		r.dirs = append(r.dirs, dir)
	}
	// The desks of docs/desks.example.toml: four eyes, hard limits and
	// risk rules, on the demo's model.
	desksFile, desks, err := DesksFile(r.dirs[1])
	if err != nil {
		return nil, err
	}
	r.Desks = desks
	env := map[string]string{"LOG_LEVEL": "warn"}
	for _, k := range demoPassEnv {
		if v, ok := environ[k]; ok {
			env[k] = v
		}
	}
	for k, v := range r.Demo.Environ() {
		env[k] = v
	}
	env["WEBAPP_URL"], env["WEBAPP_NAME"] = desksPage, "desks"
	env["HTTP_ADDR"], env["DATA_DIR"], env["DESKS_FILE"] = httpAddr, r.dirs[0], desksFile
	cfg, err := config.Load(env)
	if err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	r.Main, r.started = newService(cfg, logs), true
	if err := r.Main.Run(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// defaultModelURL is MODEL_BASE_URL's default: a local Ollama.
const defaultModelURL = "http://localhost:11434/v1"

// Close stops the service, then the fakes it talks to, and deletes the
// demo's DATA_DIR and desks file.
func (r *Run[S]) Close() error {
	var errs []error
	if r.started {
		errs = append(errs, r.Main.Close())
	}
	if r.Demo != nil {
		errs = append(errs, r.Demo.Close())
	}
	for _, dir := range r.dirs {
		errs = append(errs, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}

// Main is `deskbot demo`: it prints the chat page's address on stdout
// and runs until a signal.
func Main[S Service](ctx context.Context, environ map[string]string, stdout, stderr io.Writer, newService NewService[S]) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	r, err := StartAll(ctx, environ, stderr, newService)
	if err != nil {
		fmt.Fprintln(stderr, "deskbot demo: "+err.Error())
		return 1
	}
	model := "the scripted desk model"
	if !r.Demo.Scripted {
		model = "the model server at MODEL_BASE_URL"
	}
	fmt.Fprintf(stdout, "deskbot demo: desks %s of docs/desks.example.toml (four eyes above ₹5,00,000, hard limits, risk rules) on %s, the paper broker and an in-memory Redis; Telegram is played by the page below. Ctrl-C stops.\n", strings.Join(r.Desks, ", "), model)
	fmt.Fprintln(stdout, "deskbot demo: open "+r.Demo.URL)
	code := 0
	select {
	case <-sigs:
	case err := <-r.Main.Errs():
		fmt.Fprintln(stderr, "deskbot demo: "+err.Error())
		code = 1
	}
	go func() {
		<-sigs
		os.Exit(130)
	}()
	if err := r.Close(); err != nil {
		fmt.Fprintln(stderr, "deskbot demo: "+err.Error())
		code = 1
	}
	return code
}

// freeLoopback is a loopback host:port that was free a moment ago.
func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
