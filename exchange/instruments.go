package exchange

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
)

// priceScale is how many price units make a rupee: ticks and prices are
// compared as whole ten-thousandths of a rupee, because a currency
// contract's tick is 0.0025 (finer than a paisa) and binary floats cannot
// say whether 24512.35 is a multiple of 0.05.
const priceScale = 10_000

// Instrument is what a check needs to know of one tradable instrument, as
// the broker's instrument list gives it.
type Instrument struct {
	Exchange      string // NSE, BSE, NFO, BFO, MCX, CDS...
	Tradingsymbol string // exactly as the exchange writes it
	Token         uint32 // instrument_token, for quotes and the ticker
	LotSize       int    // the quantity must be a multiple of it; 0: not known
	TickSize      float64
	Expiry        Date    // zero for what does not expire (cash)
	Type          string  // instrument_type: EQ, FUT, CE, PE...
	Segment       string  // segment: NSE, NFO-FUT, NFO-OPT, INDICES...
	Strike        float64 // an option's strike; 0 for none or past what the list keeps
	Name          string  // a future's or option's underlying as Kite names it (NIFTY, USDINR, CRUDEOIL); "" for shares
}

// Key is "EXCHANGE:TRADINGSYMBOL", the way Kite names an instrument.
func (i Instrument) Key() string { return i.Exchange + ":" + i.Tradingsymbol }

// tickUnits is the tick in price units; 0 when it is not known.
func (i Instrument) tickUnits() int64 { return tickUnits(i.TickSize) }

func tickUnits(tick float64) int64 {
	if !(tick > 0) || tick > math.MaxUint32/priceScale {
		return 0
	}
	// A tick finer than a unit becomes one unit rather than none, so an
	// unknown exchange's tiny tick is still checked at that resolution.
	return max(1, int64(math.Round(tick*priceScale)))
}

// entry is one instrument, 24 bytes: the list holds tens of thousands
// (NFO alone about 90,000), rebuilt every morning. Its symbol is
// arena[entries[i].end-len : entries[i].end], where the start is the
// previous entry's end: entries are sorted by exchange and symbol and
// their symbols laid out in that order, so no offset pair is stored.
// Its exchange is the range of entries it falls in.
type entry struct {
	end    uint32 // end of the symbol in the arena
	token  uint32
	lot    uint32
	tick   uint32 // price units (priceScale per rupee); 0: not known
	expiry uint16 // days since 1970-01-01; 0: none
	class  uint16 // index into classes: instrument type, segment and underlying
	strike uint32 // price units; 0: none (or past 4,29,496 rupees)
}

// class is what many instruments share: a derivative's underlying name
// with its type and segment (a few thousand in all); shares keep no name,
// so the table stays small.
type class struct{ typ, segment, name string }

type exchangeRange struct {
	name       string
	start, end int // entries[start:end]
}

// Instruments is the day's list of instruments, compact and immutable: one
// string arena of every symbol and a sorted slice of small fixed entries,
// searched by binary search. Safe to share between goroutines; the service
// swaps in a new list rather than changing one.
type Instruments struct {
	arena     string
	entries   []entry
	exchanges []exchangeRange // sorted by name
	classes   []class
}

// FromKite keeps what a check needs from the broker's instrument list
// (kiteconnect's GetInstrumentsByExchange or GetInstruments) and drops the
// rest, so the client's large structs can be freed. Rows without an
// exchange or tradingsymbol are dropped; of two rows with the same
// exchange and tradingsymbol the later is kept. A lot size or tick that is
// not a positive number is kept as "not known" and that check is left to
// the broker, rather than guessed.
func FromKite(list []kiteconnect.Instrument) *Instruments {
	order := make([]int32, 0, len(list))
	for i := range list {
		if list[i].Exchange != "" && list[i].Tradingsymbol != "" {
			order = append(order, int32(i))
		}
	}
	// Stable, so that of duplicates the last in the list stays last.
	slices.SortStableFunc(order, func(a, b int32) int {
		x, y := &list[a], &list[b]
		return cmp.Or(strings.Compare(x.Exchange, y.Exchange), strings.Compare(x.Tradingsymbol, y.Tradingsymbol))
	})
	// Drop all but the last of each run of duplicates.
	kept := order[:0]
	for k, i := range order {
		if k+1 < len(order) {
			n := &list[order[k+1]]
			if n.Exchange == list[i].Exchange && n.Tradingsymbol == list[i].Tradingsymbol {
				continue
			}
		}
		kept = append(kept, i)
	}
	order = kept

	size := 0
	for _, i := range order {
		size += len(list[i].Tradingsymbol)
	}
	var arena strings.Builder
	arena.Grow(size)
	ins := &Instruments{entries: make([]entry, len(order))}
	classIndex := map[class]uint16{}
	for k, i := range order {
		r := &list[i]
		arena.WriteString(r.Tradingsymbol)
		if n := len(ins.exchanges); n == 0 || ins.exchanges[n-1].name != r.Exchange {
			if n > 0 {
				ins.exchanges[n-1].end = k
			}
			ins.exchanges = append(ins.exchanges, exchangeRange{name: strings.Clone(r.Exchange), start: k})
		}
		c := class{typ: r.InstrumentType, segment: r.Segment}
		if derivative(r.InstrumentType) {
			c.name = r.Name
		}
		ci, ok := classIndex[c]
		switch {
		case ok:
		case len(ins.classes) < math.MaxUint16:
			ci = uint16(len(ins.classes))
			c = class{strings.Clone(c.typ), strings.Clone(c.segment), strings.Clone(c.name)}
			ins.classes = append(ins.classes, c)
			classIndex[c] = ci
		default:
			ci = math.MaxUint16 // past the table: type and segment not kept
		}
		ins.entries[k] = entry{
			end:    uint32(arena.Len()),
			token:  uint32(max(0, min(r.InstrumentToken, math.MaxUint32))),
			lot:    lotOf(r.LotSize),
			tick:   uint32(tickUnits(r.TickSize)),
			expiry: daysOf(r.Expiry.Time),
			class:  ci,
			strike: strikeOf(r.StrikePrice),
		}
	}
	if n := len(ins.exchanges); n > 0 {
		ins.exchanges[n-1].end = len(order)
	}
	ins.arena = arena.String()
	return ins
}

