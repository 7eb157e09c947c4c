package deskbot

import "context"

// WatchStore keeps the desks' watches (Watch) durable, so they survive a
// restart and a hand-over: the leader's evaluator reads them all and fires
// each once. A watch is its desk's: every call names the desk, and one
// desk's call never reads, cancels or fires another's.
type WatchStore interface {
	// AddWatch keeps w (ID, Desk and CreatedAt set) unless w's desk
	// already has max watches: then ECONFLICT, and nothing changes.
	AddWatch(ctx context.Context, w Watch, max int) error
	// CancelWatch deletes desk's watch id and returns it; ENOTFOUND when
	// desk has no watch by that id (fired, cancelled, or another desk's).
	CancelWatch(ctx context.Context, desk, id string) (Watch, error)
	// Watches is desk's watches, oldest first.
	Watches(ctx context.Context, desk string) ([]Watch, error)
	// AllWatches is every desk's watches, for the evaluator.
	AllWatches(ctx context.Context) ([]Watch, error)
	// FireWatch deletes w and queues t in w's desk's inbox in one atomic
	// step; fired is false, and nothing is queued, when w was gone
	// already (fired by another evaluator, or cancelled): a watch wakes
	// its desk once.
	FireWatch(ctx context.Context, w Watch, t Trigger) (fired bool, err error)
}
