package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/deskbot/deskbot/config"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kite"
	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/hub"
	"github.com/deskbot/deskbot/leader"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/risk"
	"github.com/deskbot/deskbot/sandbox"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/trading"
	"github.com/deskbot/deskbot/watch"
	"github.com/deskbot/deskbot/webapp"
)

// Main is the whole service. Run starts it and returns; Close stops it.
//
// Any number of Mains may share one Redis and prefix: one leads and the
// others stand by (package leader). Every Main builds every part at Run, so
// a mistake in the configuration stops a standby's start too, and serves
// /healthz and /metrics; only the leader starts what acts: Recover, the
// sweep, the desks (and their schedules), the bot (polling and outbox) and
// the event metrics. A standby starts them the moment it takes the lease. A
// leader whose term ends unasked (it could not renew the lease in time) has
// everything that acts cancelled at once, before the lease can pass on, and
// reports it on Errs: the process exits and its supervisor starts it again,
// as a standby.
type Main struct {
	Config config.Config
	Log    *slog.Logger
	// Redactor holds what Log scrubs: the configuration's secrets, and
	// each day's Kite access token as the login learns it. Nil (a test's
	// logger, which scrubs nothing so that a leak shows at its source):
	// nothing is added.
	Redactor *ops.Redactor
	Now      deskbot.Now
	// StopTimeout bounds how long Close waits for running turns and held
	// calls to finish.
	StopTimeout time.Duration
	// FlushTimeout bounds how long Close then spends delivering what is
	// left in the outbox to the chat.
	FlushTimeout time.Duration
	// Demo is set by `deskbot demo`, whose Redis is in memory on purpose:
	// the warnings meant for a real run about it are not logged.
	Demo bool
	// Sender paces the chat's sends and retries; zero values keep
	// Telegram's limits. Not configuration: the tests' world shortens the
	// gaps, so that a test does not wait out Telegram's pace.
	Sender bot.SenderOptions

	Store   *store.Store
	Gate    *gate.Gate
	Sandbox *sandbox.Manager
	Broker  deskbot.Broker
	// Hub is the process's one view of the market, in front of the
	// broker's: every desk's market tools and the approvers' prices read
	// through it, so the account's request limits are shared and kept.
	Hub     *hub.Hub
	Desks   *agent.Desks
	Bot     *bot.Bot
	Metrics *ops.Metrics
	HTTP    *ops.Server    // /healthz and /metrics
	Web     *webapp.Server // the desks page; nil without WEBAPP_URL
	Login   *kite.Login    // Kite's daily login; nil without KITE_API_KEY
	Kite    *kite.Client   // the one client of Kite; nil without KITE_API_KEY
	// ClaudeCode builds the Claude Code desks; its MCP server is their
	// tools, nil when no desk uses it.
	ClaudeCode claudecode.Desks
	sizes      deskbot.ContractSizes // orders' contract sizes: the defaults and DESKS_FILE's
	trading    *trading.Parts        // the broker, its update loop, and Kite's login and day
	algoIDs    map[string]string     // the desks' own algo ids at Kite (algo_id in DESKS_FILE)
	// calendar is MARKET_HOURS and MARKET_HOLIDAYS; nil without Kite.
	calendar *exchange.Calendar
	// days is the calendar the days are counted on (the day's report,
	// /pnl week, the page's week): calendar, else the same variables read
	// without Kite.
	days *exchange.Calendar
	lead leader.Seat // the lead: the parts see its term; it starts and stops leading

	sweeper *gate.Sweeper
	risk    *risk.Watcher
	// Feed is the hub's live prices, which the leader's watches
	// evaluator follows (Hub unless a test sets another).
	Feed    deskbot.Feed
	watches *watch.Evaluator // the desks' price watches; the leader's
	report  *report.Daily    // the day's report at REPORT_AT; the leader's
	// loginReminder asks for Kite's login at KITE_LOGIN_REMINDER on
	// trading days without a session; the leader's. Nil without Kite.
	loginReminder *report.Daily
	drain         *ops.Drain // the graceful stop, and the loops it stops
	errs          chan error

	closeOnce sync.Once
	closeErr  error
}

