package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
)

// Tool names: part of the contract with desks' prompts and APPROVAL_TOOLS.
const (
	GetPositions = deskbot.ToolGetPositions
	PlaceOrder   = deskbot.ToolPlaceOrder
	FlattenDesk  = deskbot.ToolFlattenDesk
)

// Tools returns the broker tools over b: get_positions, place_order and
// flatten_desk, in that order. A model's mistake (bad JSON, a missing,
// repeated or unknown argument, an invalid order) is a ToolResult with
// IsError; a broker failure is an error. Every tool is a
// deskbot.ArgumentChecker: the same checks refuse a call before the gate
// holds it, so an approver is never asked about a call that would fail or
// run as something other than it reads, and again when it runs. log (nil
// discards) gets what the model is not told.
func Tools(b deskbot.Broker, log *slog.Logger) []deskbot.Tool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return []deskbot.Tool{
		&tool{name: GetPositions, desc: getPositionsDesc, schema: noArgsSchema,
			check: func(args json.RawMessage) error { return noArgs(GetPositions, args) },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				book, err := b.Book(ctx, desk)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: deskbot.FormatBook(book)}, nil
			}},
		&tool{name: PlaceOrder, desc: placeOrderDesc, schema: placeOrderSchema,
			check: func(args json.RawMessage) error { _, err := parseOrder(args); return err },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				o, err := parseOrder(args)
				if err != nil {
					return modelError(err)
				}
				fill, err := b.PlaceOrder(ctx, desk, o)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: fillText(ctx, log, b, desk, fill)}, nil
			}},
		&tool{name: FlattenDesk, desc: flattenDesc, schema: noArgsSchema,
			check: func(args json.RawMessage) error { return noArgs(FlattenDesk, args) },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				r, err := b.Flatten(ctx, desk)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: deskbot.FormatFlatten(r)}, nil
			}},
	}
}

const (
	getPositionsDesc = "Show this desk's paper-trading book: one line per open position " +
		"(long or short, quantity, average price, last price, unrealised P&L), then totals " +
		"with the P&L realised so far. Takes no arguments."
	placeOrderDesc = "Place a paper order. It fills at once and completely at the price you give. " +
		"\"buy\" adds to a long or reduces a short; \"sell\" reduces a long or opens or adds to a short. " +
		"Trading through zero closes the old side and opens the rest at this price. " +
		"The symbol must be spelled exactly as the exchange writes it, in upper case (RELIANCE, M&M, BAJAJ-AUTO); " +
		"any other spelling is refused, never corrected. Returns the fill, the P&L it realised and the symbol's new position."
	flattenDesc = "Close every open position of this desk at its last traded price and report " +
		"each closing fill and the P&L realised. Takes no arguments. May need a person's approval."
)

var (
	noArgsSchema     = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	placeOrderSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbol":{"type":"string","pattern":"^[A-Z0-9][A-Z0-9&._/-]{0,31}$","description":"Instrument symbol in upper case, e.g. RELIANCE"},` +
		`"side":{"type":"string","enum":["buy","sell"],"description":"buy or sell"},` +
		`"quantity":{"type":"number","description":"Units to trade, greater than 0"},` +
		`"price":{"type":"number","description":"Fill price per unit, greater than 0"}},` +
		`"required":["symbol","side","quantity","price"],"additionalProperties":false}`)
)

// tool is one broker tool: check refuses arguments (the same check before
// the gate holds a call and when it runs), run runs checked arguments.
type tool struct {
	name, desc string
	schema     json.RawMessage
	check      func(args json.RawMessage) error
	run        func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error)
}

var _ deskbot.ArgumentChecker = (*tool)(nil)

func (t *tool) Name() string            { return t.name }
func (t *tool) Description() string     { return t.desc }
func (t *tool) Schema() json.RawMessage { return t.schema }

// CheckArguments refuses arguments the tool would refuse when run; the
// error's message is what the model is told.
func (t *tool) CheckArguments(args json.RawMessage) error { return t.check(args) }

func (t *tool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	if err := t.check(args); err != nil {
		return modelError(err)
	}
	return t.run(ctx, desk, args)
}

func modelError(err error) (deskbot.ToolResult, error) {
	return deskbot.ToolResult{Text: deskbot.ErrorMessage(err), IsError: true}, nil
}

// brokerError hands an invalid order back to the model and any other failure
// up as a system error.
func brokerError(err error) (deskbot.ToolResult, error) {
	if deskbot.ErrorCode(err) == deskbot.EINVALID {
		return modelError(err)
	}
	return deskbot.ToolResult{}, err
}

