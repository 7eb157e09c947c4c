package gate

import (
	"context"
	"time"

	"github.com/deskbot/deskbot"
)

// Next is when the sweep after t runs, in India time: the tests check the
// schedule is read in IST.
func (s *Sweeper) Next(t time.Time) time.Time {
	return s.cron.Entry(s.id).Schedule.Next(t.In(deskbot.IST))
}

// DecideOnly is the decision without the run (decide, from a view that
// cannot say which call it showed): for tests of what happens between an
// allow and its run.
func (g *Gate) DecideOnly(ctx context.Context, id string, d deskbot.Decision, reason string, by deskbot.Person) (*deskbot.PermissionResponse, error) {
	return g.decide(ctx, id, -1, d, reason, by)
}

// ChangeOnly is a change without the run (change).
func (g *Gate) ChangeOnly(ctx context.Context, id, changes string, version int, by deskbot.Person) (*deskbot.PermissionResponse, error) {
	return g.change(ctx, id, changes, version, by)
}

// RunDecided runs what DecideOnly or ChangeOnly left running (run).
func (g *Gate) RunDecided(ctx context.Context, resp *deskbot.PermissionResponse) (*deskbot.PermissionResponse, error) {
	return g.run(ctx, resp)
}

// WaitRuns waits until no call the gate started is still running: for a
// benchmark that times the decision and the run together.
func (g *Gate) WaitRuns() {
	g.life.mu.Lock()
	defer g.life.mu.Unlock()
	for g.life.n > 0 {
		g.life.idle.Wait()
	}
}
