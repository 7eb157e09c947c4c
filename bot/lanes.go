package bot

import "context"

// Lane is a message's priority for the chat's sending budget. Lower lanes
// go first: an approver must see a held call within seconds however much
// the desks say.
type Lane int

const (
	// LaneRequest: a held call (or a digest of them) waiting for a person.
	LaneRequest Lane = iota
	// LaneClose: the edits and notices that close a request, and warnings.
	LaneClose
	// LaneReply: the bot's answers to people's commands (the default).
	LaneReply
	// LaneChatter: what desks say.
	LaneChatter
)

type laneKey struct{}

// WithLane returns ctx carrying the lane the Sender schedules its calls in.
func WithLane(ctx context.Context, l Lane) context.Context {
	return context.WithValue(ctx, laneKey{}, l)
}

// laneOf is the lane ctx carries; replies when none.
func laneOf(ctx context.Context) Lane {
	if l, ok := ctx.Value(laneKey{}).(Lane); ok {
		return l
	}
	return LaneReply
}