// fillText reports the fill and, for the model's convenience, the symbol's
// position after it. The order has already filled, so a failure to read the
// book must not turn into an error: the caller could take it for a failed
// order and place it again.
func fillText(ctx context.Context, log *slog.Logger, b deskbot.Broker, desk string, f deskbot.Fill) string {
	text := "Filled: " + deskbot.FormatFill(f) + "."
	book, err := b.Book(ctx, desk)
	if err != nil {
		log.WarnContext(ctx, "broker: read book after fill", "desk", desk, "err", err)
		return text + " (Position unavailable just now; call get_positions.)"
	}
	i := slices.IndexFunc(book.Positions, func(p deskbot.Position) bool { return p.Symbol == f.Symbol })
	if i < 0 {
		return text + " " + f.Symbol + " is now flat. Realised P&L to date " + deskbot.Money(book.RealisedPnL) + "."
	}
	return text + " Now " + deskbot.FormatPosition(book.Positions[i]) + "."
}

// noArgs accepts {}, null or nothing.
func noArgs(name string, args json.RawMessage) error {
	fields, err := object(name, args)
	if err != nil {
		return err
	}
	for k := range fields {
		return deskbot.Errorf(deskbot.EINVALID, "%s takes no arguments; remove %q and call it with {}", name, k)
	}
	return nil
}

// object decodes args as a JSON object of raw fields. A field given twice
// is refused: decoders disagree on which copy wins, and the approver must
// read the one that runs.
func object(name string, args json.RawMessage) (map[string]json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%s arguments must be a JSON object: %v", name, err)
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.Token() // {
	seen := make(map[string]bool, len(fields))
	for d.More() {
		k, err := d.Token()
		if err != nil {
			break // cannot happen: Unmarshal accepted it
		}
		key, _ := k.(string)
		if seen[key] {
			return nil, deskbot.Errorf(deskbot.EINVALID, "%s argument %s is given twice; give each argument once", name, strconv.QuoteToASCII(key))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			break
		}
	}
	return fields, nil
}

var orderArgs = []string{"symbol", "side", "quantity", "price"}

// parseOrder reads place_order's arguments exactly as given and checks them
// (CheckOrder): what it returns is what the approver read.
func parseOrder(args json.RawMessage) (deskbot.Order, error) {
	var o deskbot.Order
	fields, err := object(PlaceOrder, args)
	if err != nil {
		return o, err
	}
	for k := range fields {
		if !slices.Contains(orderArgs, k) {
			return o, deskbot.Errorf(deskbot.EINVALID, "place_order has no argument %q; it takes symbol, side, quantity and price", k)
		}
	}
	var missing []string
	for _, k := range orderArgs {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return o, deskbot.Errorf(deskbot.EINVALID, "place_order needs symbol, side, quantity and price; missing: %s", strings.Join(missing, ", "))
	}
	if err := field(fields, "symbol", &o.Symbol, `a string, e.g. "RELIANCE"`); err != nil {
		return o, err
	}
	if err := field(fields, "side", &o.Side, `"buy" or "sell"`); err != nil {
		return o, err
	}
	if err := field(fields, "quantity", &o.Quantity, "a number, e.g. 10"); err != nil {
		return o, err
	}
	if err := field(fields, "price", &o.Price, "a number, e.g. 2500.5"); err != nil {
		return o, err
	}
	for _, k := range []string{"quantity", "price"} {
		if n := significantDigits(fields[k]); n > maxDigits {
			return o, deskbot.Errorf(deskbot.EINVALID, "%s has %d significant digits; at most %d are kept exactly, so send it rounded", k, n, maxDigits)
		}
	}
	return o, CheckOrder(o)
}

// significantDigits counts the significant digits of a JSON number's text.
func significantDigits(raw json.RawMessage) int {
	s := strings.TrimLeft(string(bytes.TrimSpace(raw)), "-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	return len(strings.TrimRight(strings.TrimLeft(s, "0"), "0"))
}

// field decodes one argument strictly, as the schema says: a number sent as
// a string is refused rather than guessed at, since it is real money.
func field(fields map[string]json.RawMessage, k string, dst any, want string) error {
	raw := fields[k]
	if err := json.Unmarshal(raw, dst); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		return deskbot.Errorf(deskbot.EINVALID, "%s must be %s, not %s", k, want, deskbot.ShowText(truncate(string(raw), 40)))
	}
	return nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return fmt.Sprintf("%s…", string(r[:n]))
	}
	return s
}
