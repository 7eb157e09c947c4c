package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// MaxTagLen is the longest order tag a broker takes: Kite's, at most 20
// letters and digits.
const MaxTagLen = 20

// Tag is the tag of the order made for one call, key being that call's key
// (a held request's id, a random UUID, or a turn's trigger and call). It is
// "db" followed by the first 18 hex digits of the key with its hyphens
// removed: 20 letters and digits, the most Kite accepts. Of those 72 bits a
// version-4 UUID fixes 6, leaving 66 random ones; with at most 5,000 orders
// a day (Kite's cap per user) the chance that two of a day's tags collide
// is about n²/2⁶⁷ ≈ 2·10⁻¹³, and a collision could only make a place answer
// with the other order, never send a second. Any other key (a turn's
// "<trigger id>:<call id>", a flatten's "<key>:<symbol>") is hashed
// (SHA-256) whole: its first digits are a UUID that its turn's other calls,
// or its flatten's other closing orders, share, so only the whole key
// tells them apart. Tag is deterministic and always valid whatever it is
// given.
func Tag(key string) string {
	const n = MaxTagLen - 2
	s := strings.ToLower(strings.ReplaceAll(key, "-", ""))
	if len(s) != 32 || !isHex(s) {
		h := sha256.Sum256([]byte(key))
		s = hex.EncodeToString(h[:])
	}
	return "db" + s[:n]
}

func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// OrderLog keeps the desks' orders as their broker reports them, books
// their fills into each desk's book (so a desk's positions come from its
// own orders' fills, whatever broker fills them) and tells each desk, and
// the chat, every change of its orders once. Both brokers keep their
// orders in it.
//
// Every change to an order is one atomic step of the store
// (deskbot.OrderStore.RecordOrder) that also books what it filled since it
// was last recorded: the book never counts a fill twice, whoever records it
// and however often. Telling is a second step made idempotent by its key
// (deskbot.Teller): an update read again after a crash between the two is
// told then, and never twice.
type OrderLog struct {
	store deskbot.OrderStore
	now   deskbot.Now
	tell  deskbot.Teller // nil: nobody is told (a tool's own answer says it)
	log   *slog.Logger
	// gttLocks make a desk's GTT check and record one step
	// (StartCheckedGTT).
	gttLocks *deskLocks
}

// NewOrderLog keeps orders in store, telling updates through tell (nil:
// none are told). A nil log discards.
func NewOrderLog(store deskbot.OrderStore, now deskbot.Now, tell deskbot.Teller, log *slog.Logger) *OrderLog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &OrderLog{store: store, now: now, tell: tell, log: log, gttLocks: &deskLocks{}}
}

// Version is what a desk is told about once, and what a change of the
// order compares (Move): its state and the quantity it filled. A pending
// order's version also names its last send (Updated, which a broker sets
// just before each send), so a read made before a send, in any process,
// cannot settle the order after it.
func Version(po deskbot.PlacedOrder) string {
	v := string(po.State) + " " + fmtExact(po.Filled)
	if po.State == deskbot.OrderPending {
		v += " " + strconv.FormatInt(po.Updated.UnixMilli(), 10)
	}
	// A modification is a change of the order too: two calls modifying
	// it at once cannot both move it from the same version.
	if n := len(po.Modifications); n > 0 {
		v += " m" + strconv.Itoa(n)
	}
	if po.Modifying != "" {
		v += " ~" + po.Modifying + " " + strconv.FormatInt(po.ModifyingAt.UnixMilli(), 10)
	}
	return v
}

// ErrNoKey refuses an order that came without its call's key: a key made
// up here could not stop the order being placed twice. Every broker
// refuses with it.
var ErrNoKey = deskbot.Errorf(deskbot.EINTERNAL, "this order came without its call's key, so it was not placed")

// Start records po, a new order of its desk (Tag, Desk, Order and At set),
// before it is sent, as told (the placing call's answer tells it). An
// order already recorded under po's tag is returned instead, with
// existed: the call was made before, and must not be sent again.
func (l *OrderLog) Start(ctx context.Context, po deskbot.PlacedOrder) (rec deskbot.PlacedOrder, existed bool, err error) {
	res, err := l.record(ctx, po, "-", true, deskbot.SendUnchanged)
	if err != nil {
		return po, false, err
	}
	if res.Existing != nil {
		return *res.Existing, true, nil
	}
	return po, false, nil
}

