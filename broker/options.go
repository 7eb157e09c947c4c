package broker

import (
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
)

// The paper market's options and indices. It lists, on NFO, monthly
// options of its indices (NIFTY on "NIFTY 50", BANKNIFTY on "NIFTY BANK")
// and of every share it prices, written as Kite writes a monthly contract
// ("NFO:NIFTY26DEC24500CE": name, year, month, strike, CE or PE), expiring
// on the month's last Tuesday at the close. An option's price is its
// Black-Scholes value on its underlying's walk price at the same minute,
// so a chain, a quote and a fill of an option all agree with the walk.

// paperIndices are the indices the paper market prices (their walk
// symbols) by the name their options are written with.
var paperIndices = map[string]string{"NIFTY": "NIFTY 50", "BANKNIFTY": "NIFTY BANK"}

// paperLots are the lot sizes of the paper market's options; a share's
// options not named here trade in lots of 1.
var paperLots = map[string]int{"NIFTY": 75, "BANKNIFTY": 35}

// paperExpiries is how many monthly expiries the paper market lists.
const paperExpiries = 3

// optionRate is the paper market's risk-free rate, a year.
const optionRate = 0.065

var optionRe = regexp.MustCompile(`^([A-Z][A-Z&\-]*?)([0-9]{2})(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)([0-9]+(?:\.[0-9]+)?)(CE|PE)$`)

var months = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}

// paperOption is one of the paper market's options, parsed from its
// symbol.
type paperOption struct {
	name   string // NIFTY, RELIANCE
	expiry time.Time
	strike float64
	typ    string // CE or PE
}

// parseOption reads an NFO symbol written as the paper market writes its
// options; ok is false for anything else.
func parseOption(symbol string) (paperOption, bool) {
	ex, ts := deskbot.InstrumentOf(symbol)
	if ex != "NFO" {
		return paperOption{}, false
	}
	m := optionRe.FindStringSubmatch(ts)
	if m == nil {
		return paperOption{}, false
	}
	yy, _ := strconv.Atoi(m[2])
	mon := 0
	for i, s := range months {
		if s == m[3] {
			mon = i + 1
		}
	}
	strike, err := strconv.ParseFloat(m[4], 64)
	if err != nil || !(strike > 0) {
		return paperOption{}, false
	}
	return paperOption{name: m[1], expiry: monthlyExpiry(2000+yy, time.Month(mon)), strike: strike, typ: m[5]}, true
}

// symbol is o's one spelling.
func (o paperOption) symbol() string {
	return deskbot.SymbolOf("NFO", o.name+o.expiry.Format("06")+months[o.expiry.Month()-1]+strconv.FormatFloat(o.strike, 'f', -1, 64)+o.typ)
}

// underlying is the walk symbol o is priced on.
func (o paperOption) underlying() string { return underlyingOf(o.name) }

func underlyingOf(name string) string {
	if s, ok := paperIndices[name]; ok {
		return s
	}
	return name
}

// monthlyExpiry is a month's last Tuesday at 15:30 India time.
func monthlyExpiry(y int, m time.Month) time.Time {
	d := time.Date(y, m+1, 1, 15, 30, 0, 0, deskbot.IST).AddDate(0, 0, -1)
	for d.Weekday() != time.Tuesday {
		d = d.AddDate(0, 0, -1)
	}
	return d
}

// expiriesAt are the monthly expiries listed at t, nearest first.
func expiriesAt(t time.Time) []time.Time {
	t = t.In(deskbot.IST)
	var out []time.Time
	for y, m := t.Year(), t.Month(); len(out) < paperExpiries; m++ {
		if m > 12 {
			y, m = y+1, 1
		}
		if e := monthlyExpiry(y, m); e.After(t) {
			out = append(out, e)
		}
	}
	return out
}

// strikeStep is the distance between listed strikes of name's options
// around price.
func strikeStep(name string, price float64) float64 {
	switch {
	case name == "NIFTY":
		return 50
	case name == "BANKNIFTY":
		return 100
	case price < 250:
		return 2.5
	case price < 1000:
		return 10
	case price < 2500:
		return 20
	case price < 5000:
		return 50
	}
	return 100
}

// optionVol is the paper market's implied volatility, a year.
func optionVol(name string) float64 {
	if _, ok := paperIndices[name]; ok {
		return 0.15
	}
	return 0.25
}

// optionPrice is o's Black-Scholes value at t with its underlying at s,
// rounded to the tick (0.05) and never below it; at and after expiry its
// intrinsic value.
func optionPrice(o paperOption, s float64, t time.Time) float64 {
	years := o.expiry.Sub(t).Hours() / (365 * 24)
	var v float64
	if years <= 0 {
		v = s - o.strike
		if o.typ == deskbot.InstrumentPE {
			v = -v
		}
		v = max(v, 0)
	} else {
		sig := optionVol(o.name)
		d1 := (math.Log(s/o.strike) + (optionRate+sig*sig/2)*years) / (sig * math.Sqrt(years))
		d2 := d1 - sig*math.Sqrt(years)
		disc := o.strike * math.Exp(-optionRate*years)
		if o.typ == deskbot.InstrumentCE {
			v = s*normCDF(d1) - disc*normCDF(d2)
		} else {
			v = disc*normCDF(-d2) - s*normCDF(-d1)
		}
	}
	return max(deskbot.RoundPaise(math.Round(v/0.05)*0.05), 0.05)
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