// NewMain builds a Main that logs to stderr.
func NewMain(cfg config.Config) *Main {
	log, r := config.NewLogger(cfg, os.Stderr)
	return &Main{Config: cfg, Log: log, Redactor: r, Now: time.Now, StopTimeout: 30 * time.Second, FlushTimeout: 10 * time.Second}
}

// Run opens every part and starts the service's loops. It returns once the
// service is running; an error means nothing is left running (call Close).
func (m *Main) Run(ctx context.Context) (err error) {
	cfg := m.Config
	// Again here, for a Config not made by LoadConfig: the gate must get
	// the trimmed, checked APPROVAL_TOOLS, and no desk a secret.
	if p := cfg.Guard(environMap(os.Environ())); len(p) > 0 {
		return errors.New(strings.Join(p, "\n"))
	}
	// Before any desk runs: the service's environment and memory are
	// unreadable to processes of its own uid.
	if err := sandbox.HardenProcess(); err != nil {
		m.Log.Warn(deskbot.ErrorMessage(err))
	}
	m.errs = make(chan error, 4)
	m.drain = ops.NewDrain(ctx)
	m.drain.Failed = m.fail
	// A term outlives the drain's phases: the leader keeps its lease while
	// it finishes running calls and flushes the outbox, and releases it
	// last.
	termParent := ctx
	ctx = m.drain.Soft()

	// The desks first: how many there are sizes the store's pools.
	desks, err := agent.LoadDesks(cfg.Desks, cfg.DesksFile, []model.Config{cfg.DefaultModel()})
	if err != nil {
		return fmt.Errorf("desks: %s", deskbot.ErrorMessage(err))
	}
	if err := config.CheckClaudeCode(ctx, cfg.ClaudeBin, desks); err != nil {
		return err
	}
	names := make([]string, len(desks))
	for i, d := range desks {
		names[i] = d.Name
	}
	if m.sizes, err = agent.LoadContractSizes(cfg.DesksFile); err != nil {
		return fmt.Errorf("desks: %s", deskbot.ErrorMessage(err))
	}
	m.algoIDs = agent.AlgoIDs(desks)
	if err := m.openParts(ctx, names, agent.RiskRules(desks)); err != nil {
		return err
	}
	backlog := &bot.Backlog{}
	if err := m.buildDesks(ctx, desks, names, backlog); err != nil {
		return err
	}
	if err := m.buildBot(ctx, names, agent.Policies(desks)); err != nil {
		return err
	}
	backlog.Set(m.Bot)
	m.probeAtStart(ctx, desks)
	if err := m.serveHTTP(desks, m.trading.Mounts()); err != nil {
		return err
	}
	role, err := m.takeLead(termParent)
	if err != nil {
		return err
	}
	m.Log.Info("deskbot started", "role", role, "desks", strings.Join(names, ","), "sandbox", m.Sandbox.Mode(),
		"approval_tools", strings.Join(cfg.ApprovalTools, ","), "embedded_redis", m.Store.Embedded(),
		"http", m.HTTP.Addr(), "leader_lease", m.lead.Elector.TTL)
	return nil
}

