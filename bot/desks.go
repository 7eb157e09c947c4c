package bot

import (
	"cmp"
	"context"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
	"github.com/google/uuid"
	tele "gopkg.in/telebot.v3"
)

// onDesks shows every desk: state, open requests, positions and P&L, last
// activity, and a Flatten button per desk.
func (b *Bot) onDesks(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	if len(b.cfg.Desks) == 0 {
		return b.reply(ctx, c, "No desks are configured.", nil)
	}
	open, err := b.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not list open requests", err), nil)
	}
	waiting := map[string]int{}
	for _, r := range open {
		waiting[r.Desk]++
	}
	var parts []string
	kb := &tele.ReplyMarkup{}
	if row := b.pageButton(c.Chat()); row != nil {
		kb.InlineKeyboard = append(kb.InlineKeyboard, row)
	}
	for _, d := range b.cfg.Desks {
		part, err := b.deskView(ctx, d, waiting[d])
		if err != nil {
			return b.reply(ctx, c, b.explain(ctx, "could not read a desk", err), nil)
		}
		parts = append(parts, part)
		if btn, err := NewButton("Flatten "+d, ActFlattenAsk, d); err == nil {
			kb.InlineKeyboard = append(kb.InlineKeyboard, []tele.InlineButton{btn})
		}
	}
	if part := b.unownedView(ctx); part != "" {
		parts = append(parts, part)
	}
	// Many desks with many positions outgrow one message: pack whole desks
	// into messages; the buttons go with the last.
	msgs := pack(parts, MaxMessage)
	for i, m := range msgs {
		var markup *tele.ReplyMarkup
		if i == len(msgs)-1 {
			markup = kb
		}
		if err := b.reply(ctx, c, m, markup); err != nil {
			return err
		}
	}
	return nil
}

// unownedView renders what the broker's account holds that belongs to no
// desk ("" when it holds nothing more, as a paper broker's never does); a
// broker that does not answer within bookWait is said to, and /desks goes
// on.
func (b *Bot) unownedView(ctx context.Context) string {
	if b.deps.Broker == nil {
		return ""
	}
	ps, err := retry.Within(ctx, bookWait, b.deps.Broker.Unowned)
	if err != nil {
		return bold(words.UnownedHead) + ": not read just now (" + html.EscapeString(b.explain(ctx, "could not read the account's positions", err)) + ")"
	}
	if len(ps) == 0 {
		return ""
	}
	lines := []string{bold(words.UnownedHead)}
	for _, p := range ps {
		lines = append(lines, html.EscapeString(words.UnownedLine(p)))
	}
	return strings.Join(lines, "\n")
}