// Move records po only if its order is still at version from, and tells
// its desk unless told (its caller's answer tells it): every change after
// an order's start goes through it, so a cancel racing a fill, or an older
// read of the broker's orders racing a newer one, changes nothing the
// other changed. moved is false, with the order as it stands, when it was
// no longer at from.
func (l *OrderLog) Move(ctx context.Context, from string, po deskbot.PlacedOrder, told bool) (rec deskbot.PlacedOrder, moved bool, err error) {
	return l.move(ctx, from, po, told, deskbot.SendUnchanged)
}

// Sending records that the pending order po (as read at version from,
// its Updated the send's time) is being sent now: Move, and from then on
// the order may be at the broker, so Withdraw no longer takes it. A broker
// marks each send with it just before the send leaves.
func (l *OrderLog) Sending(ctx context.Context, from string, po deskbot.PlacedOrder) (rec deskbot.PlacedOrder, moved bool, err error) {
	return l.move(ctx, from, po, true, deskbot.SendMarked)
}

// Withdraw records the pending order rec as never placed, for why, only
// while no send of it was marked (Sending): an order still waiting for its
// send (a rate-limit slot) ends here and is never sent, since the send's
// mark then finds it moved. withdrawn is false, with the order as it
// stands, when it had moved or a send of it may have left. The caller's
// answer tells its desk.
func (l *OrderLog) Withdraw(ctx context.Context, rec deskbot.PlacedOrder, why string) (po deskbot.PlacedOrder, withdrawn bool, err error) {
	if rec.State != deskbot.OrderPending {
		return rec, false, nil
	}
	po = rec
	po.State, po.Reason, po.Updated = deskbot.OrderNotPlaced, why, l.now()
	return l.move(ctx, Version(rec), po, true, deskbot.SendNever)
}

func (l *OrderLog) move(ctx context.Context, from string, po deskbot.PlacedOrder, told bool, send deskbot.OrderSend) (deskbot.PlacedOrder, bool, error) {
	res, err := l.record(ctx, po, from, told, send)
	if err != nil {
		return po, false, err
	}
	if res.Existing != nil {
		return *res.Existing, false, nil
	}
	return po, true, l.told(ctx, po, res.Told)
}

func (l *OrderLog) record(ctx context.Context, po deskbot.PlacedOrder, from string, told bool, send deskbot.OrderSend) (deskbot.OrderRecorded, error) {
	// Booked in its one spelling, whoever built the order: "NSE:INFY" and
	// "INFY" are one position.
	po.Order.Symbol = deskbot.OneSpelling(po.Order.Symbol)
	if po.Updated.IsZero() {
		po.Updated = l.now()
	}
	res, err := l.store.RecordOrder(ctx, deskbot.OrderChange{Order: po, Version: Version(po), From: from, Told: told, Send: send, At: l.now()})
	return res, storeErr(err)
}

// told tells po's desk about po unless it was told this version already
// (a pending order is news to nobody), then marks it told; a final order
// then leaves the open index, which kept it until its desk was told.
func (l *OrderLog) told(ctx context.Context, po deskbot.PlacedOrder, last string) error {
	v := Version(po)
	if v == last || po.State == deskbot.OrderPending || l.tell == nil {
		return storeErr(l.store.OrderTold(ctx, po, ""))
	}
	now := l.now()
	t := &deskbot.Trigger{Desk: po.Desk, Kind: deskbot.TriggerOrder, Text: words.OrderUpdate(po), CreatedAt: now}
	var e *deskbot.Event
	if po.Filled > 0 || po.State == deskbot.OrderRejected {
		// The chat sees what moves money or needs a person's eye: fills
		// and rejections. The desk hears of every change.
		e = &deskbot.Event{Kind: deskbot.EventOrder, Desk: po.Desk, Time: now, Text: words.OrderEvent(po)}
	}
	if _, err := l.tell.TellOnce(ctx, "order:"+po.Tag+":"+v, t, e); err != nil {
		return err
	}
	return storeErr(l.store.OrderTold(ctx, po, v))
}

// Order is the order recorded under tag for desk on day (the India date
// of the trading day it belongs to, PlacedOrder.TradingDay); ENOTFOUND
// when there is none.
func (l *OrderLog) Order(ctx context.Context, desk, day, tag string) (deskbot.PlacedOrder, error) {
	po, err := l.store.LoggedOrder(ctx, desk, day, tag)
	return po, storeErr(err)
}

// Orders is desk's orders of the trading day day (an India date), and
// every order of the desk still open whatever day it belongs to (an
// after-market order placed last evening, one of a day gone by that its
// broker has not ended yet), oldest first: an order stays in view until
// its broker ends it.
func (l *OrderLog) Orders(ctx context.Context, desk, day string) ([]deskbot.PlacedOrder, error) {
	out, err := l.store.DeskOrders(ctx, desk, day)
	return out, storeErr(err)
}

