// Command deskbot runs the service: desks (LLM trading agents) supervised
// by a team in a Telegram group, with guarded tool calls held in Redis until
// a person decides.
//
// main stays tiny: it reads the environment, builds a Main and runs it until
// a signal. Tests start the whole service in-process through Main.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	environ := environMap(os.Environ())
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(runCheck(context.Background(), environ, os.Stdout))
	}
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "usage: deskbot [check]\n")
		os.Exit(2)
	}

	cfg, err := LoadConfig(environ)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deskbot: configuration:\n"+err.Error())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := NewMain(cfg)
	if err := m.Run(ctx); err != nil {
		m.Close()
		fmt.Fprintln(os.Stderr, "deskbot: "+err.Error())
		os.Exit(1)
	}
	<-ctx.Done()
	stop() // a second signal now ends the process at once
	m.Log.Info("stopping")
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "deskbot: "+err.Error())
		os.Exit(1)
	}
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