// derivative reports whether an instrument type is a future or an option,
// whose underlying's name the list keeps.
func derivative(typ string) bool { return typ == "FUT" || typ == "CE" || typ == "PE" }

// strikeOf keeps a strike in price units; one past what 32 bits hold is
// not kept (0).
func strikeOf(f float64) uint32 {
	u := math.Round(f * priceScale)
	if !(u > 0) || u > math.MaxUint32 {
		return 0
	}
	return uint32(u)
}

// lotOf keeps a whole positive lot size; anything else is not known.
func lotOf(f float64) uint32 {
	if !(f >= 1) || f > math.MaxUint32 || f != math.Trunc(f) {
		return 0
	}
	return uint32(f)
}

var epoch = Date{1970, time.January, 1}.Midnight()

// daysOf is the India date of an expiry as days since 1970 (0: none). The
// client reads Kite's "2026-12-29" as midnight in Asia/Kolkata; a midnight
// in UTC names the same date in India, so either reads right.
func daysOf(t time.Time) uint16 {
	if t.IsZero() {
		return 0
	}
	days := DateOf(t).Midnight().Sub(epoch) / (24 * time.Hour)
	if days <= 0 || days > math.MaxUint16 {
		return 0
	}
	return uint16(days)
}

func dateOfDays(n uint16) Date {
	if n == 0 {
		return Date{}
	}
	return DateOf(epoch.Add(time.Duration(n) * 24 * time.Hour))
}

// Len is how many instruments the list holds.
func (ins *Instruments) Len() int {
	if ins == nil {
		return 0
	}
	return len(ins.entries)
}

// Exchanges are the exchanges the list holds instruments on, sorted.
func (ins *Instruments) Exchanges() []string {
	if ins == nil {
		return nil
	}
	out := make([]string, len(ins.exchanges))
	for i, e := range ins.exchanges {
		out[i] = e.name
	}
	return out
}

// Bytes is the memory the list holds, for a log line or a metric.
func (ins *Instruments) Bytes() int {
	if ins == nil {
		return 0
	}
	n := len(ins.arena) + cap(ins.entries)*int(unsafe.Sizeof(entry{})) +
		cap(ins.exchanges)*int(unsafe.Sizeof(exchangeRange{})) + cap(ins.classes)*int(unsafe.Sizeof(class{}))
	for _, e := range ins.exchanges {
		n += len(e.name)
	}
	for _, c := range ins.classes {
		n += len(c.typ) + len(c.segment) + len(c.name)
	}
	return n
}

func (ins *Instruments) symbol(i int) string {
	start := uint32(0)
	if i > 0 {
		start = ins.entries[i-1].end
	}
	return ins.arena[start:ins.entries[i].end]
}

