package deskbot

// Leadership is this process's standing as the one leader among the
// processes sharing one Redis (package leader elects it). Only the leader
// acts; a write only the leader may make carries Token, and the store
// refuses it once another process leads (Transition.Fence).
type Leadership interface {
	// Token is the current term's fencing token; 0 when this process does
	// not lead.
	Token() int64
	// Valid reports whether the lease is surely still this process's (false
	// once it may have lapsed, even before the process noticed).
	Valid() bool
}
