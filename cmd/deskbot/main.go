// Command deskbot runs the service: desks (LLM trading agents) supervised
// by a team in a Telegram group, with guarded tool calls held in Redis until
// a person decides.
//
// main stays tiny: it reads the environment (and .env, cli.go), builds a
// Main and runs it until a signal. Tests start the whole service in-process
// through Main.
package main

import (
	"context"
	"fmt"
	"github.com/deskbot/deskbot/config"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

func main() {
	envFile, err := config.LoadEnvFile(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deskbot: "+err.Error())
		os.Exit(2)
	}
	environ := environMap(os.Environ())
	if len(os.Args) > 1 {
		os.Exit(command(context.Background(), os.Args[1:], envFile, environ, os.Stdout, os.Stderr))
	}

	gcDefault(environ)
	cfg, err := config.Load(environ)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deskbot: configuration:\n"+err.Error())
		os.Exit(2)
	}
	// The service runs on its own context: a signal begins a graceful stop
	// (Close) instead of cancelling everything at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	m := NewMain(cfg)
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		fmt.Fprintln(os.Stderr, "deskbot: "+err.Error())
		os.Exit(1)
	}
	code := 0
	select {
	case sig := <-sigs:
		m.Log.Info("stopping: finishing running work; a second signal stops at once", "signal", sig.String())
	case err := <-m.Errs():
		m.Log.Error("stopping after a failure", "err", err)
		code = 1
	}
	go func() {
		sig := <-sigs
		m.Log.Warn("second signal: stopping at once", "signal", sig.String())
		os.Exit(130)
	}()
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "deskbot: "+err.Error())
		code = 1
	}
	os.Exit(code)
}

func environMap(kv []string) map[string]string {
	m := make(map[string]string, len(kv))
	for _, s := range kv {
		if k, v, ok := strings.Cut(s, "="); ok {
			m[k] = v
		}
	}
	return m
}

// defaultGOGC is the service's garbage collector target when GOGC is not
// set: the heap may grow to 1.5 times what is live, not twice (Go's 100).
// The service waits on people and on Redis; a burst of held calls is where
// its memory peaks, and collecting more often there costs it little CPU.
const defaultGOGC = 50

// gcDefault applies defaultGOGC unless the environment sets GOGC, which
// the runtime has read already.
func gcDefault(environ map[string]string) {
	if _, ok := environ["GOGC"]; !ok {
		debug.SetGCPercent(defaultGOGC)
	}
}