// openParts opens what everything else stands on: the store, the
// sandbox and the broker.
// desks are the desks this process runs, rules their risk rules.
func (m *Main) openParts(ctx context.Context, desks []string, rules map[string]deskbot.RiskRules) (err error) {
	cfg, log := m.Config, m.Log
	o := cfg.StoreOptions()
	o.Desks = len(desks)
	if m.Store, err = store.Open(ctx, o); err != nil {
		return fmt.Errorf("redis: %s", deskbot.ErrorMessage(err))
	}
	if m.Store.Embedded() && !m.Demo {
		log.Warn("REDIS_URL is not set: using an in-memory Redis. Requests, grants, queues and the audit trail will NOT survive a restart.")
	}

	if m.Sandbox, err = sandbox.NewManager(sandbox.Config{
		DataDir: cfg.DataDir, Mode: cfg.Sandbox, Network: cfg.SandboxNetwork,
		PassEnv: cfg.SandboxEnv, Timeout: cfg.SandboxTimeout, JobTimeout: cfg.SandboxJobTimeout, Logger: log,
	}); err != nil {
		return fmt.Errorf("sandbox: %s", deskbot.ErrorMessage(err))
	}
	if cfg.SandboxNetwork {
		if auth, err := m.Store.RequiresAuth(ctx); err == nil && !auth {
			log.Warn("Redis accepts clients without a password and SANDBOX_NETWORK is on: a desk's commands could reach Redis. Set a password (requirepass) and give it as REDIS_PASSWORD, or set SANDBOX_NETWORK=false.")
		}
	}
	if err := m.openBroker(ctx, desks, rules); err != nil {
		return fmt.Errorf("broker: %s", deskbot.ErrorMessage(err))
	}
	m.Hub = hub.New(hub.Config{Market: m.Broker, Prices: m.Broker, Stream: m.Broker, DataDir: cfg.DataDir, Now: m.Now, Log: log})
	if m.Feed == nil {
		m.Feed = m.Hub
	}

	return nil
}

// buildDesks builds the desks' tools and models, the gate and its sweeper,
// the risk rules' watcher, and the desks, each wrapped as the service runs them: every tool and
// backend counted by the metrics, every tool surviving the first phase of
// a stop, the store behind the stop's bookkeeping.
func (m *Main) buildDesks(ctx context.Context, desks []agent.DeskConfig, names []string, backlog deskbot.ChatBacklog) (err error) {
	cfg, log := m.Config, m.Log
	policies := agent.Policies(desks)
	m.watches = &watch.Evaluator{Store: m.Store, Feed: m.Feed, Log: log}
	if err := config.CheckPolicies(desks, cfg.ApprovalTools, cfg.TelegramApprovers); err != nil {
		return fmt.Errorf("DESKS_FILE %s: %s", cfg.DesksFile, deskbot.ErrorMessage(err))
	}
	m.Metrics = ops.NewMetrics(func(ctx context.Context) (int64, int64, error) {
		return m.Store.EventBacklog(ctx, bot.OutboxGroup)
	})
	m.Metrics.WatchPools(ops.StorePools(m.Store))
	// Every tool counts its calls and survives the first phase of a stop.
	wrap := func(src agent.ToolSource) agent.ToolSource { return m.drain.WrapTools(m.Metrics.WrapTools(src)) }
	rules := agent.RiskRules(desks)
	// The broker itself puts each order to the halt and the square-off
	// just before it makes it (openBroker), so the tools use it as it is.
	regs, err := agent.BuildRegistries(desks, wrap(m.Sandbox.Tools),
		wrap(func(string) []deskbot.Tool { return broker.Tools(m.Broker, policies.Product, log) }),
		wrap(agent.MessageTools(m.Store, cfg.DataDir, m.Now, backlog)),
		wrap(func(string) []deskbot.Tool { return m.Hub.Tools(cfg.DataDir) }),
		wrap(func(string) []deskbot.Tool {
			return watch.Tools(m.Store, m.Hub, cfg.MaxWatches, m.watches.Changed, m.Now)
		}))
	if err != nil {
		return fmt.Errorf("desks: %s", deskbot.ErrorMessage(err))
	}
	m.ClaudeCode = claudecode.Desks{Bin: cfg.ClaudeBin, DataDir: cfg.DataDir, Sessions: m.Store, Log: log}
	models, err := agent.NewModels(desks, log, agent.Backends{agent.ClaudeCode: m.ClaudeCode.Backend})
	if err != nil {
		return fmt.Errorf("models: %s", deskbot.ErrorMessage(err))
	}
	models = m.Metrics.WrapChains(models)

	// One set of hard limits, the gate's: the desks' calls (Gate.Ask) and
	// an approver's change of one (Gate.Change) are checked by the same
	// rules.
	// One reading of an order: where a desk's call enters, parsed, checked
	// and sized once against the market (package sizing); the limits, the
	// gate and the chat use what it read.
	sizer := &sizing.Sizer{Market: m.Broker, Check: m.Broker.Check, Orders: m.Broker, MaxAge: cfg.PriceMaxAge, Now: m.Now}
	if m.calendar != nil {
		sizer.Open = m.calendar.Open
	}
	limits := &gate.HardLimits{Policies: policies, Risk: rules, Desks: m.Store, Broker: m.Broker, Sizer: sizer, Requests: m.Store, Counter: m.Store, Audit: m.Store, Now: m.Now, Log: log}
	if m.Gate, err = gate.New(gate.Config{
		Tools: cfg.ApprovalTools, Expiry: cfg.ApprovalExpiry,
		GrantTTL: cfg.GrantTTL, GrantMaxNotional: cfg.GrantMaxNotional, DenyReasonWait: cfg.DenyReasonWait, Policies: policies,
		Approvers: cfg.TelegramApprovers, Leader: &m.lead, Books: m.Broker, Limits: limits,
	}, m.Store, regs, m.Now, log); err != nil {
		return errors.New(deskbot.ErrorMessage(err))
	}
	if m.sweeper, err = gate.NewSweeper(ctx, m.Gate, cfg.SweepSchedule, log); err != nil {
		return errors.New(deskbot.ErrorMessage(err))
	}

	m.Desks = agent.New(desks, agent.Deps{
		Store: m.drain.WrapTurns(m.Store), Gate: m.Gate, Tools: regs, Models: models,
		Reader: sizer, Now: m.Now, Log: log,
	})
	m.risk = &risk.Watcher{Desks: names, Rules: rules, Store: m.Store, Broker: m.Broker, Now: m.Now, Every: cfg.RiskCheckEvery, Log: log}

	return nil
}

