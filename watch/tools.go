package watch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Tools are watch_price and cancel_watch over store, the symbols checked
// against market (a symbol it does not list is refused), each desk capped
// at max watches (MAX_WATCHES). changed (nil: none) is told of every watch
// set or cancelled (Evaluator.Changed). A watch is always the calling
// desk's: no argument names a desk.
//
// A level the market has already crossed is refused with words, not fired
// at once: a watch is for a crossing still to come, and a desk that set it
// by mistake would otherwise be woken at once, set it again, and loop.
func Tools(store deskbot.WatchStore, market deskbot.Market, max int, changed func(), now deskbot.Now) []deskbot.Tool {
	if max <= 0 {
		max = deskbot.DefaultMaxWatches
	}
	if changed == nil {
		changed = func() {}
	}
	if now == nil {
		now = time.Now
	}
	return []deskbot.Tool{
		&tool{name: deskbot.ToolWatchPrice, desc: watchDesc, schema: watchSchema,
			check: func(args json.RawMessage) error { _, err := parseWatch(args); return err },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				a, err := parseWatch(args)
				if err != nil {
					return modelError(err)
				}
				in, err := market.Instrument(ctx, a.Symbol)
				if err != nil {
					if deskbot.ErrorCode(err) == deskbot.EINVALID {
						return modelError(deskbot.Errorf(deskbot.EINVALID, "Cannot watch %s: the market does not list it (%s). Give the symbol as EXCHANGE:TRADINGSYMBOL, spelled as the exchange writes it.", a.Symbol, deskbot.ErrorMessage(err)))
					}
					return deskbot.ToolResult{}, err
				}
				w := deskbot.Watch{Desk: desk, Symbol: in.Symbol, Direction: a.Direction, Level: a.Level, Note: words.WatchNote(a.Note), CreatedAt: now()}
				w.ID = watchID(w)
				if p, ok, err := market.LastPrice(ctx, w.Symbol); err == nil && ok && w.Crossed(p.Value) {
					return modelError(deskbot.Errorf(deskbot.EINVALID, "%s", words.WatchAlreadyCrossed(w, p)))
				}
				if err := store.AddWatch(ctx, w, max); err != nil {
					if deskbot.ErrorCode(err) == deskbot.ECONFLICT {
						return modelError(err)
					}
					return deskbot.ToolResult{}, err
				}
				changed()
				ws, _ := store.Watches(ctx, desk)
				return deskbot.ToolResult{Text: words.WatchSet(w, len(ws), max)}, nil
			}},
		&tool{name: deskbot.ToolCancelWatch, desc: cancelDesc, schema: cancelSchema,
			check: func(args json.RawMessage) error { _, err := parseCancel(args); return err },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				id, err := parseCancel(args)
				if err != nil {
					return modelError(err)
				}
				w, err := store.CancelWatch(ctx, desk, id)
				if err != nil {
					if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
						return modelError(err)
					}
					return deskbot.ToolResult{}, err
				}
				changed()
				return deskbot.ToolResult{Text: words.WatchCancelled(w)}, nil
			}},
	}
}

// watchID names a watch by what it watches: the desk, the symbol, the
// direction, the level and the note. The same watch asked for again is the
// same watch, kept once: a turn that ran watch_price and was cut short (a
// crash, a kill -9) before the call was remembered runs again, and its
// model, asked afresh, sets it again under a new call id; a second watch
// would wake the desk twice for one crossing.
func watchID(w deskbot.Watch) string {
	h := sha256.Sum256([]byte(strings.Join([]string{w.Desk, w.Symbol, w.Direction, strconv.FormatFloat(w.Level, 'g', -1, 64), w.Note}, "\x00")))
	return "w" + hex.EncodeToString(h[:])[:10]
}

const (
	watchDesc = "Be woken when the market crosses a price: symbol (EXCHANGE:TRADINGSYMBOL, as place_order takes it), direction \"above\" or \"below\", " +
		"level (the price), and an optional note (up to 200 characters) that you are given back when it fires. The watch fires once, as a message in your inbox " +
		"with the price and your note, and is then gone; it lasts across restarts until it fires or you cancel it. A level the market has already crossed is refused. " +
		"Returns the watch's id. Use it instead of polling prices in a loop."
	cancelDesc = "Cancel one of this desk's price watches by its id (from watch_price, or listed in /desk)."
)

var (
	watchSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbol":{"type":"string","description":"EXCHANGE:TRADINGSYMBOL, e.g. NSE:INFY"},` +
		`"direction":{"type":"string","enum":["above","below"]},` +
		`"level":{"type":"number","exclusiveMinimum":0},` +
		`"note":{"type":"string","maxLength":200}},` +
		`"required":["symbol","direction","level"],"additionalProperties":false}`)
	cancelSchema = json.RawMessage(`{"type":"object","properties":{"watch_id":{"type":"string"}},"required":["watch_id"],"additionalProperties":false}`)
)

type watchArgs struct {
	Symbol    string  `json:"symbol"`
	Direction string  `json:"direction"`
	Level     float64 `json:"level"`
	Note      string  `json:"note"`
}

func parseWatch(args json.RawMessage) (watchArgs, error) {
	var a watchArgs
	if err := strict(args, &a); err != nil {
		return a, deskbot.Errorf(deskbot.EINVALID, "watch_price takes {\"symbol\", \"direction\", \"level\", \"note\"}: %v", err)
	}
	switch {
	case a.Symbol == "" || len(a.Symbol) > 64 || strings.ToUpper(a.Symbol) != a.Symbol || strings.ContainsFunc(a.Symbol, func(r rune) bool { return r < '!' && r != ' ' || r > '~' }):
		return a, deskbot.Errorf(deskbot.EINVALID, "watch_price: symbol must be EXCHANGE:TRADINGSYMBOL in upper case, as the exchange writes it (NSE:INFY)")
	case a.Direction != deskbot.WatchAbove && a.Direction != deskbot.WatchBelow:
		return a, deskbot.Errorf(deskbot.EINVALID, "watch_price: direction must be \"above\" or \"below\"")
	case !(a.Level > 0) || math.IsInf(a.Level, 0):
		return a, deskbot.Errorf(deskbot.EINVALID, "watch_price: level must be a price above 0")
	}
	return a, nil
}

func parseCancel(args json.RawMessage) (string, error) {
	var a struct {
		ID string `json:"watch_id"`
	}
	if err := strict(args, &a); err != nil || a.ID == "" || len(a.ID) > 64 {
		return "", deskbot.Errorf(deskbot.EINVALID, "cancel_watch takes {\"watch_id\": \"<id from watch_price>\"}")
	}
	return a.ID, nil
}

// strict decodes one JSON object with no unknown or trailing fields.
func strict(args json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return deskbot.Errorf(deskbot.EINVALID, "more than one JSON value")
	}
	return nil
}

func modelError(err error) (deskbot.ToolResult, error) {
	return deskbot.ToolResult{Text: deskbot.ErrorMessage(err), IsError: true}, nil
}

// tool is one of the watch tools.
type tool struct {
	name, desc string
	schema     json.RawMessage
	check      func(json.RawMessage) error
	run        func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error)
}

var _ deskbot.Tool = (*tool)(nil)

func (t *tool) Name() string                              { return t.name }
func (t *tool) Description() string                       { return t.desc }
func (t *tool) Schema() json.RawMessage                   { return t.schema }
func (t *tool) CheckArguments(args json.RawMessage) error { return t.check(args) }
func (t *tool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	return t.run(ctx, desk, args)
}
