package exchange

import "testing"

// A price a model may send (15 significant digits pass ParseOrder) that is
// off the tick by a ten-billionth of a rupee is not on the tick: sent to
// Kite as written it is refused there, after an approver read it.
func TestPriceJustOffTheTickIsRefused(t *testing.T) {
	m := mustMarket(t, "", "")
	open := ist(2026, 12, 4, 10, 0, 0)
	for _, p := range []float64{1600.0000000001, 1500.00000000005, 24500.0000000001, 9999.99999999999} {
		sym := "INFY"
		ex := "NSE"
		if p > 20000 {
			sym, ex = "NIFTY26DECFUT", "NFO"
		}
		q := 1.0
		if ex == "NFO" {
			q = 75
		}
		if err := m.Check(Order{Exchange: ex, Tradingsymbol: sym, Quantity: q, Price: p}, open); err == nil {
			t.Errorf("price %v passes as on the tick 0.05", num(p))
		}
	}
}

// Binary noise of a decimal price on the tick is still not a refusal.
func TestPriceNoiseStillPasses(t *testing.T) {
	m := mustMarket(t, "", "")
	open := ist(2026, 12, 4, 10, 0, 0)
	for _, p := range []float64{0.1 + 0.2 + 1499.7, 1500.05, 1499.95, 2451.35, 1234.55 * 1, 999.95, 0.05, 0.15} {
		if err := m.Check(Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, Price: p}, open); err != nil {
			t.Errorf("price %v: %v", p, err)
		}
	}
}