// pack joins HTML parts (each under limit) into as few texts of at most
// limit UTF-16 units as it can, never cutting a part.
func pack(parts []string, limit int) []string {
	var out []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = p
		case argtext.Length(cur)+2+argtext.Length(p) <= limit:
			cur += "\n\n" + p
		default:
			out = append(out, cur)
			cur = p
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// deskView renders a desk for /desks: its state, open requests and last
// activity; a warning when none of its models answers; today's P&L; its
// open positions.
func (b *Bot) deskView(ctx context.Context, desk string, open int) (string, error) {
	d, err := b.readDesk(ctx, desk)
	if err != nil {
		return "", err
	}
	return d.head(open) + "\n" + tokensLine(d.status, b.now()) + "\n" + html.EscapeString(argtext.Clip(d.book(), 3000, "…")), nil
}

// deskRead is what the chat shows of a desk, read once.
type deskRead struct {
	name   string
	status deskbot.DeskStatus
	outage string // the outage note's value; "" when its models answer
	books  deskbot.Book
	day    day
	// orders are the desk's orders of the India day as the broker reports
	// them; ordersErr says why they could not be read (they are then not
	// known, and the rest is still shown).
	orders    []deskbot.PlacedOrder
	ordersErr error
	// lasts are each position's last price as shown (words.PositionLast).
	lasts map[string]string
}

// day is a desk's fills today (India's day), from its journal.
type day struct {
	known    bool            // a journal was read
	partial  bool            // the journal may no longer hold every fill of today
	realised float64         // by today's fills
	trades   []deskbot.Trade // today's, oldest first
}

// journalDepth is how many of a desk's last fills the chat reads: as many
// as the paper broker's journal keeps.
const journalDepth = 1000

func (b *Bot) readDesk(ctx context.Context, desk string) (deskRead, error) {
	d := deskRead{name: desk}
	var err error
	if d.status, err = b.deps.Desks.DeskStatus(ctx, desk); err != nil {
		return d, err
	}
	if d.books, err = b.deps.Broker.Book(ctx, desk); err != nil {
		return d, err
	}
	d.lasts = make(map[string]string, len(d.books.Positions))
	mctx, cancel := context.WithTimeout(ctx, marketWait) // one wait for the whole book
	for _, p := range d.books.Positions {
		d.lasts[p.Symbol] = b.positionLast(mctx, p)
	}
	cancel()
	switch v, err := b.deps.Notes.Note(ctx, words.ModelOutageNote(desk)); deskbot.ErrorCode(err) {
	case "":
		d.outage = v
		if d.outage == "" {
			d.outage = " " // an outage with no time recorded is still one
		}
	case deskbot.ENOTFOUND:
	default:
		return d, err
	}
	if d.day, err = b.today(ctx, desk); err != nil {
		return d, err
	}
	d.orders, d.ordersErr = b.deps.Broker.Orders(ctx, desk)
	return d, nil
}

// today reads the desk's fills of India's today from its journal.
func (b *Bot) today(ctx context.Context, desk string) (day, error) {
	ts, err := b.deps.Broker.Trades(ctx, desk, journalDepth)
	if err != nil {
		return day{}, err
	}
	d := day{known: true}
	today := words.Day(b.now())
	for _, t := range ts {
		if words.Day(t.At) == today {
			d.trades = append(d.trades, t)
			d.realised += t.RealisedPnL
		}
	}
	// A full journal of today's fills may have let earlier ones of today go.
	d.partial = len(ts) >= journalDepth && len(d.trades) == len(ts)
	return d, nil
}

// head is the desk's first lines (HTML): name, state, open requests, last
// activity, and the outage warning.
func (d deskRead) head(open int) string {
	last := "no activity yet"
	if !d.status.LastActivity.IsZero() {
		last = "last activity " + words.Time(d.status.LastActivity) + " IST"
	}
	reqs := "no open requests"
	switch {
	case open == 1:
		reqs = "1 open request"
	case open > 1:
		reqs = fmt.Sprintf("%d open requests", open)
	}
	s := fmt.Sprintf("%s – %s; %s; %s", bold(d.name), html.EscapeString(words.ShownState(d.status)), reqs, last)
	if d.outage != "" {
		s += "\n" + html.EscapeString(words.ModelOutage(d.outage))
	}
	return s
}

// book is today's P&L and the open positions, plain text.
func (d deskRead) book() string {
	lines := []string{words.TodayPnL(d.day.realised, d.day.known, d.day.partial, d.books)}
	if len(d.books.Positions) == 0 {
		lines = append(lines, "No open positions.")
	}
	for _, p := range d.books.Positions {
		lines = append(lines, words.PositionLine(p, d.lasts[p.Symbol]))
	}
	return strings.Join(lines, "\n")
}

// onFlatten asks for a confirmation tap before it closes anything: a
// mis-tap on a phone is costly.
func (b *Bot) onFlatten(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	if !b.approver(c.Sender()) {
		return b.reply(ctx, c, "Only approvers can flatten a desk.", nil)
	}
	arg := args(c)
	if arg == "" {
		return b.reply(ctx, c, "Flatten which desk?", b.flattenChoices())
	}
	desks, msg := b.target(arg, "/flatten &lt;desk|all&gt;")
	if desks == nil {
		return b.reply(ctx, c, msg, nil)
	}
	text, kb := b.flattenConfirm(ctx, arg)
	return b.reply(ctx, c, text, kb)
}

func (b *Bot) flattenChoices() *tele.ReplyMarkup {
	kb := &tele.ReplyMarkup{}
	for _, d := range append(append([]string(nil), b.cfg.Desks...), deskbot.AllDesks) {
		if btn, err := NewButton(d, ActFlattenAsk, d); err == nil {
			kb.InlineKeyboard = append(kb.InlineKeyboard, []tele.InlineButton{btn})
		}
	}
	return kb
}

func (b *Bot) flattenConfirm(ctx context.Context, target string) (string, *tele.ReplyMarkup) {
	what := "desk " + bold(target)
	desks := []string{target}
	if target == deskbot.AllDesks {
		what = "<b>every desk</b> (" + b.deskList() + ")"
		desks = b.cfg.Desks
	}
	text := "Flatten " + what + "? Every open position is closed at its last price, and the desk is told."
	// What it will close, desk by desk, as its books stand now: the one
	// plan a held flatten_desk shows too (words.FlattenPlan).
	ctx, cancel := context.WithTimeout(ctx, bookWait)
	defer cancel()
	for _, d := range desks {
		book, err := b.book(ctx, d)
		if err != nil {
			text += "\n" + bold(d) + ": its book could not be read just now; every open position of it is closed."
			continue
		}
		plan := words.FlattenPlan(book)
		if len(plan) == 0 {
			text += "\n" + bold(d) + ": no open positions."
			continue
		}
		text += "\n" + bold(d) + fmt.Sprintf(" would close %d:", len(plan))
		for _, l := range plan {
			text += "\n• " + esc(l)
		}
	}
	kb := &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{
		{Unique: ActFlattenConfirm, Data: target, Text: "Yes, flatten " + target},
		{Unique: ActCancel, Data: target, Text: "Cancel"},
	}}}
	return text, kb
}

