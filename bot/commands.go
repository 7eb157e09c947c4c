package bot

import (
	"context"
	"fmt"
	"html"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	tele "gopkg.in/telebot.v3"
)

// routes registers every handler. /whoami is answered anywhere, for anyone;
// everything else only where the bot listens (see listens). Callbacks are
// checked per tap: only approvers decide, wherever the button is.
func (b *Bot) routes() {
	anywhere := b.tb.Group()
	anywhere.Use(b.guard(true))
	anywhere.Handle("/whoami", b.onWhoami)

	served := b.tb.Group()
	served.Use(b.guard(false))
	served.Handle("/start", b.onHelp)
	served.Handle("/help", b.onHelp)
	served.Handle("/desks", b.onDesks)
	served.Handle("/desk", b.onDesk)
	served.Handle("/pnl", b.onPnL)
	served.Handle("/flatten", b.onFlatten)
	served.Handle("/tell", b.onTell)
	served.Handle("/requests", b.onRequests)
	served.Handle("/grants", b.onGrants)
	served.Handle("/login", b.onLogin)
	served.Handle("/pause", func(c tele.Context) error { return b.onPause(c, true) })
	served.Handle("/resume", func(c tele.Context) error { return b.onPause(c, false) })
	served.Handle(tele.OnText, b.onText)
	served.Handle(tele.OnCallback, b.onCallback)
}

const helpText = `<b>deskbot</b> holds the desks' guarded tool calls until an approver taps <i>Allow once</i>, <i>Always allow</i> or <i>Deny</i>.

/desks – every desk: state, open requests, today's P&amp;L, positions, last activity
/desk &lt;desk&gt; – one desk in full: today's trades, held calls, its last turn and tool calls
/pnl [desk] – the day's report: each desk's P&amp;L through the day as a picture, with its figures; /pnl week – the last five trading days
/flatten &lt;desk|all&gt; – close a desk's positions (asks to confirm)
/tell &lt;desk&gt; &lt;text&gt; – tell a desk something (or reply to its message)
/requests – open requests, with their buttons again
/grants – standing grants, with Revoke buttons
/pause &lt;desk|all&gt;, /resume &lt;desk|all&gt; – stop or restart a desk's turns
/login – the day's login to the broker (Kite), from a button
/whoami – your user id and this chat's id

Anyone in the group can /pause a desk (stopping is always safe); only approvers can decide, flatten, resume, revoke or tell.`

func (b *Bot) onHelp(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	return b.reply(ctx, c, helpText, nil)
}

func (b *Bot) onWhoami(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	var user, chat int64
	if c.Sender() != nil {
		user = c.Sender().ID
	}
	if c.Chat() != nil {
		chat = c.Chat().ID
	}
	// Anonymous admins and channels post through accounts Telegram shares
	// among many people: that id is nobody's own, and put in
	// TELEGRAM_APPROVERS it would make all of them approvers.
	if _, shared := deskbot.SharedAccount(user); shared || c.Message() != nil && c.Message().SenderChat != nil {
		return b.reply(ctx, c, fmt.Sprintf("You are posting anonymously (as the group or a channel), so Telegram does not tell me who you are. Turn off <i>Remain anonymous</i> in your admin rights, or send /whoami in a private chat with me.\nThis chat's id: <code>%d</code>", chat), nil)
	}
	return b.reply(ctx, c, fmt.Sprintf("Your user id: <code>%d</code>\nThis chat's id: <code>%d</code>", user, chat), nil)
}

// loginButton is offered where the team is asked to log in to the broker
// (the session ended, or none before the open); a tap is answered as
// /login is, so the login page is bound to the approver who tapped.
var loginButton = tele.InlineButton{Unique: ActLogin, Data: "kite", Text: "Log in to Kite"}

// onLogin answers an approver with a button to the broker's login page,
// bound to that approver's login (the broker's redirect is taken once).
func (b *Bot) onLogin(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	if !b.approver(c.Sender()) {
		return b.reply(ctx, c, "Only approvers can log in to the broker.", nil)
	}
	return b.login(ctx, c)
}