// senderOptions are m.Sender, told of retries for the metrics.
func (m *Main) senderOptions() bot.SenderOptions {
	so := m.Sender
	so.OnRetry = m.Metrics.OnTelegramRetry
	return so
}

// buildBot builds the Telegram side (it starts polling when this process
// leads).
func (m *Main) buildBot(ctx context.Context, names []string, policies deskbot.Policies) (err error) {
	cfg, log := m.Config, m.Log
	chat := m.Store.Chat()
	// One calendar counts the days: the day's report, /pnl week and the
	// page's week follow the operator's trading days, as the login
	// reminder does (the calendar Kite's set-up read, else the same
	// variables read here: a paper desk's week is the same week).
	if m.days = m.calendar; m.days == nil {
		if m.days, err = exchange.ParseCalendar(cfg.MarketHours, cfg.MarketHolidays); err != nil {
			return fmt.Errorf("MARKET_HOURS or MARKET_HOLIDAYS: %w", err)
		}
	}
	if m.Bot, err = bot.New(bot.Config{
		Token: cfg.TelegramToken, APIURL: strings.TrimRight(cfg.TelegramAPIURL, "/"), ChatID: cfg.TelegramChatID,
		Approvers: cfg.TelegramApprovers, Desks: names, DataDir: cfg.DataDir, Now: m.Now,
		Sender: m.senderOptions(), Topics: cfg.TelegramTopics,
		Remind: cfg.ApprovalRemind, Pin: cfg.TelegramPin, Quiet: cfg.Quiet(),
		WebApp: bot.WebApp{URL: cfg.WebAppURL, Name: cfg.WebAppName}, Policies: policies,
		PriceMaxAge: cfg.PriceMaxAge,
		TradingDay:  m.days.TradingDay,
	}, bot.Deps{
		// The chat's own pool: a /tell, a status or the outbox never waits
		// for a connection behind the desks. A decision goes through the
		// gate, on the work pool, sized so that desks leave it room
		// (store/pools.go).
		Gate: m.Gate, Inbox: chat, Desks: chat, Broker: m.Broker, Requests: chat, Market: m.Hub,
		Notes: chat, Events: chat, Audit: chat, Risk: chat, Leader: &m.lead,
		Login: m.trading.BrokerLogin(), Watches: chat,
	}, log); err != nil {
		return fmt.Errorf("telegram: %s", config.TelegramTrouble(ctx, cfg, err))
	}
	reportAt, err := report.Everyday(cfg.ReportAt)
	if err != nil {
		return fmt.Errorf("REPORT_AT: %s", deskbot.ErrorMessage(err))
	}
	m.report = report.NewDaily(m.drain.Soft(), cfg.ReportAt, reportAt, report.OnTradingDays(m.Now, m.days.TradingDay, m.Bot.SendDayReport), log)
	if m.loginReminder, err = m.trading.LoginReminder(m.drain.Soft(), cfg.KiteLoginReminder, log); err != nil {
		return err
	}

	return nil
}

