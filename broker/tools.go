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

// Tools returns the broker tools over b: get_positions, place_order,
// get_orders, cancel_order, flatten_desk, modify_order, place_gtt and
// cancel_gtt, in that order (the last two in gtttools.go). A model's
// mistake (bad JSON, a missing, repeated or unknown argument, an invalid
// order) is a ToolResult with IsError; a broker failure is an error. Every
// tool checks its arguments (deskbot.Tool's CheckArguments): the same
// checks refuse a call before the gate holds it, so an approver is never
// asked about a call that would fail or run as something other than it
// reads, and again when it runs. An order names its product or takes the
// desk's (product, e.g. Policies.Product). Orders and flattens are placed
// under the call's key (deskbot.CallKey): a call that comes without one
// trades nothing. log (nil discards) gets what the model is not told.
func Tools(b deskbot.Broker, product func(desk string) string, log *slog.Logger) []deskbot.Tool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if product == nil {
		product = func(string) string { return deskbot.ProductMIS }
	}
	return append([]deskbot.Tool{
		&tool{name: deskbot.ToolGetPositions, desc: getPositionsDesc, schema: noArgsSchema,
			check: func(args json.RawMessage) error { return noArgs(deskbot.ToolGetPositions, args) },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				if err := noArgs(deskbot.ToolGetPositions, args); err != nil {
					return modelError(err)
				}
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
				if err := b.Check(o); err != nil {
					return modelError(err)
				}
				key, ok := deskbot.CallKey(ctx)
				if !ok {
					return deskbot.ToolResult{}, ErrNoKey
				}
				po, err := b.PlaceOrder(ctx, desk, key, o.ForDesk(product(desk)))
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: placedText(ctx, log, b, desk, po)}, nil
			}},
		&tool{name: deskbot.ToolGetOrders, desc: getOrdersDesc, schema: noArgsSchema,
			check: func(args json.RawMessage) error { return noArgs(deskbot.ToolGetOrders, args) },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				if err := noArgs(deskbot.ToolGetOrders, args); err != nil {
					return modelError(err)
				}
				orders, err := b.Orders(ctx, desk)
				if err != nil {
					return brokerError(err)
				}
				gtts, err := b.GTTs(ctx, desk)
				if err != nil {
					return brokerError(err)
				}
				var lines []string
				for _, po := range orders {
					lines = append(lines, words.PlacedLine(po))
				}
				if len(lines) == 0 {
					lines = append(lines, "No orders today.")
				}
				for _, g := range gtts {
					lines = append(lines, words.GTTLine(g))
				}
				return deskbot.ToolResult{Text: strings.Join(lines, "\n")}, nil
			}},
		&tool{name: deskbot.ToolCancelOrder, desc: cancelOrderDesc, schema: cancelOrderSchema,
			check: func(args json.RawMessage) error { _, err := orderID(args); return err },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				id, err := orderID(args)
				if err != nil {
					return modelError(err)
				}
				po, err := b.CancelOrder(ctx, desk, id)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: "Cancelled: " + words.PlacedLine(po)}, nil
			}},
		&tool{name: deskbot.ToolFlattenDesk, desc: flattenDesc, schema: noArgsSchema,
			check: func(args json.RawMessage) error { return noArgs(deskbot.ToolFlattenDesk, args) },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				if err := noArgs(deskbot.ToolFlattenDesk, args); err != nil {
					return modelError(err)
				}
				key, ok := deskbot.CallKey(ctx)
				if !ok {
					return deskbot.ToolResult{}, ErrNoKey
				}
				r, err := b.Flatten(ctx, desk, key)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: words.FormatFlatten(r)}, nil
			}},
		modifyTool(b),
	}, gttTools(b, product, log)...)
}

const (
	getPositionsDesc = "Show this desk's book: one line per open position " +
		"(long or short, quantity, average price, last price, unrealised P&L), then totals " +
		"with the P&L realised so far. Positions come from this desk's own orders' fills. Takes no arguments."
	placeOrderDesc = "Place an order at the broker. symbol is EXCHANGE:TRADINGSYMBOL (NSE:INFY, NFO:NIFTY25DECFUT; a bare symbol means NSE), spelled exactly as the exchange writes it, in upper case; " +
		"any other spelling is refused, never corrected. side is buy or sell; quantity a whole number (a multiple of the lot size for F&O). " +
		"order_type is MARKET, LIMIT, SL or SL-M (default LIMIT when you give a price, else MARKET): a LIMIT order fills at its price or better and otherwise rests open; " +
		"SL and SL-M need a trigger_price and start to trade once the market reaches it. product is MIS (intraday), NRML or CNC (default: this desk's). " +
		"variety is regular, or amo outside market hours. Returns the order's id and state: it may fill at once, rest open, or be rejected with the broker's reason; " +
		"later fills and rejections reach you as messages. \"buy\" adds to a long or reduces a short; \"sell\" reduces a long or opens or adds to a short."
	getOrdersDesc   = "List this desk's orders today: id, the order, its state (open, partly filled, complete, rejected, cancelled), filled quantity, average price and the broker's reason; then its GTTs with their state (active, triggered, deleted, expired, rejected). Takes no arguments."
	cancelOrderDesc = "Cancel one of this desk's own open orders, by its order id (from place_order or get_orders). May need a person's approval."
	flattenDesc     = "Cancel this desk's open orders, then close every open position of this desk with market orders, and report " +
		"what was cancelled and closed. Takes no arguments. May need a person's approval."
)