// login answers an approver, by /login or a tap on loginButton, with the
// button to the broker's login page.
func (b *Bot) login(ctx context.Context, c tele.Context) error {
	if b.deps.Login == nil {
		return b.reply(ctx, c, "The paper broker needs no login. Kite's daily login is on when KITE_API_KEY is set.", nil)
	}
	u, err := b.deps.Login.LoginURL(ctx, person(c.Sender()))
	if err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not start a login", err), nil)
	}
	kb := &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{{Text: "Log in to Kite", URL: u}}}}
	text := "Log in to Kite with the button within 10 minutes; the group is told once the session is kept. The button works once."
	// A failed read of the session costs only this line.
	if s, err := b.deps.Login.Session(ctx); err == nil {
		text = esc(words.BrokerSession(s)) + " A new login replaces it.\n" + text
	}
	return b.reply(ctx, c, text, kb)
}

// onTell sends a person's words to a desk as a new trigger.
func (b *Bot) onTell(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	if !b.approver(c.Sender()) {
		return b.reply(ctx, c, "Only approvers can tell a desk something.", nil)
	}
	desk, text := word(args(c))
	if desk == "" || text == "" {
		return b.reply(ctx, c, "Usage: /tell &lt;desk&gt; &lt;text&gt;. Desks: "+b.deskList()+".", nil)
	}
	if !b.desks[desk] {
		return b.reply(ctx, c, b.unknownDesk(desk, "/tell &lt;desk&gt; &lt;text&gt;"), nil)
	}
	return b.tell(ctx, c, desk, text)
}

// tell queues text for desk, once per chat message however often Telegram
// delivers it.
func (b *Bot) tell(ctx context.Context, c tele.Context, desk, text string) error {
	if first, err := b.firstDelivery(ctx, c); !first {
		return err
	}
	p := person(c.Sender())
	t := deskbot.Trigger{Desk: desk, Kind: deskbot.TriggerMessage, Text: text, From: p.Name, CreatedAt: b.now()}
	if err := b.deps.Inbox.Enqueue(ctx, t); err != nil {
		// Nothing was queued: the message is not handled, so a redelivery
		// (to the next leader, when this one is stopping) must act on it.
		_ = b.deps.Notes.DeleteNote(context.WithoutCancel(ctx), messageOnceKey(c.Message().Chat.ID, c.Message().ID))
		return b.reply(ctx, c, b.explain(ctx, "could not queue a message for a desk", err), nil)
	}
	b.log.InfoContext(ctx, "told a desk", "desk", desk, "by", p.Audited())
	// A paused desk takes no turns: a thumbs-up alone would read as heard.
	// A failed read of its state only costs that notice; the words are queued.
	if st, err := b.deps.Desks.DeskStatus(ctx, desk); err == nil && st.Paused {
		return b.reply(ctx, c, "Queued for "+bold(desk)+", which is paused: it reads this after /resume "+esc(desk)+".", nil)
	}
	// Nor would it for a desk no model answers: say so, rather than let
	// the person wait for an answer that comes when a model does.
	if note, err := b.deps.Notes.Note(ctx, words.ModelOutageNote(desk)); err == nil {
		return b.reply(ctx, c, "Queued for "+bold(desk)+". "+esc(words.ModelOutage(note)), nil)
	}
	return b.acknowledge(c, "Sent to "+bold(desk)+".")
}

// ackReaction is the reaction that says a person's message was taken.
const ackReaction = "👍"

