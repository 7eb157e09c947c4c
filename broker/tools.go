package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/deskbot/deskbot"
)

// Tool names, as the issue fixes them.
const (
	GetPositions = "get_positions"
	PlaceOrder   = "place_order"
	FlattenDesk  = "flatten_desk"
)

// Tools returns the broker tools over b: get_positions, place_order and
// flatten_desk, in that order. A model's mistake (bad JSON, a missing or
// unknown argument, an invalid order) is a ToolResult with IsError; a broker
// failure is an error.
func Tools(b deskbot.Broker) []deskbot.Tool {
	return []deskbot.Tool{
		&tool{name: GetPositions, desc: getPositionsDesc, schema: noArgsSchema, run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
			if err := noArgs(GetPositions, args); err != nil {
				return modelError(err)
			}
			book, err := b.Book(ctx, desk)
			if err != nil {
				return brokerError(err)
			}
			return deskbot.ToolResult{Text: FormatBook(book)}, nil
		}},
		&tool{name: PlaceOrder, desc: placeOrderDesc, schema: placeOrderSchema, run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
			o, err := parseOrder(args)
			if err != nil {
				return modelError(err)
			}
			fill, err := b.PlaceOrder(ctx, desk, o)
			if err != nil {
				return brokerError(err)
			}
			return deskbot.ToolResult{Text: fillText(ctx, b, desk, fill)}, nil
		}},
		&tool{name: FlattenDesk, desc: flattenDesc, schema: noArgsSchema, run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
			if err := noArgs(FlattenDesk, args); err != nil {
				return modelError(err)
			}
			r, err := b.Flatten(ctx, desk)
			if err != nil {
				return brokerError(err)
			}
			return deskbot.ToolResult{Text: FormatFlatten(r)}, nil
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
		"Symbols are case-insensitive (stored upper-case). Returns the fill, the P&L it realised and the symbol's new position."
	flattenDesc = "Close every open position of this desk at its last traded price and report " +
		"each closing fill and the P&L realised. Takes no arguments. May need a person's approval."
)

var (
	noArgsSchema     = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	placeOrderSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbol":{"type":"string","description":"Instrument symbol, e.g. RELIANCE"},` +
		`"side":{"type":"string","enum":["buy","sell"],"description":"buy or sell"},` +
		`"quantity":{"type":"number","description":"Units to trade, greater than 0"},` +
		`"price":{"type":"number","description":"Fill price per unit, greater than 0"}},` +
		`"required":["symbol","side","quantity","price"],"additionalProperties":false}`)
)

type tool struct {
	name, desc string
	schema     json.RawMessage
	run        func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error)
}

func (t *tool) Name() string            { return t.name }
func (t *tool) Description() string     { return t.desc }
func (t *tool) Schema() json.RawMessage { return t.schema }
func (t *tool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
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
func fillText(ctx context.Context, b deskbot.Broker, desk string, f deskbot.Fill) string {
	text := "Filled: " + FormatFill(f) + "."
	book, err := b.Book(ctx, desk)
	if err != nil {
		slog.WarnContext(ctx, "broker: read book after fill", "desk", desk, "err", err)
		return text + " (Position unavailable just now; call get_positions.)"
	}
	i := slices.IndexFunc(book.Positions, func(p deskbot.Position) bool { return p.Symbol == f.Symbol })
	if i < 0 {
		return text + " " + f.Symbol + " is now flat. Realised P&L to date " + Money(book.RealisedPnL) + "."
	}
	return text + " Now " + FormatPosition(book.Positions[i]) + "."
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

// object decodes args as a JSON object of raw fields.
func object(name string, args json.RawMessage) (map[string]json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%s arguments must be a JSON object: %v", name, err)
	}
	return fields, nil
}

var orderArgs = []string{"symbol", "side", "quantity", "price"}

// parseOrder checks the shape of place_order's arguments; NormalizeOrder, in
// the broker, checks the values.
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
	return o, nil
}

// field decodes one argument strictly, as the schema says: a number sent as
// a string is refused rather than guessed at, since it is real money.
func field(fields map[string]json.RawMessage, k string, dst any, want string) error {
	raw := fields[k]
	if err := json.Unmarshal(raw, dst); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		return deskbot.Errorf(deskbot.EINVALID, "%s must be %s, not %s", k, want, truncate(string(raw), 40))
	}
	return nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return fmt.Sprintf("%s…", string(r[:n]))
	}
	return s
}
