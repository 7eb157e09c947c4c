package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
)

// An order's life through the order store, on every backend (and, under
// .ci/cluster, on a Redis Cluster, where each script's keys must share a
// slot): recorded once under its tag, moved only from the version it is
// at, its fills booked once however often they are recorded, kept among
// the open orders until its final version is told, and its position
// closed by a flatten that the journal records.
func TestOrderStoreBooksEachFillOnce(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		at := time.Date(2025, 3, 3, 9, 15, 0, 0, deskbot.IST)
		po := deskbot.PlacedOrder{Tag: "db0123", Desk: "alpha", State: deskbot.OrderPending, At: at, Updated: at,
			Order: deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Price: 1500}}
		record := func(po deskbot.PlacedOrder, version, from string) deskbot.OrderRecorded {
			t.Helper()
			// Told only at the start: the placing call's answer tells it.
			rec, err := s.RecordOrder(ctx, deskbot.OrderChange{Order: po, Version: version, From: from, Told: from == "-", At: at})
			if err != nil {
				t.Fatalf("RecordOrder(%s from %q): %v", version, from, err)
			}
			return rec
		}
		if rec := record(po, "pending", "-"); rec.Existing != nil {
			t.Fatalf("first record found %+v", rec.Existing)
		}
		if rec := record(po, "pending", "-"); rec.Existing == nil || rec.Existing.Tag != po.Tag {
			t.Errorf("second start = %+v; want the order recorded first", rec)
		}
		filled := po
		filled.State, filled.Filled, filled.AvgPrice = deskbot.OrderComplete, 10, 1500
		if rec := record(filled, "complete 10", "open 0"); rec.Existing == nil {
			t.Errorf("a move from a version the order is not at applied: %+v", rec)
		}
		for range 2 { // recorded again: booked once
			if rec := record(filled, "complete 10", ""); rec.Existing != nil {
				t.Fatalf("move = %+v", rec)
			}
		}
		book, err := s.BookPositions(ctx, "alpha")
		if err != nil || len(book) != 1 || book[0].Quantity != 10 || book[0].AvgPrice != 1500 {
			t.Fatalf("book = %+v, %v; want 10 INFY at 1500", book, err)
		}

		open, err := s.OpenOrders(ctx)
		if err != nil || len(open) != 1 || open[0].Told != "pending" {
			t.Fatalf("open orders = %+v, %v; want the final order, not yet told of it", open, err)
		}
		if err := s.OrderTold(ctx, filled, "complete 10"); err != nil {
			t.Fatal(err)
		}
		if has, err := s.HasOpenOrders(ctx); err != nil || has {
			t.Errorf("HasOpenOrders after the final version was told = %v, %v; want false", has, err)
		}
		if got, err := s.LoggedOrder(ctx, "alpha", po.TradingDay(), po.Tag); err != nil || got.State != deskbot.OrderComplete {
			t.Errorf("LoggedOrder = %+v, %v", got, err)
		}

		closed, err := s.FlattenBook(ctx, "alpha", at, map[string]float64{"INFY": 1510})
		if err != nil || len(closed) != 1 || closed[0].Side != deskbot.Sell || closed[0].Quantity != 10 || closed[0].RealisedPnL != 100 {
			t.Fatalf("flatten = %+v, %v; want 10 INFY sold at 1510, +100", closed, err)
		}
		trades, err := s.TradeJournal(ctx, "alpha", 10)
		if err != nil || len(trades) != 2 || trades[1].RealisedPnL != 100 {
			t.Errorf("journal = %+v, %v; want the fill and the close", trades, err)
		}
		if n, err := s.FoldBook(ctx, "alpha"); err != nil || n != 0 {
			t.Errorf("FoldBook = %d, %v; want nothing to fold", n, err)
		}
	})
}