// acknowledge tells the person their message was taken with a reaction on
// it rather than a message: a message spends the group's budget of about
// 20 a minute, which held calls need. Where Telegram refuses the reaction
// for good (reactions turned off in the chat) the fallback reply (HTML)
// says it instead. Like a reply, it is sent from the chat's reply queue.
func (b *Bot) acknowledge(c tele.Context, fallback string) error {
	m := c.Message()
	chat := c.Chat().ID
	b.inReplyQueue(chat, func(ctx context.Context) {
		err := b.sender.React(ctx, chat, m.ID, ackReaction)
		if err == nil {
			return
		}
		b.log.WarnContext(ctx, "could not react to a message", "chat", chat, "err", b.scrub(err.Error()))
		if TelegramCode(err) != 400 {
			return
		}
		if _, err := b.sender.Send(ctx, chat, fallback, b.replyOptions(c, nil)); err != nil {
			b.log.WarnContext(ctx, "could not answer in the chat", "chat", chat, "err", b.scrub(err.Error()))
		}
	})
	return nil
}

// onPause pauses or resumes desks; the switch survives restarts.
func (b *Bot) onPause(c tele.Context, pause bool) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	verb, usage := "pause", "/pause &lt;desk|all&gt;"
	if !pause {
		verb, usage = "resume", "/resume &lt;desk|all&gt;"
	}
	if pause && !b.mayPause(c) || !pause && !b.approver(c.Sender()) {
		return b.reply(ctx, c, "Only approvers can "+verb+" a desk.", nil)
	}
	desks, msg := b.target(args(c), usage)
	if desks == nil {
		return b.reply(ctx, c, msg, nil)
	}
	var halted []string
	if !pause {
		var err error
		if desks, halted, err = b.splitHalted(ctx, c, desks); err != nil {
			return b.reply(ctx, c, b.explain(ctx, "could not resume a desk", err), nil)
		}
		if len(desks) == 0 {
			return nil // each halted desk was answered with its confirmation
		}
	}
	if err := b.setPaused(ctx, desks, pause, person(c.Sender())); err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not "+verb+" a desk", err), nil)
	}
	done := "Paused "
	if !pause {
		done = "Resumed "
	}
	text := done + boldList(desks) + "."
	if len(halted) > 0 {
		text += " Halted by a risk rule, each asked to confirm above: " + boldList(halted) + "."
	}
	return b.reply(ctx, c, text, nil)
}

// splitHalted answers each desk a risk rule halted with its rule, its
// figures and a button to confirm its resume, and returns the others: a
// halt is lifted only by an approver who read why it was taken.
func (b *Bot) splitHalted(ctx context.Context, c tele.Context, desks []string) (rest, halted []string, err error) {
	for _, d := range desks {
		st, err := b.deps.Desks.DeskStatus(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		if st.Halt == nil {
			rest = append(rest, d)
			continue
		}
		halted = append(halted, d)
		btn, err := NewButton("Yes, resume "+d, ActResumeHalted, d+"/"+strconv.FormatInt(st.Halt.At.UnixMilli(), 10))
		if err != nil {
			return nil, nil, err
		}
		kb := &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{btn}}}
		if err := b.reply(ctx, c, esc(words.ResumeHaltedPrompt(d, *st.Halt)), kb); err != nil {
			return nil, nil, err
		}
	}
	return rest, halted, nil
}

// resumeHalted lifts the halt the button was shown for. A halt taken again
// since (another rule, later) is not lifted by the older button: its
// approver has not read why.
func (b *Bot) resumeHalted(ctx context.Context, c tele.Context, arg string) {
	desk, ms, _ := strings.Cut(arg, "/")
	if !b.desks[desk] {
		b.answer(c, refusedData, true)
		return
	}
	st, err := b.deps.Desks.DeskStatus(ctx, desk)
	if err != nil {
		b.answer(c, b.explain(ctx, "could not resume a desk", err), true)
		return
	}
	if st.Halt == nil || strconv.FormatInt(st.Halt.At.UnixMilli(), 10) != ms {
		b.answer(c, "That halt is no longer in force; /resume "+desk+" shows the desk as it is now.", true)
		return
	}
	p := person(c.Sender())
	audit := deskbot.AuditEntry{Action: "resume", Desk: desk, By: p.Audited(), At: b.now(), Detail: "lifted the halt by " + st.Halt.Rule + ": " + st.Halt.Figures}
	if err := b.deps.Desks.Resume(ctx, desk, st.Halt.At, audit); deskbot.ErrorCode(err) == deskbot.ECONFLICT {
		// Lifted by another tap, or halted again, since it was read.
		b.answer(c, "That halt is no longer in force; /resume "+desk+" shows the desk as it is now.", true)
		return
	} else if err != nil {
		b.answer(c, b.explain(ctx, "could not resume a desk", err), true)
		return
	}
	b.answer(c, "Resumed "+desk+".", false)
	m := c.Callback().Message
	text := "Resumed " + bold(desk) + " by " + bold(p.Name) + " at " + words.Time(b.now()) + " IST, lifting its halt by " + esc(st.Halt.Rule) + "."
	if err := b.sender.Edit(ctx, m.Chat.ID, m.ID, text, nil); err != nil {
		b.log.WarnContext(ctx, "could not show a resume", "err", b.scrub(err.Error()))
		b.say(ctx, m.Chat.ID, text, nil)
	}
}

