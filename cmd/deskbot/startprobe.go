package main

import (
	"context"

	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/config"
)

// probeAtStart runs check's quick probes (config.ProbeAtStart) and logs
// each line that is not ok. A desk none of whose models answers is told
// to the group at once, once per outage (agent.Desks.TellUnreachable), so
// that nobody waits on a desk that cannot think.
func (m *Main) probeAtStart(ctx context.Context, desks []agent.DeskConfig) {
	warnings, down := config.ProbeAtStart(ctx, m.Config, desks)
	for _, l := range warnings {
		m.Log.Warn(l.What+": "+l.Detail, "check", l.What, "status", l.Status)
	}
	for _, d := range down {
		m.Desks.TellUnreachable(ctx, d.Desk, d.Failures)
	}
}
