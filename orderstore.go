package deskbot

import (
	"context"
	"time"
)

// OrderStore keeps the desks' orders, books, trade journals and GTTs (package
// store implements it; the brokers' order log, package broker, uses it).
// Every change of an order is one atomic step that also books what the
// order filled since it was last recorded, so a desk's book never counts a
// fill twice nor misses one, whoever records it and however often.
type OrderStore interface {
	// RecordOrder applies c. An order already recorded (c.From "-") or
	// not at c.From comes back as OrderRecorded.Existing, nothing written;
	// an order whose booking would overflow a number is refused (EINVALID),
	// nothing written.
	RecordOrder(ctx context.Context, c OrderChange) (OrderRecorded, error)
	// OrderTold marks version of po told to its desk ("": nothing to
	// mark) and drops po, when final, from the open orders: nothing moves
	// it any more.
	OrderTold(ctx context.Context, po PlacedOrder, version string) error
	// LoggedOrder is the order recorded under tag for desk on day (the
	// India date of its trading day, PlacedOrder.TradingDay); ENOTFOUND
	// when there is none.
	LoggedOrder(ctx context.Context, desk, day, tag string) (PlacedOrder, error)
	// DeskOrders is desk's orders of day and every order of the desk still
	// open whatever its day, oldest first.
	DeskOrders(ctx context.Context, desk, day string) ([]PlacedOrder, error)
	// OpenOrders is every order not yet final, of every desk, with what
	// its desk was last told of it, oldest first; a final order stays
	// among them until its last version is told (OrderTold). An order
	// whose day's orders expired is dropped.
	OpenOrders(ctx context.Context) ([]ToldOrder, error)
	// HasOpenOrders reports whether any desk's order is still open.
	HasOpenOrders(ctx context.Context) (bool, error)
	// BookPositions is desk's book as its fills made it, by symbol,
	// positions closed to zero (their realised P&L kept) included; P&L per
	// unit of quantity, no market price read.
	BookPositions(ctx context.Context, desk string) ([]Position, error)
	// TradeJournal is desk's last limit fills, oldest first, P&L per unit
	// of quantity.
	TradeJournal(ctx context.Context, desk string, limit int) ([]Trade, error)
	// FlattenBook closes every open position of desk at prices (a symbol
	// without one closes at its last price) in one step, journalled at
	// at, and returns the closing fills by symbol.
	FlattenBook(ctx context.Context, desk string, at time.Time, prices map[string]float64) ([]Fill, error)
	// FoldBook writes desk's book in the one spelling of its symbols
	// (SymbolOf) in one step, and returns how many positions it folded.
	FoldBook(ctx context.Context, desk string) (int, error)
	// GTTStore: the desks' GTTs, kept beside their orders.
	GTTStore
}

// OrderChange is one change of an order for OrderStore.RecordOrder.
type OrderChange struct {
	Order PlacedOrder // as it stands now (Tag, Desk, Order set; Symbol in its one spelling)
	// Version is what the order is now (broker.Version); From is the
	// version it must be at ("": any, "-": only when not yet recorded).
	Version, From string
	// Told: the caller tells its desk of this version itself, so it counts
	// as told.
	Told bool
	Send OrderSend
	At   time.Time // when the change is journalled
}

// OrderSend is what a change says of an order's send.
type OrderSend string

const (
	// SendUnchanged leaves the send's mark as it is.
	SendUnchanged OrderSend = ""
	// SendMarked marks the order's send: from now on it may be at the
	// broker.
	SendMarked OrderSend = "send"
	// SendNever moves only an order whose send was never marked: one still
	// waiting for its send is withdrawn, never one that may have left.
	SendNever OrderSend = "unsent"
)

// OrderRecorded is what OrderStore.RecordOrder did.
type OrderRecorded struct {
	// Existing is the order as it stands when the change did not apply
	// (it was recorded already, or it moved from the change's From).
	Existing *PlacedOrder
	// Told is the version its desk was last told of (the change applied).
	Told string
	// Realised is the P&L the change's fill realised, per unit.
	Realised float64
}

// ToldOrder is an order with the version its desk was last told of ("":
// none).
type ToldOrder struct {
	Order PlacedOrder
	Told  string
}

// AccountOrders counts the orders sent to the broker's account in a day,
// across every instance on the store, for the broker's cap of orders a day
// (Kite: 5,000).
type AccountOrders interface {
	// CountAccountOrder counts the order tagged tag as one of day's (India
	// date, OrderDay) unless max are counted already, atomically; a tag
	// counted before is counted once and allowed again. It returns the
	// count and whether the order may be sent.
	CountAccountOrder(ctx context.Context, day, tag string, max int) (int, bool, error)
}