// setPaused pauses or resumes desks, each with its audit entry; /pause,
// /resume and the desks page all switch here.
func (b *Bot) setPaused(ctx context.Context, desks []string, pause bool, p deskbot.Person) error {
	verb := "pause"
	if !pause {
		verb = "resume"
	}
	for _, d := range desks {
		audit := deskbot.AuditEntry{Action: verb, Desk: d, By: p.Audited(), At: b.now()}
		if err := b.deps.Desks.SetPaused(ctx, d, pause, audit); err != nil {
			return err
		}
	}
	return nil
}

// onRequests shows every open request again with its buttons, so a request
// whose message scrolled away can still be decided.
func (b *Bot) onRequests(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	rs, err := b.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not list open requests", err), nil)
	}
	if len(rs) == 0 {
		return b.reply(ctx, c, "No open requests.", nil)
	}
	// Each request is a message of its own; a long list would spend the
	// group's budget of about 20 messages a minute.
	const most = 10
	books := map[string]*deskbot.Book{}
	for i, r := range rs {
		if i == most {
			return b.reply(ctx, c, moreRequests(rs[most:], b.product, b.lastPrices(ctx, rs[most:])), nil)
		}
		// One read of a desk's book serves its broker calls, answered or not.
		text, kb := RenderRequest(r, b.outbox.liveWords(ctx, r, books))
		if err := b.reply(ctx, c, text, kb); err != nil {
			return err
		}
	}
	return nil
}

// moreRequests lists the requests /requests does not show one by one, a
// line each in trading words, as many as fit one message.
func moreRequests(rs []*deskbot.Request, product func(desk string) string, last map[string]float64) string {
	text := fmt.Sprintf("…and %d more; decide these first.", len(rs))
	for i, r := range rs {
		line := "\n" + requestSummary(r, product(r.Desk), last)
		if plainLen(text+line) > MaxMessage-40 {
			return text + fmt.Sprintf("\n(%d more not listed)", len(rs)-i)
		}
		text += line
	}
	return text
}

// onGrants lists standing grants with a Revoke button each, each with its
// scope: the desk, the tool, the largest order it covers, how many people
// gave it, and when it ends ("until revoked" when it does not).
func (b *Bot) onGrants(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	text, kb, err := b.grantsView(ctx)
	if err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not list grants", err), nil)
	}
	return b.reply(ctx, c, text, kb)
}

