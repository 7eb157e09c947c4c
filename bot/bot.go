package bot

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskfs"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
	tele "gopkg.in/telebot.v3"
)

// Config is the bot's part of the service configuration.
type Config struct {
	Token       string  // TELEGRAM_TOKEN; never logged or shown
	APIURL      string  // TELEGRAM_API_URL
	ChatID      int64   // TELEGRAM_CHAT_ID, the team's group
	Approvers   []int64 // TELEGRAM_APPROVERS
	PollTimeout time.Duration
	Desks       []string // the desks, in the order /desks shows them
	DataDir     string   // pictures are trusted only under DataDir/desks/<desk>
	Now         deskbot.Now
	// TradingDay is the operator's calendar (MARKET_HOURS,
	// MARKET_HOLIDAYS) /pnl week counts its days on; nil: Monday to Friday.
	TradingDay func(time.Time) bool
	// Sender tunes pacing and retries; zero values keep Telegram's limits.
	// Tests shorten the gaps.
	Sender SenderOptions
	// Consumer names this process in the event stream's consumer group;
	// default "bot".
	Consumer string
	// Topics gives each desk a forum topic of its own in the group
	// (TELEGRAM_TOPICS): its chatter goes there, held calls stay in
	// General, and a plain message in a desk's topic goes to that desk.
	Topics bool
	// WebApp is the desks page, opened from /desks and from approvers'
	// menu buttons (webapp.go); zero: no page.
	WebApp WebApp
	// Quiet is what the group receives without a notification sound
	// (TELEGRAM_QUIET); held calls, reminders and halts always sound.
	Quiet Quiet
	// Pin pins a held call's message while its request is open
	// (TELEGRAM_PIN; pin.go).
	Pin bool
	// Policies are the desks' policies: a held order that names no
	// product is shown with its desk's (Policies.Product), the product
	// that trades.
	Policies deskbot.Policies
	// PriceMaxAge is PRICE_MAX_AGE: a held order's last price older than
	// it is shown as stale, never as current.
	PriceMaxAge time.Duration
	// Remind is how long before an unanswered request lapses the bot
	// reminds the approvers who have not answered (APPROVAL_REMIND;
	// remind.go); 0: no reminders.
	Remind time.Duration
	// RemindEvery is how often the open requests are scanned for a
	// reminder that is due, in real time (default 5s), and never less
	// often than four times in Remind (but not more often than every
	// 250ms unless set so): a reminder goes out within a quarter of its
	// window of falling due, never in the window's last second (with
	// APPROVAL_EXPIRY 15s, a scan every 5s would remind in the second
	// before the lapse, or not at all). When one is due is read on Now.
	RemindEvery time.Duration
	// StopGrace is how long, after polling stopped, the updates already
	// taken may still finish their work (store writes, replies); default
	// 5s. They were counted as handed over, so the next leader is not
	// given them again: cut off, they would be lost.
	StopGrace time.Duration
}

// Deps are the parts of the service the bot acts on.
type Deps struct {
	Gate     deskbot.Gate
	Inbox    deskbot.Inbox
	Desks    deskbot.DeskStore
	Broker   deskbot.Broker
	Requests deskbot.OpenRequests
	Notes    deskbot.FencedNotes
	Events   Events
	Audit    deskbot.Auditor
	// Risk is where the day's P&L samples are read for /pnl and the day's
	// report; nil: no report.
	Risk deskbot.RiskStore
	// Leader, when set, is this process's leadership among several on one
	// Redis: the update offset is then kept in Notes, written fenced by the
	// lease's token, and polling stops when it ends.
	Leader deskbot.Leadership
	// Login, when the broker needs a person's daily login (Kite), starts
	// one for /login; nil: the broker needs none.
	Login deskbot.BrokerLogin
	// Watches are the desks' price watches, which /desk lists; nil: not
	// listed.
	Watches deskbot.WatchStore
	// Market is where a shown position's last price is read with its time
	// (the hub); nil, or no price within marketWait: the book's, marked
	// as the broker's.
	Market deskbot.Market
}

