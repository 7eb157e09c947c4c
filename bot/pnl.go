package bot

import (
	"bytes"
	"context"
	"html"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/report"
	tele "gopkg.in/telebot.v3"
)

// pnlUsage is /pnl's usage, HTML.
const pnlUsage = "/pnl [desk], /pnl week [desk]"

// onPnL sends the day's report (/pnl, /pnl <desk>) or the week's (/pnl
// week [desk]) as a picture with its figures as the caption. It only
// reads, so anyone where the bot listens may ask, as for /desks.
func (b *Bot) onPnL(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	week, desk, ok := pnlArgs(args(c))
	if !ok {
		return b.reply(ctx, c, "Usage: "+pnlUsage+". Desks: "+b.deskList()+".", nil)
	}
	if desk != "" && !b.desks[desk] {
		return b.reply(ctx, c, b.unknownDesk(desk, pnlUsage), nil)
	}
	rep, err := b.report(ctx, week, desk)
	if err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not draw the report", err), nil)
	}
	chat, thread := c.Chat().ID, 0
	if m := c.Message(); m != nil && m.TopicMessage {
		thread = m.ThreadID
	}
	b.inReplyQueue(chat, func(ctx context.Context) {
		if _, err := b.sendReport(ctx, chat, thread, rep); err != nil {
			b.log.WarnContext(ctx, "could not send a report", "chat", chat, "err", b.scrub(err.Error()))
		}
	})
	return nil
}

// pnlArgs reads /pnl's words: "week" anywhere asks for the week, and one
// other word names a desk.
func pnlArgs(s string) (week bool, desk string, ok bool) {
	for _, w := range strings.Fields(s) {
		switch {
		case w == "week" && !week:
			week = true
		case desk == "":
			desk = w
		default:
			return false, "", false
		}
	}
	return week, desk, true
}

// report draws the day's or the week's report of desk ("": every desk) at
// the bot's clock.
func (b *Bot) report(ctx context.Context, week bool, desk string) (report.Report, error) {
	if b.deps.Risk == nil {
		return report.Report{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "The report is not available here: no risk store is configured.")
	}
	deps := report.Deps{Broker: b.deps.Broker, Desks: b.deps.Desks, Risk: b.deps.Risk, Audit: b.deps.Audit, TradingDay: b.cfg.TradingDay}
	scope := report.Scope{Desks: b.cfg.Desks, Only: desk}
	if week {
		return report.Week(ctx, deps, scope, b.now())
	}
	return report.Day(ctx, deps, scope, b.now())
}

// sendReport sends rep as a photo to chat's thread (0: General), its
// caption escaped: the report writes plain text, clipped to Telegram's
// limit already, and escaping adds nothing Telegram counts.
func (b *Bot) sendReport(ctx context.Context, chat int64, thread int, rep report.Report) (*tele.Message, error) {
	return b.sender.SendPhotoIn(ctx, chat, thread, bytes.NewReader(rep.PNG), int64(len(rep.PNG)), html.EscapeString(rep.Caption))
}

// SendDayReport sends the day's report of every desk to the group's
// General topic, once a day however many times it is called (REPORT_AT
// fires on the leader; a hand-over at that minute, or a retry, must not
// send it twice). A report that could not be sent may be sent again.
func (b *Bot) SendDayReport(ctx context.Context) error {
	day := deskbot.OrderDay(b.now())
	first, err := b.deps.Notes.PutNoteOnce(ctx, reportSentKey(day), "1", onceTTL)
	if err != nil || !first {
		return err
	}
	rep, err := b.report(ctx, false, "")
	if err == nil {
		_, err = b.sendReport(withSilent(ctx, b.cfg.Quiet.Reports), b.cfg.ChatID, 0, rep)
	}
	if err != nil {
		_ = b.deps.Notes.DeleteNote(context.WithoutCancel(ctx), reportSentKey(day))
		return err
	}
	b.log.InfoContext(ctx, "sent the day's report", "day", day)
	return nil
}