// Find is desk's order id of day: the order whose broker id, or tag, is id.
func (l *OrderLog) Find(ctx context.Context, desk, day, id string) (deskbot.PlacedOrder, error) {
	orders, err := l.Orders(ctx, desk, day)
	if err != nil {
		return deskbot.PlacedOrder{}, err
	}
	for _, po := range orders {
		if po.ID == id || po.Tag == id {
			return po, nil
		}
	}
	return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.ENOTFOUND, "This desk has no order %s today; get_orders lists its orders.", id)
}

// Open is every order of every desk not yet final, oldest first: what a
// broker's updates still have to move. A final order its desk was not
// told of (the store failed, or the process stopped, between recording
// and telling) is told now, once, and left out.
func (l *OrderLog) Open(ctx context.Context) ([]deskbot.PlacedOrder, error) {
	idx, err := l.store.OpenOrders(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	var out []deskbot.PlacedOrder
	for _, o := range idx {
		if o.Order.State.Final() {
			if err := l.told(ctx, o.Order, o.Told); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, o.Order)
	}
	return out, nil
}

// HasOpen reports whether any desk's order is still open.
func (l *OrderLog) HasOpen(ctx context.Context) (bool, error) {
	open, err := l.store.HasOpenOrders(ctx)
	return open, storeErr(err)
}

// Book is desk's positions from its orders' fills, each priced at the
// market's last price (one read for them all; none with a nil market), and
// its realised P&L to date.
func (l *OrderLog) Book(ctx context.Context, desk string, market deskbot.Market) (deskbot.Book, error) {
	all, err := l.store.BookPositions(ctx, desk)
	if err != nil {
		return deskbot.Book{}, storeErr(err)
	}
	var b deskbot.Book
	for _, pos := range all {
		// The book keeps P&L per unit of quantity; a contract's unit is
		// its whole size (a USDINR contract is $1,000).
		if pos.ContractSize = ContractSize(ctx, market, pos.Symbol); pos.ContractSize != 1 {
			pos.RealisedPnL *= pos.ContractSize
		}
		b.RealisedPnL += pos.RealisedPnL
		if pos.Quantity != 0 {
			pos.RealisedPnL = deskbot.RoundPaise(pos.RealisedPnL)
			b.Positions = append(b.Positions, pos)
		}
	}
	syms := make([]string, len(b.Positions))
	for i, pos := range b.Positions {
		syms[i] = pos.Symbol
	}
	if len(syms) > 0 && market != nil {
		prices, err := market.LastPrices(ctx, syms)
		if err != nil {
			return deskbot.Book{}, err
		}
		for i := range b.Positions {
			if price, ok := prices[b.Positions[i].Symbol]; ok {
				b.Positions[i].LastPrice = price
			}
		}
	}
	slices.SortFunc(b.Positions, func(a, b deskbot.Position) int { return strings.Compare(a.Symbol, b.Symbol) })
	b.RealisedPnL = deskbot.RoundPaise(b.RealisedPnL)
	return b, nil
}

// ContractSize is symbol's contract size as market lists it, 1 when it
// lists it no more (an expired contract still in a book) or there is no
// market: P&L is then counted per unit.
func ContractSize(ctx context.Context, market deskbot.Market, symbol string) float64 {
	if market == nil {
		return 1
	}
	in, err := market.Instrument(ctx, symbol)
	if err != nil || !(in.ContractSize > 0) {
		return 1
	}
	return in.ContractSize
}

// Trades is desk's last limit fills, oldest first (Paper.Trades), their
// realised P&L by each contract's size (ContractSize).
func (l *OrderLog) Trades(ctx context.Context, desk string, limit int, market deskbot.Market) ([]deskbot.Trade, error) {
	out, err := l.store.TradeJournal(ctx, desk, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	for i := range out {
		t := &out[i]
		if size := ContractSize(ctx, market, t.Symbol); size != 1 {
			t.RealisedPnL *= size
		}
	}
	return out, nil
}

// paperID is the paper broker's id of the order tagged tag: the tag
// itself, unique to its call.
func paperID(tag string) string { return tag }

// FoldBooks writes each desk's book in the one spelling of its symbols
// (deskbot.SymbolOf), once at the start: a position booked as "NSE:INFY"
// before a bare symbol meant NSE joins "INFY". Each desk's book is folded
// in one atomic step; folding again changes nothing. It returns how many
// positions it folded.
func (l *OrderLog) FoldBooks(ctx context.Context, desks []string) (int, error) {
	n := 0
	for _, desk := range desks {
		got, err := l.store.FoldBook(ctx, desk)
		if err != nil {
			return n, storeErr(err)
		}
		n += got
	}
	return n, nil
}