var (
	noArgsSchema     = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	placeOrderSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbol":{"type":"string","pattern":"^((` + strings.Join(deskbot.Exchanges, "|") + `):)?[A-Z0-9][A-Z0-9&._/-]{0,31}$","description":"EXCHANGE:TRADINGSYMBOL in upper case, e.g. NSE:INFY or NFO:NIFTY25DECFUT; a bare symbol means NSE"},` +
		`"side":{"type":"string","enum":["buy","sell"],"description":"buy or sell"},` +
		`"quantity":{"type":"integer","minimum":1,"description":"Units to trade, a whole number (a multiple of the lot size)"},` +
		`"order_type":{"type":"string","enum":["MARKET","LIMIT","SL","SL-M"],"description":"Default LIMIT when a price is given, else MARKET"},` +
		`"price":{"type":"number","description":"LIMIT and SL only: the limit price, a multiple of the tick: the most a buy pays, the least a sell takes"},` +
		`"trigger_price":{"type":"number","description":"SL and SL-M only: the price at which the order starts to trade"},` +
		`"product":{"type":"string","enum":["MIS","NRML","CNC"],"description":"MIS intraday, NRML carried F&O, CNC cash delivery; default this desk's"},` +
		`"variety":{"type":"string","enum":["regular","amo"],"description":"regular, or amo (after market) outside market hours"}},` +
		`"required":["symbol","side","quantity"],"additionalProperties":false}`)
	cancelOrderSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"order_id":{"type":"string","description":"The order's id, from place_order or get_orders"}},` +
		`"required":["order_id"],"additionalProperties":false}`)
)

// orderID reads cancel_order's one argument.
func orderID(args json.RawMessage) (string, error) {
	fields, err := deskbot.ArgumentFields(deskbot.ToolCancelOrder, args)
	if err != nil {
		return "", err
	}
	for k := range fields {
		if k != "order_id" {
			return "", deskbot.Errorf(deskbot.EINVALID, "cancel_order has no argument %q; it takes order_id", k)
		}
	}
	var id string
	if err := json.Unmarshal(fields["order_id"], &id); err != nil || id == "" || len(id) > 64 {
		return "", deskbot.Errorf(deskbot.EINVALID, "cancel_order needs order_id, the order's id as a string (get_orders lists them)")
	}
	return id, nil
}

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

// Run runs the call; each tool's run checks its arguments as it reads
// them (its check's rules), so an order is parsed once as it runs.
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

// placedText reports the placed order as it stands and, once it filled,
// for the model's convenience, the symbol's position after it. The order is
// placed, so a failure to read the book must not turn into an error: the
// caller could take it for a failed order and place it again.
func placedText(ctx context.Context, log *slog.Logger, b deskbot.Broker, desk string, po deskbot.PlacedOrder) string {
	var text string
	switch po.State {
	case deskbot.OrderComplete:
		text = "Filled: " + words.PlacedLine(po) + "."
	case deskbot.OrderRejected, deskbot.OrderCancelled, deskbot.OrderNotPlaced:
		return "Not filled: " + words.PlacedLine(po) + "."
	default:
		text = "Placed: " + words.PlacedLine(po) + ". It rests at the broker; its fills reach you as messages, and get_orders shows it."
	}
	if po.Filled == 0 {
		return text
	}
	book, err := b.Book(ctx, desk)
	if err != nil {
		log.WarnContext(ctx, "broker: read book after fill", "desk", desk, "err", err)
		return text + " (Position unavailable just now; call get_positions.)"
	}
	sym := po.Order.Symbol
	i := slices.IndexFunc(book.Positions, func(p deskbot.Position) bool { return p.Symbol == sym })
	if i < 0 {
		return text + " " + sym + " is now flat. Realised P&L to date " + words.Money(book.RealisedPnL) + "."
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