// Bot is the team's Telegram bot.
type Bot struct {
	cfg       Config
	deps      Deps
	log       *slog.Logger
	now       deskbot.Now
	tb        *tele.Bot // long polling and routing; stopped first on shutdown
	poll      *poller   // tb's poller, kept typed: its leader check is the only path for updates
	out       *tele.Bot // sends, edits and answers; never stopped
	sender    *Sender
	outbox    *Outbox
	topics    *topics // nil without Config.Topics
	approvers map[int64]bool
	desks     map[string]bool
	track     tracker
	dispatch  dispatcher // handlers: taps at once, messages in order per chat
	replies   dispatcher // replies to messages, in order per chat
	members   memberCache
	// prompts is held while a prompt that asks for a reply (a denial's
	// reason, a change) is sent and its routing note written; a reply is
	// read once none is being set up. A tap runs beside the messages, so
	// without it a reply to a prompt that has just appeared could be read
	// before the note that routes it is written, and taken for chatter.
	prompts sync.RWMutex

	mu   sync.Mutex
	work context.Context // handlers' work: outlives Run's by StopGrace, set by Run
}

// New builds the bot and checks the token with getMe (telebot needs the
// bot's username to accept /cmd@botname). It does not poll until Run. A nil
// log logs nothing.
func New(cfg Config, deps Deps, log *slog.Logger) (*Bot, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	if len(cfg.Approvers) == 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "TELEGRAM_APPROVERS names nobody; at least one approver is needed")
	}
	b := &Bot{cfg: cfg, deps: deps, log: log, now: cfg.Now, approvers: map[int64]bool{}, desks: map[string]bool{}}
	for _, id := range cfg.Approvers {
		b.approvers[id] = true
	}
	for _, d := range cfg.Desks {
		b.desks[d] = true
	}
	if err := b.clients(); err != nil {
		return nil, err
	}
	b.sendings()
	b.routes()
	return b, nil
}

// withDefaults fills what cfg leaves unset.
func (cfg Config) withDefaults() Config {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	// getUpdates takes whole seconds, and 0 would turn the long poll into
	// a busy loop.
	cfg.PollTimeout = max(cfg.PollTimeout.Round(time.Second), time.Second)
	if cfg.Consumer == "" {
		cfg.Consumer = "bot"
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 5 * time.Second
	}
	if cfg.RemindEvery <= 0 {
		cfg.RemindEvery = 5 * time.Second
	}
	if q := cfg.Remind / 4; q > 0 && q < cfg.RemindEvery {
		// Floored, but never above a RemindEvery set shorter still.
		cfg.RemindEvery = max(q, min(minRemindEvery, cfg.RemindEvery))
	}
	return cfg
}

// clients builds the two Telegram clients: the polling one and the one
// that sends.
func (b *Bot) clients() error {
	cfg, log := b.cfg, b.log
	p := &poller{timeout: cfg.PollTimeout, log: log, scrub: b.scrub, leader: b.deps.Leader}
	if b.deps.Leader != nil {
		p.offsets = b.deps.Notes
	}
	tb, err := tele.NewBot(tele.Settings{
		URL:     cfg.APIURL,
		Token:   cfg.Token,
		Poller:  p,
		Verbose: false, // verbose mode prints request URLs, token and all
		// Updates reach the handlers in Telegram's order; guard decides
		// what runs side by side (order.go).
		Synchronous: true,
		// The long poll is held up to PollTimeout; the client must wait a
		// little longer than that before it gives up on a request.
		Client: &http.Client{Timeout: cfg.PollTimeout + 15*time.Second},
		OnError: func(err error, c tele.Context) {
			log.Error("telegram handler failed", "err", b.scrub(err.Error()))
		},
	})
	if err != nil {
		// An operator fixes these differently: the network (DNS, proxy,
		// firewall) when Telegram was never reached, the token when it
		// answered and refused.
		if networkFailure(err) {
			return deskbot.Errorf(deskbot.EUNAVAILABLE, "Could not reach Telegram to start the bot (a network failure, not a refusal): %s", b.scrub(err.Error()))
		}
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "Telegram refused to start the bot: %s", b.scrub(err.Error()))
	}
	b.tb, b.poll = tb, p
	// Sends go through a second client that is never stopped: telebot's
	// Stop cancels every request of the client it stops, and a send cut off
	// that way is lost, or sent twice when Telegram had already taken it.
	out, err := tele.NewBot(tele.Settings{
		URL: cfg.APIURL, Token: cfg.Token, Offline: true, Verbose: false,
		Client: &http.Client{Timeout: 30 * time.Second},
	})
	if err != nil {
		return deskbot.Errorf(deskbot.EINVALID, "Telegram client: %s", b.scrub(err.Error()))
	}
	b.out = out
	return nil
}

