package broker

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Tools returns the broker tools over b: get_positions, place_order and
// flatten_desk, in that order. A model's mistake (bad JSON, a missing,
// repeated or unknown argument, an invalid order) is a ToolResult with
// IsError; a broker failure is an error. Every tool checks its
// arguments (deskbot.Tool's CheckArguments): the same checks refuse a call
// before the gate holds it, so an approver is never asked about a call that would fail or
// run as something other than it reads, and again when it runs. log (nil
// discards) gets what the model is not told.
func Tools(b deskbot.Broker, log *slog.Logger) []deskbot.Tool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return []deskbot.Tool{
		&tool{name: deskbot.ToolGetPositions, desc: getPositionsDesc, schema: noArgsSchema,
			check: func(args json.RawMessage) error { return noArgs(deskbot.ToolGetPositions, args) },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				book, err := b.Book(ctx, desk)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: words.FormatBook(book)}, nil
			}},
		&tool{name: deskbot.ToolPlaceOrder, desc: placeOrderDesc, schema: placeOrderSchema,
			check: func(args json.RawMessage) error {
				o, err := deskbot.ParseOrder(args)
				if err != nil {
					return err
				}
				return b.Check(o)
			},
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				o, err := deskbot.ParseOrder(args)
				if err != nil {
					return modelError(err)
				}
				key, _ := deskbot.CallKey(ctx)
				po, err := b.PlaceOrder(ctx, desk, key, o)
				if err != nil {
					return brokerError(err)
				}
				fill := deskbot.Fill{Order: po.Order}
				fill.Price = po.AvgPrice
				return deskbot.ToolResult{Text: fillText(ctx, log, b, desk, fill)}, nil
			}},
		&tool{name: deskbot.ToolFlattenDesk, desc: flattenDesc, schema: noArgsSchema,
			check: func(args json.RawMessage) error { return noArgs(deskbot.ToolFlattenDesk, args) },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				key, _ := deskbot.CallKey(ctx)
				r, err := b.Flatten(ctx, desk, key)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: words.FormatFlatten(r)}, nil
			}},
	}
}

const (
	getPositionsDesc = "Show this desk's paper-trading book: one line per open position " +
		"(long or short, quantity, average price, last price, unrealised P&L), then totals " +
		"with the P&L realised so far. Takes no arguments."
	placeOrderDesc = "Place a paper order. The price you give is a limit: a buy fills at once and completely at the market's price if that is at or below it, a sell if it is at or above it; otherwise nothing is placed and you are told where the market is (orders do not rest). " +
		"\"buy\" adds to a long or reduces a short; \"sell\" reduces a long or opens or adds to a short. " +
		"Trading through zero closes the old side and opens the rest at the fill price. " +
		"The symbol must be spelled exactly as the exchange writes it, in upper case (RELIANCE, M&M, BAJAJ-AUTO); " +
		"any other spelling is refused, never corrected. Returns the fill, the P&L it realised and the symbol's new position."
	flattenDesc = "Close every open position of this desk at the market's price and report " +
		"each closing fill and the P&L realised. Takes no arguments. May need a person's approval."
)

var (
	noArgsSchema     = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	placeOrderSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbol":{"type":"string","pattern":"^((` + strings.Join(deskbot.Exchanges, "|") + `):)?[A-Z0-9][A-Z0-9&._/-]{0,31}$","description":"Instrument symbol in upper case, e.g. RELIANCE, or with its exchange, e.g. NSE:RELIANCE"},` +
		`"side":{"type":"string","enum":["buy","sell"],"description":"buy or sell"},` +
		`"quantity":{"type":"number","description":"Units to trade, greater than 0"},` +
		`"price":{"type":"number","description":"Limit price per unit, greater than 0: the most a buy pays, the least a sell takes"}},` +
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

var _ deskbot.Tool = (*tool)(nil)

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
	text := "Filled: " + words.FormatFill(f) + "."
	book, err := b.Book(ctx, desk)
	if err != nil {
		log.WarnContext(ctx, "broker: read book after fill", "desk", desk, "err", err)
		return text + " (Position unavailable just now; call get_positions.)"
	}
	i := slices.IndexFunc(book.Positions, func(p deskbot.Position) bool { return p.Symbol == f.Symbol })
	if i < 0 {
		return text + " " + f.Symbol + " is now flat. Realised P&L to date " + words.Money(book.RealisedPnL) + "."
	}
	return text + " Now " + words.FormatPosition(book.Positions[i]) + "."
}

// noArgs accepts {}, null or nothing.
func noArgs(name string, args json.RawMessage) error {
	fields, err := deskbot.ArgumentFields(name, args)
	if err != nil {
		return err
	}
	for k := range fields {
		return deskbot.Errorf(deskbot.EINVALID, "%s takes no arguments; remove %q and call it with {}", name, k)
	}
	return nil
}
