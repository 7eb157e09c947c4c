package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/sandbox"
	"github.com/deskbot/deskbot/store"
)

// Main is the whole service. Run starts it and returns; Close stops it.
type Main struct {
	Config Config
	Log    *slog.Logger
	Now    deskbot.Now
	// StopTimeout bounds how long Close waits for running turns and held
	// calls to finish.
	StopTimeout time.Duration

	Store   *store.Store
	Gate    *gate.Gate
	Sandbox *sandbox.Manager
	Broker  *broker.Paper
	Desks   *agent.Desks
	Bot     *bot.Bot

	sweeper *gate.Sweeper
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
}

// NewMain builds a Main that logs to stderr.
func NewMain(cfg Config) *Main {
	return &Main{Config: cfg, Log: newLogger(cfg, os.Stderr), Now: time.Now, StopTimeout: 30 * time.Second}
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Run opens every part and starts the service's loops. It returns once the
// service is running; an error means nothing is left running (call Close).
func (m *Main) Run(ctx context.Context) (err error) {
	cfg, log := m.Config, m.Log
	ctx, m.cancel = context.WithCancel(ctx)
	m.errs = make(chan error, 4)

	if m.Store, err = store.Open(ctx, store.Options{URL: cfg.RedisURL, Prefix: cfg.RedisPrefix}); err != nil {
		return fmt.Errorf("redis: %s", deskbot.ErrorMessage(err))
	}
	if m.Store.Embedded() {
		log.Warn("REDIS_URL is not set: using an in-memory Redis. Requests, grants, queues and the audit trail will NOT survive a restart.")
	}

	if m.Sandbox, err = sandbox.NewManager(sandbox.Config{
		DataDir: cfg.DataDir, Mode: cfg.Sandbox, Network: cfg.SandboxNetwork,
		PassEnv: cfg.SandboxEnv, Timeout: cfg.SandboxTimeout, Logger: log,
	}); err != nil {
		return fmt.Errorf("sandbox: %s", deskbot.ErrorMessage(err))
	}
	if cfg.SandboxNetwork {
		if auth, err := m.Store.RequiresAuth(ctx); err == nil && !auth {
			log.Warn("Redis accepts clients without a password and SANDBOX_NETWORK is on: a desk's commands could reach Redis. Set a password (requirepass) and put it in REDIS_URL, or set SANDBOX_NETWORK=false.")
		}
	}
	m.Broker = broker.NewPaper(m.Store.Client(), m.Store.Key, m.Now)

	desks, err := agent.LoadDesks(cfg.Desks, cfg.DesksFile, []model.Config{m.defaultModel()})
	if err != nil {
		return fmt.Errorf("desks: %s", deskbot.ErrorMessage(err))
	}
	regs, err := agent.BuildRegistries(desks, m.Sandbox.Tools,
		func(string) []deskbot.Tool { return broker.Tools(m.Broker) },
		agent.MessageTools(m.Store, cfg.DataDir, m.Now))
	if err != nil {
		return fmt.Errorf("desks: %s", deskbot.ErrorMessage(err))
	}
	models, err := agent.NewModels(desks)
	if err != nil {
		return fmt.Errorf("models: %s", deskbot.ErrorMessage(err))
	}

	m.Gate = gate.New(gate.Config{
		Tools: cfg.ApprovalTools, Expiry: cfg.ApprovalExpiry,
		GrantTTL: cfg.GrantTTL, DenyReasonWait: cfg.DenyReasonWait,
	}, m.Store, regs, m.Now, log)
	// Before anything can decide: a call left running by a crash is
	// reported, never run again.
	if n, err := m.Gate.Recover(ctx); err != nil {
		return fmt.Errorf("recover interrupted calls: %s", deskbot.ErrorMessage(err))
	} else if n > 0 {
		log.Warn("held calls interrupted by the last stop were reported to their desks", "count", n)
	}
	if m.sweeper, err = gate.NewSweeper(ctx, m.Gate, cfg.SweepSchedule, log); err != nil {
		return errors.New(deskbot.ErrorMessage(err))
	}

	exec := &agent.ToolCallExecutor{Runner: regs, Gate: m.Gate, Events: m.Store, Memory: m.Store, Now: m.Now, Log: log}
	m.Desks = agent.New(desks, agent.Deps{
		Inbox: m.Store, State: m.Store, History: m.Store, Notes: m.Store, Events: m.Store,
		Executor: exec, Registries: regs, Models: models, Now: m.Now, Log: log, Requests: m.Store,
	})

	names := make([]string, len(desks))
	for i, d := range desks {
		names[i] = d.Name
	}
	if m.Bot, err = bot.New(bot.Config{
		Token: cfg.TelegramToken, APIURL: strings.TrimRight(cfg.TelegramAPIURL, "/"), ChatID: cfg.TelegramChatID,
		Approvers: cfg.TelegramApprovers, Desks: names, DataDir: cfg.DataDir, Now: m.Now,
	}, bot.Deps{
		Gate: m.Gate, Inbox: m.Store, Desks: m.Store, Broker: m.Broker, Requests: m.Store,
		Notes: m.Store, Events: m.Store, Audit: m.Store,
	}, log); err != nil {
		return fmt.Errorf("telegram: %s", deskbot.ErrorMessage(err))
	}

	m.sweeper.Start()
	m.goRun("desks", func() error { return m.Desks.Run(ctx) })
	m.goRun("bot", func() error { return m.Bot.Run(ctx) })
	log.Info("deskbot started", "desks", strings.Join(names, ","), "sandbox", m.Sandbox.Mode(),
		"approval_tools", strings.Join(cfg.ApprovalTools, ","), "embedded_redis", m.Store.Embedded())
	return nil
}

// Errs reports a loop that stopped with an error while the service ran.
func (m *Main) Errs() <-chan error { return m.errs }

func (m *Main) goRun(name string, f func() error) {
	m.wg.Go(func() {
		if err := f(); err != nil && !errors.Is(err, context.Canceled) {
			m.Log.Error("stopped with an error", "part", name, "err", err)
			select {
			case m.errs <- fmt.Errorf("%s: %w", name, err):
			default:
			}
		}
	})
}

func (m *Main) defaultModel() model.Config {
	key := m.Config.ModelAPIKey
	if m.Config.ModelProvider == model.Anthropic && key == "" {
		key = m.Config.AnthropicAPIKey
	}
	return model.Config{
		Provider: m.Config.ModelProvider, BaseURL: m.Config.ModelBaseURL, APIKey: key,
		Model: m.Config.ModelName, Timeout: m.Config.ModelTimeout,
	}
}

// Close stops taking updates and triggers, lets running work finish up to
// StopTimeout, then closes the sandbox and Redis.
func (m *Main) Close() error {
	if m.cancel != nil {
		m.cancel()
	}
	if m.sweeper != nil {
		m.sweeper.Stop()
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(m.StopTimeout):
		m.Log.Warn("stop timed out; some work was cut short", "after", m.StopTimeout)
	}
	var errs []error
	if m.Sandbox != nil {
		errs = append(errs, m.Sandbox.Close())
	}
	if m.Store != nil {
		errs = append(errs, m.Store.Close())
	}
	return errors.Join(errs...)
}