func (b *Bot) grantsView(ctx context.Context) (string, *tele.ReplyMarkup, error) {
	gs, err := b.deps.Gate.Grants(ctx)
	if err != nil {
		return "", nil, err
	}
	if len(gs) == 0 {
		return "No standing grants: every guarded tool asks first.", nil, nil
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Desk+"/"+gs[i].Tool < gs[j].Desk+"/"+gs[j].Tool })
	var sb strings.Builder
	sb.WriteString("<b>Standing grants</b>")
	kb := &tele.ReplyMarkup{}
	for _, g := range gs {
		fmt.Fprintf(&sb, "\n%s may use %s without asking", bold(g.Desk), code(g.Tool))
		if g.Limit > 0 {
			fmt.Fprintf(&sb, ", for orders up to %s notional", words.Rupees(g.Limit))
		}
		if g.Approvers > 1 {
			fmt.Fprintf(&sb, " (given by %d approvers)", g.Approvers)
		}
		// Every grant says when it ends: one with no end (GRANT_TTL 0)
		// lasts until someone revokes it.
		fmt.Fprintf(&sb, "; granted by %s at %s IST, %s", html.EscapeString(g.GrantedBy), words.Time(g.GrantedAt), words.GrantEnd(g, b.now()))
		key := g.Desk + "/" + g.Tool
		if btn, err := NewButton("Revoke "+key, ActRevoke, key); err == nil {
			kb.InlineKeyboard = append(kb.InlineKeyboard, []tele.InlineButton{btn})
		}
	}
	return sb.String(), kb, nil
}

// target resolves a command's desk argument: one desk, or "all".
func (b *Bot) target(arg, usage string) ([]string, string) {
	arg = strings.TrimSpace(arg)
	switch {
	case arg == "":
		return nil, "Usage: " + usage + ". Desks: " + b.deskList() + "."
	case arg == deskbot.AllDesks:
		return append([]string(nil), b.cfg.Desks...), ""
	case b.desks[arg]:
		return []string{arg}, ""
	}
	return nil, b.unknownDesk(arg, usage)
}

func (b *Bot) unknownDesk(desk, usage string) string {
	return fmt.Sprintf("There is no desk named %s. Usage: %s. Desks: %s.", code(desk), usage, b.deskList())
}

func (b *Bot) deskList() string {
	if len(b.cfg.Desks) == 0 {
		return "none configured"
	}
	return html.EscapeString(strings.Join(b.cfg.Desks, ", "))
}

// reply answers in the chat of c, as a reply to the person's message so it
// lands in the right forum topic. text is HTML: callers escape what came
// from people, desks or models.
func (b *Bot) reply(ctx context.Context, c tele.Context, text string, kb *tele.ReplyMarkup) error {
	opt := b.replyOptions(c, kb)
	chat := c.Chat().ID
	b.inReplyQueue(chat, func(ctx context.Context) {
		if _, err := b.sender.Send(ctx, chat, text, opt); err != nil {
			b.log.WarnContext(ctx, "could not answer in the chat", "chat", chat, "err", b.scrub(err.Error()))
		}
	})
	return nil
}

// inReplyQueue sends from the chat's reply queue, not from the handler: the
// command has done its work, and the next one in this chat need not wait on
// Telegram. A send has a minute, within the stop's grace, and a stop waits
// for it (track).
func (b *Bot) inReplyQueue(chat int64, send func(ctx context.Context)) {
	if !b.track.Also() {
		return
	}
	b.replies.inOrder(chat, func() {
		defer b.track.Done()
		ctx, cancel := context.WithTimeout(b.handlers(), time.Minute)
		defer cancel()
		send(ctx)
	})
}

// replyOptions answer c's message as a reply (so it lands in its forum
// topic), or, for a tap, in the tapped message's topic.
func (b *Bot) replyOptions(c tele.Context, kb *tele.ReplyMarkup) *tele.SendOptions {
	opt := &tele.SendOptions{ParseMode: tele.ModeHTML, ReplyMarkup: kb, DisableWebPagePreview: true, AllowWithoutReply: true}
	if m := c.Message(); m != nil && c.Callback() == nil {
		opt.ReplyTo = m
	} else if m != nil && m.TopicMessage {
		opt.ThreadID = m.ThreadID
	}
	return opt
}

// args is the text after the command, all lines of it (telebot's Payload
// stops at the first line break).
func args(c tele.Context) string {
	_, rest := word(c.Text())
	return rest
}

// word splits s into its first word and the rest, both trimmed.
func word(s string) (first, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func bold(s string) string { return "<b>" + html.EscapeString(s) + "</b>" }
func code(s string) string { return "<code>" + html.EscapeString(s) + "</code>" }

func boldList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = bold(s)
	}
	return strings.Join(out, ", ")
}
