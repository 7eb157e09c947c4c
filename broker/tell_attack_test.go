package broker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// The store fails (or the process stops) between booking an order's last
// change and telling it: the next Sync tells it, once. A final order is
// not followed any more, so only the log can remember that its desk was
// not told.
func TestPaperFinalChangeNotToldIsToldByTheNextSync(t *testing.T) {
	for _, tc := range []struct {
		name   string
		market float64 // where the market goes
		clock  bool    // the India day ends instead
		want   deskbot.OrderState
	}{
		{"a fill", 1480, false, deskbot.OrderComplete},
		{"the day's end", 1500, true, deskbot.OrderCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustPaperDesk(t)
			d.tape.Set("INFY", 1500)
			po := mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 1, 1490))
			d.tape.Set("INFY", tc.market)
			if tc.clock {
				d.clock.Add(24 * time.Hour)
			}
			d.told.Err = errors.New("store down")
			if _, err := d.Sync(t.Context()); err == nil {
				t.Fatal("Sync with the teller down: no error")
			}
			d.told.Err = nil
			for range 2 {
				mustSync(t, d.Paper)
			}
			var got []string
			for _, tr := range d.told.Told() {
				got = append(got, tr.Text)
			}
			if len(got) != 1 {
				t.Fatalf("told %q, want the order's %s told once", got, tc.want)
			}
			if !tc.clock {
				if o, err := d.Orders(t.Context(), "main"); err != nil || len(o) != 1 || o[0].State != tc.want || o[0].Tag != po.Tag {
					t.Errorf("orders %+v %v, want %s", o, err, tc.want)
				}
			}
		})
	}
}
