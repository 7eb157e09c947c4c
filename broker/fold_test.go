package broker_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot/broker"
)

// Books kept before a bare symbol meant NSE (BROKER=paper-kite booked
// "NSE:INFY") are folded into the one spelling at the start: a position
// kept under both spellings becomes one, as the old one's fill at its
// average would make it, realised P&L kept; other exchanges stay; folding
// again changes nothing.
func TestFoldBooksMakesOnePositionOfTwoSpellings(t *testing.T) {
	st := mustStore(t)
	book := st.Key("broker", "book", "alpha")
	if err := st.Client().HSet(t.Context(), book,
		"NSE:INFY", "10 1500 1510 0", "INFY", "5 1490 1512 20", // both long: one long of 15
		"NSE:SBIN", "10 500 505 0", "SBIN", "-4 510 505 0", // opposite: 4 closed, long 6 at 500
		"NSE:TCS", "-3 3000 2990 7", // only the old spelling
		"NFO:NIFTY25DECFUT", "75 24000 24010 0", // another exchange
	).Err(); err != nil {
		t.Fatal(err)
	}
	orders := broker.NewOrderLog(st, time.Now, nil, nil)
	n, err := orders.FoldBooks(t.Context(), []string{"alpha", "beta"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("folded %d positions, want 3", n)
	}
	got, err := st.Client().HGetAll(t.Context(), book).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"INFY":              "15 1496.6666666666667 1512 20",
		"SBIN":              "6 500 505 40",
		"TCS":               "-3 3000 2990 7",
		"NFO:NIFTY25DECFUT": "75 24000 24010 0",
	}
	if len(got) != len(want) {
		t.Errorf("book after the fold: %v, want %v", got, want)
	}
	for sym, v := range want {
		if got[sym] != v {
			t.Errorf("%s = %q, want %q", sym, got[sym], v)
		}
	}
	if n, err := orders.FoldBooks(t.Context(), []string{"alpha"}); err != nil || n != 0 {
		t.Errorf("folding again: %d, %v; want 0, nil", n, err)
	}
}
