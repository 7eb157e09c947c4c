package main

import (
	"context"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/words"
)

// The run explains itself in check's words: what `deskbot check` probes
// quickly (Telegram's chat, the desks' models) the start probes too, and
// each failure is logged as check prints it, with its fix. There is one
// source of these words, the checker.

// startProbeTimeout bounds the start's probes: a model host that does not
// answer delays the start by this much at most.
const startProbeTimeout = 10 * time.Second

// probeAtStart runs check's quick probes and logs each line that is not
// ok. A desk none of whose models answers is told to the group at once, in
// the words its own turn would use and once per outage (the desk's outage
// note, which its loop clears with "reaches its model again" when one
// answers), so that nobody waits on a desk that cannot think.
func (m *Main) probeAtStart(ctx context.Context, desks []agent.DeskConfig) {
	ctx, cancel := context.WithTimeout(ctx, startProbeTimeout)
	defer cancel()
	c := &checker{}
	c.telegram(ctx, m.Config)
	type probed struct{ status, detail string }
	seen := map[string]probed{}
	down := map[string][]string{}
	var order []string
	for _, d := range desks {
		var failures []string
		answers := false
		for _, mc := range d.Models {
			if mc.Provider == agent.ClaudeCode {
				answers = true // checked at start by its version; its API cannot be probed for free
				continue
			}
			key := mc.Provider + " " + mc.BaseURL + " " + mc.Model
			p, ok := seen[key]
			if !ok {
				p.status, p.detail = probeModel(ctx, mc)
				seen[key] = p
				c.add("model "+modelLabel(mc), p.status, "%s", p.detail)
			}
			if p.status == statusFail {
				failures = append(failures, modelLabel(mc)+": "+p.detail)
			} else {
				answers = true
			}
		}
		if !answers && len(failures) > 0 {
			down[d.Name] = failures
			order = append(order, d.Name)
		}
	}
	for _, l := range c.lines {
		if l.status != statusOK {
			m.Log.Warn(l.what+": "+l.detail, "check", l.what, "status", l.status)
		}
	}
	for _, desk := range order {
		m.tellNoModel(ctx, desk, down[desk])
	}
}

// tellNoModel tells the group, once per outage, that desk reaches none of
// its models.
func (m *Main) tellNoModel(ctx context.Context, desk string, failures []string) {
	now := m.Now()
	first, err := m.Store.PutNoteOnce(ctx, words.ModelOutageNote(desk), now.UTC().Format(time.RFC3339), 0)
	if err != nil || !first {
		return
	}
	if err := m.Store.Publish(ctx, deskbot.Event{Kind: deskbot.EventModelUnreachable, Desk: desk, Time: now,
		Text: words.ModelUnreachable(desk, failures)}); err != nil {
		m.Log.Warn("could not tell the chat that a desk reaches no model", "desk", desk, "err", deskbot.ErrorMessage(err))
	}
}

// telegramTrouble says why the bot could not start in check's words
// (TELEGRAM_TOKEN refused: copy it again from @BotFather), rather than the
// client library's; err's own words when the probe finds nothing wrong.
func (m *Main) telegramTrouble(ctx context.Context, err error) string {
	ctx, cancel := context.WithTimeout(ctx, startProbeTimeout)
	defer cancel()
	c := &checker{}
	c.telegram(ctx, m.Config)
	for _, l := range c.lines {
		if l.status == statusFail {
			return l.detail
		}
	}
	return deskbot.ErrorMessage(err)
}