// sendings builds what sends: the paced sender, the outbox that turns
// events into messages, and the forum's topics when they are on.
func (b *Bot) sendings() {
	cfg, deps, log := b.cfg, b.deps, b.log
	so := cfg.Sender
	if so.Now == nil {
		so.Now = cfg.Now
	}
	if so.Log == nil {
		so.Log = log
	}
	b.sender = NewSender(b.out, so)
	oc := OutboxConfig{
		ChatID:      cfg.ChatID,
		Group:       OutboxGroup,
		Consumer:    cfg.Consumer,
		Now:         cfg.Now,
		PriceMaxAge: cmp.Or(cfg.PriceMaxAge, deskbot.DefaultPriceMaxAge),
		PictureRoot: b.pictureRoot,
		Book:        b.book,
		Product:     b.product,
		Quiet:       cfg.Quiet,
		Pin:         cfg.Pin,
	}
	if deps.Broker != nil {
		oc.Margin, oc.Orders, oc.Price = deps.Broker.Margin, deps.Broker.Orders, deps.Broker.LastPrice
		oc.LastPrice = func(ctx context.Context, symbol string) (float64, bool, error) {
			p, ok, err := deps.Broker.LastPrice(ctx, symbol)
			return p.Value, ok, err
		}
	}
	if deps.Gate != nil {
		oc.Request, oc.Shown = deps.Gate.Request, deps.Gate.Shown
	}
	if deps.Requests != nil {
		oc.Open = deps.Requests.OpenRequests
	}
	b.outbox = NewOutbox(oc, deps.Events, deps.Notes, b.sender, log)
	if cfg.Topics {
		b.topics = newTopics(cfg.ChatID, deps.Notes, b.sender, cfg.Now, log)
		b.outbox.topics = b.topics
	}
}

// Run registers the commands, starts the outbox and long polling, and
// returns when ctx ends, after the poller stopped and the handlers and held
// calls it started have finished. A bot runs once: a second Run is refused.
//
// The updates taken before the stop are finished, not cut off: the poller
// counted them as handed over, so neither Telegram nor the next leader gives
// them again. Their handlers work on a context that ends StopGrace after
// polling stopped, not with ctx; held calls they start still run on ctx
// (the service's drain decides how long a running call may go on).
func (b *Bot) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work, endWork := context.WithCancel(context.WithoutCancel(ctx))
	defer endWork()
	b.mu.Lock()
	if b.work != nil {
		b.mu.Unlock()
		return deskbot.Errorf(deskbot.ECONFLICT, "the bot is already running")
	}
	b.work = work
	b.mu.Unlock()

	if err := b.setCommands(ctx); err != nil {
		// The menu is a convenience; the commands work without it.
		b.log.WarnContext(ctx, "could not register the command menu", "err", b.scrub(err.Error()))
	}
	if b.track.Add() {
		go func() { defer b.track.Done(); b.setMenuButtons(ctx) }()
	}
	outErr := make(chan error, 1)
	go func() { outErr <- b.outbox.Run(ctx) }()
	reminding := make(chan struct{})
	go func() { defer close(reminding); b.reminders(ctx) }()
	polling := make(chan struct{})
	go func() { b.tb.Start(); close(polling) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-outErr:
		cancel()
	}
	b.tb.Stop()
	<-polling
	grace := time.AfterFunc(b.cfg.StopGrace, endWork)
	b.track.Close() // waits for handlers and the held calls they started
	grace.Stop()
	if err == nil {
		err = <-outErr
	}
	<-reminding
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// handlers is the context of the work an update asks for (Run: it ends
// StopGrace after polling stopped); before Run, context.Background.
func (b *Bot) handlers() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.work == nil {
		return context.Background()
	}
	return b.work
}

