package brokertest

import (
	"context"

	"github.com/deskbot/deskbot"
)

// Meeting holds each LIMIT order a broker puts to its Admit (a GTT's leg,
// at the send's last check) until every call of a round has got there or
// ended (Ended): calls made at once overlap as much as they can, whatever
// the scheduler does, so a check and a record that are not one step are
// seen both to pass. Other orders (the MARKET orders that make a position)
// pass at once.
type Meeting struct {
	arrive  chan struct{}
	ended   chan struct{}
	release chan struct{}
}

// NewMeeting is a meeting of calls calls.
func NewMeeting(calls int) *Meeting {
	m := &Meeting{arrive: make(chan struct{}, calls), ended: make(chan struct{}, calls), release: make(chan struct{})}
	go func() {
		for range calls {
			select {
			case <-m.arrive:
			case <-m.ended:
			}
		}
		close(m.release)
	}()
	return m
}

// Admit is the meeting as a broker's Admit (broker.Admit).
func (m *Meeting) Admit(ctx context.Context, _ string, o deskbot.Order, _ func(context.Context) (deskbot.Book, error)) error {
	if o.Type != deskbot.OrderLimit {
		return nil
	}
	m.arrive <- struct{}{}
	select {
	case <-m.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ended says one call of the round has returned: it will not arrive.
func (m *Meeting) Ended() { m.ended <- struct{}{} }
