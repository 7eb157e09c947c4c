package bot

import (
	"context"
	"html"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	tele "gopkg.in/telebot.v3"
)

// What the desks page (package webapp) asks of the bot: whether a person
// is in the team's group, and the chat's own flatten and pause, so an
// action taken on the page is the same action, audited and told to the
// desk the same way, and the group hears of it as it would of a command.

// WebApp is where the desks page is: URL its https address (WEBAPP_URL),
// Name its short name registered with @BotFather (WEBAPP_NAME), from which
// the group's direct link t.me/<bot>/<name> is made. Zero: no page.
type WebApp struct {
	URL  string
	Name string
}

// memberCacheFor is how long a getChatMember answer is trusted: the page
// asks on every request, and someone who left the group is refused within
// this long.
const memberCacheFor = time.Minute

type memberCache struct {
	mu sync.Mutex
	m  map[int64]memberEntry
}

type memberEntry struct {
	member bool
	at     time.Time
}

// Member reports whether user is a member of the team's group, asking
// Telegram (getChatMember) at most once a minute per person. Left, kicked
// and restricted-and-not-member are not members.
func (b *Bot) Member(ctx context.Context, user int64) (bool, error) {
	now := b.now()
	b.members.mu.Lock()
	e, ok := b.members.m[user]
	b.members.mu.Unlock()
	if ok && now.Sub(e.at) < memberCacheFor {
		return e.member, nil
	}
	type result struct {
		m   *tele.ChatMember
		err error
	}
	done := make(chan result, 1)
	go func() { // telebot takes no context; the page's request does
		m, err := b.out.ChatMemberOf(&tele.Chat{ID: b.cfg.ChatID}, &tele.User{ID: user})
		done <- result{m, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return false, deskbot.Errorf(deskbot.EUNAVAILABLE, "Telegram did not say in time whether you are in the team's group.")
	}
	if r.err != nil {
		if TelegramCode(r.err) == 400 { // "user not found": never in the group
			r.m, r.err = &tele.ChatMember{Role: tele.Left}, nil
		} else {
			return false, deskbot.Errorf(deskbot.EUNAVAILABLE, "Telegram could not say whether you are in the team's group: %s", b.scrub(r.err.Error()))
		}
	}
	member := false
	switch r.m.Role {
	case tele.Creator, tele.Administrator, tele.Member:
		member = true
	case tele.Restricted:
		member = r.m.Member
	}
	b.members.mu.Lock()
	if b.members.m == nil {
		b.members.m = map[int64]memberEntry{}
	}
	b.members.m[user] = memberEntry{member: member, at: now}
	b.members.mu.Unlock()
	return member, nil
}

// Approver reports whether the person with this id may act
// (TELEGRAM_APPROVERS).
func (b *Bot) Approver(id int64) bool { return b.approvers[id] }

// FlattenFromPage flattens target (a desk or "all") for a person on the
// desks page: the chat's flatten (flattenDesks), and the group is told as
// it would be of a confirmed /flatten. It returns what was closed, plain.
func (b *Bot) FlattenFromPage(ctx context.Context, target string, p deskbot.Person) (string, error) {
	desks, _ := b.target(target, "")
	if desks == nil {
		return "", deskbot.Errorf(deskbot.EINVALID, "There is no desk named %q.", target)
	}
	lines := b.flattenDesks(ctx, desks, p)
	text := "Flattened by " + html.EscapeString(p.Name) + " at " + words.Time(b.now()) + " IST, from the desks page.\n" + strings.Join(lines, "\n")
	b.say(ctx, b.cfg.ChatID, text, nil)
	return html.UnescapeString(tagRx.ReplaceAllString(strings.Join(lines, "\n"), "")), nil
}

// PauseFromPage pauses or resumes target (a desk or "all") for a person on
// the desks page, as /pause and /resume do, and tells the group.
func (b *Bot) PauseFromPage(ctx context.Context, target string, pause bool, p deskbot.Person) error {
	desks, _ := b.target(target, "")
	if desks == nil {
		return deskbot.Errorf(deskbot.EINVALID, "There is no desk named %q.", target)
	}
	if err := b.setPaused(ctx, desks, pause, p); err != nil {
		return err
	}
	done := "Paused "
	if !pause {
		done = "Resumed "
	}
	b.say(ctx, b.cfg.ChatID, done+boldList(desks)+" ("+html.EscapeString(p.Name)+", from the desks page).", nil)
	return nil
}

// pageButton is the row /desks carries to open the desks page: in the
// group, the Mini App's direct link (web_app buttons work only in private
// chats); in a private chat, a web_app button. Nil when there is no page,
// or no way to open it from this chat.
func (b *Bot) pageButton(chat *tele.Chat) []tele.InlineButton {
	w := b.cfg.WebApp
	if w.URL == "" {
		return nil
	}
	const label = "Open the desks page"
	if chat != nil && chat.Type == tele.ChatPrivate {
		return []tele.InlineButton{{Text: label, WebApp: &tele.WebApp{URL: w.URL}}}
	}
	if link := b.pageLink(); link != "" {
		return []tele.InlineButton{{Text: label, URL: link}}
	}
	return nil
}

// pageLink is the Mini App's direct link, t.me/<bot>/<WEBAPP_NAME>; "" when
// no name is configured or the bot's username is unknown.
func (b *Bot) pageLink() string {
	if b.cfg.WebApp.Name == "" || b.tb.Me == nil || b.tb.Me.Username == "" {
		return ""
	}
	return "https://t.me/" + b.tb.Me.Username + "/" + b.cfg.WebApp.Name
}

// setMenuButtons puts the desks page on the menu button of each approver's
// private chat with the bot. An approver who never opened that chat cannot
// get one (Telegram says the chat is not found); that is logged, not an
// error: the group's /desks link still opens the page.
func (b *Bot) setMenuButtons(ctx context.Context) {
	if b.cfg.WebApp.URL == "" {
		return
	}
	for _, id := range b.cfg.Approvers {
		if ctx.Err() != nil {
			return
		}
		err := b.out.SetMenuButton(&tele.User{ID: id}, &tele.MenuButton{Type: tele.MenuButtonWebApp, Text: "Desks", WebApp: &tele.WebApp{URL: b.cfg.WebApp.URL}})
		if err != nil {
			b.log.InfoContext(ctx, "could not set the desks page as an approver's menu button", "approver", id, "err", b.scrub(err.Error()))
		}
	}
}
