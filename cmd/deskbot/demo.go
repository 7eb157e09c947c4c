package main

import (
	"context"
	"io"
	"time"

	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/demo"
)

// `deskbot demo` is package demo's (demo.Main): the whole service, pointed
// at the demo's fakes. The service is this Main.

// runDemo is `deskbot demo`.
func runDemo(ctx context.Context, environ map[string]string, stdout, stderr io.Writer) int {
	return demo.Main(ctx, environ, stdout, stderr, newDemoMain)
}

// newDemoMain is the service as the demo runs it: its Redis is in memory
// on purpose (Demo).
func newDemoMain(cfg config.Config, logs io.Writer) *Main {
	log, redactor := config.NewLogger(cfg, logs)
	return &Main{Config: cfg, Log: log, Redactor: redactor, Now: time.Now, StopTimeout: 30 * time.Second, FlushTimeout: 10 * time.Second, Demo: true}
}