func (ins *Instruments) exchange(name string) (exchangeRange, bool) {
	if ins == nil {
		return exchangeRange{}, false
	}
	i, ok := slices.BinarySearchFunc(ins.exchanges, name, func(e exchangeRange, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return exchangeRange{}, false
	}
	return ins.exchanges[i], true
}

// Lookup finds an instrument by exchange and tradingsymbol, spelled exactly
// as the exchange lists them: nothing is folded, so the instrument found is
// the one the order names. It does not allocate.
func (ins *Instruments) Lookup(exchange, tradingsymbol string) (Instrument, bool) {
	r, ok := ins.exchange(exchange)
	if !ok {
		return Instrument{}, false
	}
	lo, hi := r.start, r.end
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ins.symbol(mid) < tradingsymbol {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == r.end || ins.symbol(lo) != tradingsymbol {
		return Instrument{}, false
	}
	return ins.at(r.name, lo), true
}

// All calls fn with each instrument of exchange ("" for every exchange),
// in the list's order (by exchange, then symbol), until fn returns false.
func (ins *Instruments) All(exchange string, fn func(Instrument) bool) {
	if ins == nil {
		return
	}
	for _, r := range ins.exchanges {
		if exchange != "" && r.name != exchange {
			continue
		}
		for i := r.start; i < r.end; i++ {
			if !fn(ins.at(r.name, i)) {
				return
			}
		}
	}
}

// at is the instrument of entry i, on exchange.
func (ins *Instruments) at(exchange string, i int) Instrument {
	lo := i
	e := ins.entries[lo]
	inst := Instrument{
		Exchange:      exchange,
		Tradingsymbol: ins.symbol(lo),
		Token:         e.token,
		LotSize:       int(e.lot),
		TickSize:      float64(e.tick) / priceScale,
		Expiry:        dateOfDays(e.expiry),
		Strike:        float64(e.strike) / priceScale,
	}
	if int(e.class) < len(ins.classes) {
		c := ins.classes[e.class]
		inst.Type, inst.Segment, inst.Name = c.typ, c.segment, c.name
	}
	return inst
}

// Future is the future on exchange of the underlying name that expires
// first on or after from: what a currency or commodity option is written
// on. false when the list has none.
func (ins *Instruments) Future(exchange, name string, from Date) (Instrument, bool) {
	r, ok := ins.exchange(exchange)
	if !ok {
		return Instrument{}, false
	}
	best := -1
	for i := r.start; i < r.end; i++ {
		e := ins.entries[i]
		if int(e.class) >= len(ins.classes) {
			continue
		}
		if c := ins.classes[e.class]; c.typ != "FUT" || c.name != name || e.expiry == 0 || dateOfDays(e.expiry).Before(from) {
			continue
		}
		if best < 0 || e.expiry < ins.entries[best].expiry {
			best = i
		}
	}
	if best < 0 {
		return Instrument{}, false
	}
	return ins.Lookup(exchange, ins.symbol(best))
}

// indexUnderlyings are where the index options of NFO and BFO are written
// on: Kite's name of the index in the NSE and BSE lists (segment
// INDICES), by the options' underlying name.
var indexUnderlyings = map[string]string{
	"NFO:NIFTY":      "NSE:NIFTY 50",
	"NFO:BANKNIFTY":  "NSE:NIFTY BANK",
	"NFO:FINNIFTY":   "NSE:NIFTY FIN SERVICE",
	"NFO:MIDCPNIFTY": "NSE:NIFTY MID SELECT",
	"NFO:NIFTYNXT50": "NSE:NIFTY NEXT 50",
	"BFO:SENSEX":     "BSE:SENSEX",
	"BFO:BANKEX":     "BSE:BANKEX",
	"BFO:SENSEX50":   "BSE:SENSEX50",
}

// Sized is inst as sizing reads it (deskbot.Instrument): its contract size
// from sizes, and for a derivative where its underlying is priced: an
// index's level, a stock's shares on NSE (BSE for BFO), and for currency
// and commodity options the nearest future of the same name. EINVALID
// when its contract size is not known: it is refused, never counted as 1.
func (ins *Instruments) Sized(inst Instrument, sizes deskbot.ContractSizes) (deskbot.Instrument, error) {
	out := deskbot.Instrument{
		Symbol: deskbot.SymbolOf(inst.Exchange, inst.Tradingsymbol), Type: inst.Type,
		LotSize: inst.LotSize, TickSize: inst.TickSize, Strike: inst.Strike,
	}
	if !inst.Expiry.IsZero() {
		out.Expiry = inst.Expiry.String()
	}
	if out.Type == "" {
		out.Type = deskbot.InstrumentEQ
	}
	name := inst.Name
	if name == "" {
		name = inst.Tradingsymbol
	}
	size, ok := sizes.Size(inst.Exchange, name)
	if !ok {
		return deskbot.Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s was not placed: the contract size of %s (%s on %s) is not known to deskbot, so what the order puts at risk cannot be counted. Nobody was asked. The operator can add it to DESKS_FILE's [contract_sizes] as \"%s:%s\".",
			deskbot.ToolPlaceOrder, show(inst.Key()), name, inst.Exchange, inst.Exchange, name)
	}
	out.ContractSize = size
	if !derivative(inst.Type) {
		return out, nil
	}
	switch inst.Exchange {
	case "NFO", "BFO":
		if idx, ok := indexUnderlyings[inst.Exchange+":"+name]; ok {
			out.Underlying = deskbot.OneSpelling(idx)
		} else if inst.Exchange == "NFO" {
			out.Underlying = deskbot.SymbolOf("NSE", name)
		} else {
			out.Underlying = deskbot.SymbolOf("BSE", name)
		}
	default:
		if f, ok := ins.Future(inst.Exchange, name, inst.Expiry); ok && inst.Type != "FUT" {
			out.Underlying = deskbot.SymbolOf(f.Exchange, f.Tradingsymbol)
		}
	}
	return out, nil
}
