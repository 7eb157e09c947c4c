package main

import (
	"context"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/words"
)

// probeAtStart runs check's quick probes (config.ProbeAtStart) and logs
// each line that is not ok. A desk none of whose models answers is told
// to the group at once, in the words its own turn would use and once per
// outage (the desk's outage note, which its loop clears with "reaches its
// model again" when one answers), so that nobody waits on a desk that
// cannot think.
func (m *Main) probeAtStart(ctx context.Context, desks []agent.DeskConfig) {
	warnings, down := config.ProbeAtStart(ctx, m.Config, desks)
	for _, l := range warnings {
		m.Log.Warn(l.What+": "+l.Detail, "check", l.What, "status", l.Status)
	}
	for _, d := range down {
		m.tellNoModel(ctx, d.Desk, d.Failures)
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
