package broker

import (
	"context"

	"github.com/deskbot/deskbot"
)

// Admit is the last check on a desk's order, made immediately before the
// broker is asked to make it: at Kite once its send has its rate-limit
// slot (which in a burst comes minutes after the call was allowed), at the
// paper broker just before it is recorded. An error refuses the order: it
// is not placed and never sent afterwards, and the error's words tell the
// desk why. book reads the desk's book as it stands, quantities only, for
// a check that needs it (called only then).
//
// The service builds every broker with one (risk.Admission: the desk's
// halt and its square-off), so an order allowed before a halt or the
// square-off and run after it is refused as one asked for after it is. A
// flatten's closing orders are not put to it: they only close, and a
// halt's own flatten sends them.
type Admit func(ctx context.Context, desk string, o deskbot.Order, book func(context.Context) (deskbot.Book, error)) error