// serveHTTP serves the health checks, the metrics, the desks page and what
// else mounts (Kite's login callback).
func (m *Main) serveHTTP(desks []agent.DeskConfig, mounts []ops.Mount) error {
	cfg := m.Config
	page, err := m.webApp(desks)
	if err != nil {
		return fmt.Errorf("desks page: %s", deskbot.ErrorMessage(err))
	}
	mounts = append(mounts, page...)
	if m.HTTP, err = ops.Listen(cfg.HTTPAddr, ops.RoleHealthHandler(3*time.Second, m.role, func(role string) []ops.Check {
		checks := []ops.Check{{Name: "redis", Func: m.Store.Ping}}
		if role == ops.RoleLeader {
			checks = append(checks, ops.Check{Name: "telegram", Func: func(context.Context) error { return m.Bot.PollingAlive(time.Now()) }})
		}
		return checks
	}), m.Metrics.Handler(), mounts...); err != nil {
		return fmt.Errorf("HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}

	return nil
}

// takeLead takes the lead now, so that a lone instance (or the first of
// several) is leading when Run returns; otherwise it stands by and keeps
// trying (leader.Seat). It reports the role this process starts in.
func (m *Main) takeLead(termParent context.Context) (string, error) {
	// The lease's own pool: a renewal never waits for a connection.
	m.lead.Elector = &leader.Elector{Lease: m.Store.Lease(), TTL: cmp.Or(m.Config.LeaderLease, 10*time.Second), Now: m.Now, Log: m.Log}
	m.lead.Lead, m.lead.Lost, m.lead.Failed = m.startLeading, m.lostLead, m.fail
	if leading, err := m.lead.Take(termParent, m.Config.DataDir); err != nil || !leading {
		return ops.RoleStandby, err
	}
	return ops.RoleLeader, nil
}

// lostLead stops at once everything that acts: the term ended unasked (not
// by Close's release), and the lease may pass on a quarter lease from now.
func (m *Main) lostLead() {
	m.drain.Stop()
	m.drain.Kill()
	go m.sweeper.Stop()
	go m.report.Stop()
	if m.loginReminder != nil {
		go m.loginReminder.Stop()
	}
	m.fail(errors.New("lost the leader lease: stopped everything only the leader does; exiting so that the supervisor starts this instance again as a standby"))
}

// startLeading starts everything that only the leader runs, under term.
func (m *Main) startLeading(term *leader.Term) error {
	ctx := m.drain.Soft()
	m.Sandbox.TellNoTerminal(ctx, m.Store, m.Store, m.Now())
	// Before anything can decide: a call left running by a leader that is
	// gone (a crash, a stop cut short, a lost lease) is reported, never run
	// again. Calls of a live leader are not touched (the fence).
	if n, err := m.Gate.Recover(ctx); err != nil {
		return fmt.Errorf("recover interrupted calls: %s", deskbot.ErrorMessage(err))
	} else if n > 0 {
		m.Log.Warn("held calls interrupted by the last stop were reported to their desks", "count", n)
	}
	m.sweeper.Start()
	m.report.Start()
	if m.loginReminder != nil {
		m.loginReminder.Start()
	}
	m.drain.GoHard("desks", func() error { return m.Desks.Run(m.drain.Hard()) })
	// The market hub lives as long as the desks that read it.
	m.drain.GoHard("hub", func() error { return m.Hub.Run(m.drain.Hard()) })
	// The lifetime of the calls the gate allows, from the chat or the
	// page; a stop waits for them once the bot's last tap is handled.
	m.Gate.Start(ctx)
	m.drain.Go("bot", func() error { defer m.Gate.Stop(); return m.Bot.Run(ctx) })
	m.drain.Go("metrics", func() error { return m.Metrics.CountEvents(ctx, m.Store, "deskbot", m.Log) })
	m.drain.Go("risk", func() error { return m.risk.Run(ctx) })
	m.drain.Go("watches", func() error { return m.watches.Run(ctx) })
	if m.trading.Day != nil {
		m.drain.Go("kite", func() error { m.trading.Day.Run(ctx); return nil })
	}
	m.drain.Go("orders", func() error { m.trading.Updates(ctx); return nil })
	if m.Web != nil {
		m.drain.Go("webapp", func() error { return m.Web.Run(ctx) })
	}
	m.Log.Info("leading", "token", term.Token())
	return nil
}

// fail reports an error on Errs, once at most per buffer slot.
func (m *Main) fail(err error) {
	m.Log.Error("stopped with an error", "err", err)
	select {
	case m.errs <- err:
	default:
	}
}

// role is this process's role for /healthz.
func (m *Main) role() string {
	if m.lead.Valid() {
		return ops.RoleLeader
	}
	return ops.RoleStandby
}

// Errs reports a loop that stopped with an error while the service ran.
func (m *Main) Errs() <-chan error { return m.errs }

// Close stops the service gracefully: it stops taking updates, triggers
// and sweeps; lets running turns and tool calls finish, up to StopTimeout;
// delivers what is left in the outbox, up to FlushTimeout; releases the
// leader lease, so a standby takes over at once; then closes the HTTP
// server, the sandbox and Redis. The lease is kept (renewed) until then: a
// standby must not find a call still running and report it interrupted.
func (m *Main) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Main) close() error {
	term := m.lead.Leave()
	if m.drain != nil {
		m.drain.Stop()
	}
	if m.sweeper != nil {
		m.sweeper.Stop()
	}
	if m.report != nil {
		m.report.Stop()
	}
	if m.loginReminder != nil {
		m.loginReminder.Stop()
	}
	clean := true
	if m.drain != nil {
		clean = m.drain.Finish(cmp.Or(m.StopTimeout, 30*time.Second))
	}
	if !clean {
		m.Log.Warn("stop timed out; running work was cut short", "after", m.StopTimeout)
	}
	if clean && term != nil && term.Valid() {
		ctx, cancel := context.WithTimeout(term.Context(), cmp.Or(m.FlushTimeout, 10*time.Second))
		m.Bot.Flush(ctx)
		cancel()
	}
	if term != nil {
		// At once, not at the lease's end: a standby takes over within its
		// retry step. Nothing of this process acts any more.
		if err := term.Release(context.Background()); err != nil {
			m.Log.Warn("could not release the leader lease; a standby takes over when it lapses", "err", deskbot.ErrorMessage(err))
		}
	}
	var errs []error
	if m.HTTP != nil {
		errs = append(errs, m.HTTP.Close())
	}
	errs = append(errs, m.ClaudeCode.Close())
	if m.Sandbox != nil {
		errs = append(errs, m.Sandbox.Close())
	}
	if m.Store != nil {
		errs = append(errs, m.Store.Close())
	}
	m.Log.Info("stopped")
	return errors.Join(errs...)
}