// flatten closes the positions of desks, reports what was closed and tells
// each desk. It runs once per confirmation message, however many taps or
// redeliveries arrive.
func (b *Bot) flatten(ctx context.Context, c tele.Context, target string) {
	desks, _ := b.target(target, "")
	m := c.Callback().Message
	p := person(c.Sender())
	first, err := b.once(ctx, flattenOnceKey(m.Chat.ID, m.ID))
	if err != nil {
		b.answer(c, b.explain(ctx, "could not record a flatten", err), true)
		return
	}
	if !first {
		b.answer(c, "This flatten was already done.", false)
		return
	}
	b.answer(c, "Flattening…", false)
	lines := b.flattenDesks(ctx, desks, p)
	text := "Flattened by " + html.EscapeString(p.Name) + " at " + words.Time(b.now()) + " IST.\n" + strings.Join(lines, "\n")
	if err := b.sender.Edit(ctx, m.Chat.ID, m.ID, text, nil); err != nil {
		b.log.WarnContext(ctx, "could not show a flatten's outcome", "err", b.scrub(err.Error()))
		b.say(ctx, m.Chat.ID, text, nil)
	}
}

// flattenDesks closes the positions of desks, audits each flatten and
// tells each desk; it returns a line (HTML) per desk saying what was
// closed. The chat's confirmation and the desks page both flatten here.
func (b *Bot) flattenDesks(ctx context.Context, desks []string, p deskbot.Person) []string {
	var lines []string
	for _, d := range desks {
		rep, err := b.deps.Broker.Flatten(ctx, d, "flatten:"+d+":"+uuid.NewString())
		if err != nil {
			lines = append(lines, bold(d)+": not flattened: "+html.EscapeString(b.explain(ctx, "flatten failed", err)))
			continue
		}
		summary := words.FormatFlatten(rep)
		now := b.now()
		lines = append(lines, bold(d)+": "+html.EscapeString(summary))
		audit := deskbot.AuditEntry{Action: "flatten", Desk: d, By: p.Audited(), At: now, Detail: summary}
		if err := b.deps.Audit.Audit(ctx, audit); err != nil {
			b.log.ErrorContext(ctx, "could not audit a flatten", "desk", d, "err", err)
		}
		t := words.FlattenTrigger(d, now, summary)
		t.From = p.Name
		if err := b.deps.Inbox.Enqueue(ctx, t); err != nil {
			lines = append(lines, bold(d)+": "+html.EscapeString(b.explain(ctx, "could not tell a desk of its flatten", err)))
		}
	}
	return lines
}

// say sends text to a chat, logging a failure (the person asked for
// nothing that a lost answer would undo).
func (b *Bot) say(ctx context.Context, chatID int64, text string, kb *tele.ReplyMarkup) *tele.Message {
	msg, err := b.sender.Send(ctx, chatID, text, &tele.SendOptions{ParseMode: tele.ModeHTML, ReplyMarkup: kb, DisableWebPagePreview: true})
	if err != nil {
		b.log.WarnContext(ctx, "could not send to the chat", "chat", chatID, "err", b.scrub(err.Error()))
		return nil
	}
	return msg
}

// marketWait bounds the reads of a book's last prices (ctx carries it): the hub runs only on
// the leader, and a reply must not hang on it.
const marketWait = 2 * time.Second

// positionLast is p's last price as the market has it, with its age, or the
// book's marked as the broker's (words.PositionLast).
func (b *Bot) positionLast(ctx context.Context, p deskbot.Position) string {
	var (
		got deskbot.Price
		ok  bool
	)
	if b.deps.Market != nil {
		var err error
		if got, ok, err = b.deps.Market.LastPrice(ctx, p.Symbol); err != nil {
			ok = false
		}
	}
	return words.PositionLast(p.LastPrice, got, ok, b.now(), cmp.Or(b.cfg.PriceMaxAge, deskbot.DefaultPriceMaxAge))
}