var commands = []tele.Command{
	{Text: "desks", Description: "Every desk: state, requests, today's P&L, positions"},
	{Text: "desk", Description: "One desk in full: /desk <desk>"},
	{Text: "pnl", Description: "The day's P&L as a picture: /pnl [desk], /pnl week"},
	{Text: "flatten", Description: "Close a desk's positions: /flatten <desk|all>"},
	{Text: "tell", Description: "Tell a desk something: /tell <desk> <text>"},
	{Text: "requests", Description: "Open permission requests"},
	{Text: "grants", Description: "Standing grants, with Revoke buttons"},
	{Text: "pause", Description: "Pause a desk: /pause <desk|all>"},
	{Text: "resume", Description: "Resume a desk: /resume <desk|all>"},
	{Text: "help", Description: "What the bot does"},
	{Text: "whoami", Description: "Your user id and this chat's id"},
}

// setCommands registers the command menu, trying three times 0.5s and 1s
// apart: the menu is a convenience, not worth holding up the start for.
func (b *Bot) setCommands(ctx context.Context) error {
	backoff := retry.Backoff{Min: 500 * time.Millisecond, Max: time.Second}
	for try := 1; ; try++ {
		err := b.out.SetCommands(commands)
		if err == nil || try == 3 {
			return err
		}
		if retry.Sleep(ctx, backoff.Next()) != nil {
			return err
		}
	}
}

// tracker counts handlers and the work they start, so shutdown can wait for
// them. Close refuses new updates (Add) but not the work that updates
// already taken start (Also: a reply, an allowed call), which is counted
// until Close has finished waiting.
type tracker struct {
	mu     sync.Mutex
	idle   sync.Cond // on mu; Close waits on it for n to reach 0
	n      int
	closed bool // Add refuses
	done   bool // Close returned: Also refuses too
}

// Add counts the work of a new update; false once Close began.
func (t *tracker) Add() bool { return t.add(false) }

// Also counts work started by work already counted; false only once Close
// returned.
func (t *tracker) Also() bool { return t.add(true) }

func (t *tracker) add(started bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done || (t.closed && !started) {
		return false
	}
	t.n++
	return true
}

func (t *tracker) Done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.closed { // only Close waits
		t.idle.Broadcast()
	}
}

// Close refuses new updates and waits until no counted work is left.
func (t *tracker) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.idle.L = &t.mu
	for t.n > 0 {
		t.idle.Wait()
	}
	t.done = true
}

// book reads a desk's book for a request's trading words; nil without a broker.
func (b *Bot) book(ctx context.Context, desk string) (deskbot.Book, error) {
	if b.deps.Broker == nil {
		return deskbot.Book{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "no broker")
	}
	return b.deps.Broker.Book(ctx, desk)
}

// lastPrices reads, in one call and for bookWait at most, the last price
// of the symbol of each order among rs valued at it (words.NeedsLastPrice),
// for their one-line summaries; what is not read in time is left out (the
// summary says its notional is not known), and a broker that ignores its
// context cannot hold the answer back.
func (b *Bot) lastPrices(ctx context.Context, rs []*deskbot.Request) map[string]float64 {
	var symbols []string
	for _, r := range rs {
		if r = asRuns(r); r.Content.ToolName != deskbot.ToolPlaceOrder {
			continue
		}
		if o, ok := words.OrderOf(r.Content.Arguments); ok && words.NeedsLastPrice(o) && !slices.Contains(symbols, o.Symbol) {
			symbols = append(symbols, o.Symbol)
		}
	}
	if len(symbols) == 0 || b.deps.Broker == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, bookWait)
	defer cancel()
	got := make(chan map[string]float64, 1)
	go func() {
		m, err := b.deps.Broker.LastPrices(ctx, symbols)
		if err != nil {
			m = nil
		}
		got <- m
	}()
	select {
	case m := <-got:
		return m
	case <-ctx.Done():
		return nil
	}
}

// product is the product desk's orders take when they name none.
func (b *Bot) product(desk string) string { return b.cfg.Policies.Product(desk) }

// pictureRoot is the only folder a desk's pictures are sent from: a path a
// model wrote into an event is trusted only inside its own desk's folder.
func (b *Bot) pictureRoot(desk string) string {
	if b.cfg.DataDir == "" || !b.desks[desk] {
		return ""
	}
	return deskfs.Dir(b.cfg.DataDir, desk)
}
