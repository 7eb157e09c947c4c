package broker

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// gttTools are place_gtt and cancel_gtt over b (Tools appends them).
// place_gtt's arguments are read by deskbot.ParseGTT, the same before the
// gate holds a call and when it runs; whether the GTT only reduces the
// desk's position is checked against its book before it is held (the
// gate's hard limits) and again by the broker when it is placed.
func gttTools(b deskbot.Broker, product func(desk string) string, log *slog.Logger) []deskbot.Tool {
	return []deskbot.Tool{
		&tool{name: deskbot.ToolPlaceGTT, desc: placeGTTDesc, schema: placeGTTSchema,
			check: func(args json.RawMessage) error {
				g, err := deskbot.ParseGTT(args)
				if err != nil {
					return err
				}
				return checkLegs(b, g)
			},
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				g, err := deskbot.ParseGTT(args)
				if err != nil {
					return modelError(err)
				}
				if err := checkLegs(b, g); err != nil {
					return modelError(err)
				}
				key, ok := deskbot.CallKey(ctx)
				if !ok {
					return deskbot.ToolResult{}, ErrNoKey
				}
				pg, err := b.PlaceGTT(ctx, desk, key, g.ForDesk(product(desk)))
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: "Placed: " + words.GTTLine(pg) + ". It stays at the broker until the market reaches a trigger; when it fires, its order reaches you as a message. get_orders lists it; cancel_gtt deletes it."}, nil
			}},
		&tool{name: deskbot.ToolCancelGTT, desc: cancelGTTDesc, schema: cancelGTTSchema,
			check: func(args json.RawMessage) error { _, err := gttID(args); return err },
			run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
				id, err := gttID(args)
				if err != nil {
					return modelError(err)
				}
				pg, err := b.CancelGTT(ctx, desk, id)
				if err != nil {
					return brokerError(err)
				}
				return deskbot.ToolResult{Text: "Deleted: " + words.GTTLine(pg)}, nil
			}},
	}
}

// checkLegs refuses a GTT whose leg orders the broker would refuse (the
// exchange's lots, ticks).
func checkLegs(b deskbot.Broker, g deskbot.GTT) error {
	for _, leg := range g.Legs() {
		o := g.LegOrder(leg)
		o.Product = ""
		if err := b.Check(o); err != nil {
			return err
		}
	}
	return nil
}

// gttID reads cancel_gtt's one argument.
func gttID(args json.RawMessage) (string, error) {
	fields, err := deskbot.ArgumentFields(deskbot.ToolCancelGTT, args)
	if err != nil {
		return "", err
	}
	for k := range fields {
		if k != "gtt_id" {
			return "", deskbot.Errorf(deskbot.EINVALID, "cancel_gtt has no argument %q; it takes gtt_id", k)
		}
	}
	var id string
	if err := json.Unmarshal(fields["gtt_id"], &id); err != nil || id == "" || len(id) > 64 {
		return "", deskbot.Errorf(deskbot.EINVALID, "cancel_gtt needs gtt_id, the GTT's id as a string (get_orders lists them)")
	}
	return id, nil
}

const (
	placeGTTDesc = "Place a GTT (good till triggered) stop at the broker for a position this desk holds: it stays at the broker (up to a year) and fires even when this service is down. " +
		"A single stop-loss (stop_trigger, stop_price) or a pair, one cancelling the other (also target_trigger, target_price); each leg is a LIMIT order at its price, placed once the market reaches its trigger. " +
		"It may only close the desk's position: side sell for a long, buy for a short, quantity at most the position; a long's stop is below the market and its target above, a short's the other way round. " +
		"product is MIS, NRML or CNC (default: this desk's). A flatten deletes the desk's GTTs. May need a person's approval."
	cancelGTTDesc = "Delete one of this desk's own active GTTs, by its id (from place_gtt or get_orders)."
)

var (
	placeGTTSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbol":{"type":"string","description":"EXCHANGE:TRADINGSYMBOL of a position this desk holds, e.g. NSE:INFY"},` +
		`"side":{"type":"string","enum":["buy","sell"],"description":"sell closes a long, buy covers a short"},` +
		`"quantity":{"type":"integer","minimum":1,"description":"Units each leg closes, at most the position"},` +
		`"stop_trigger":{"type":"number","description":"The stop-loss's trigger: below the market for a long, above for a short"},` +
		`"stop_price":{"type":"number","description":"The stop-loss's LIMIT price once triggered"},` +
		`"target_trigger":{"type":"number","description":"Optional target's trigger: above the market for a long, below for a short"},` +
		`"target_price":{"type":"number","description":"The target's LIMIT price once triggered (with target_trigger)"},` +
		`"product":{"type":"string","enum":["MIS","NRML","CNC"],"description":"default this desk's"}},` +
		`"required":["symbol","side","quantity","stop_trigger","stop_price"],"additionalProperties":false}`)
	cancelGTTSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"gtt_id":{"type":"string","description":"The GTT's id, from place_gtt or get_orders"}},` +
		`"required":["gtt_id"],"additionalProperties":false}`)
)
