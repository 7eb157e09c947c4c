package exchange

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"
	"github.com/zerodha/gokiteconnect/v4/models"

	"github.com/deskbot/deskbot"
)

// syntheticRows are n NFO-like rows shaped as Kite's: options of a few
// dozen underlyings across weekly expiries and strikes, named as Kite names
// them ("NIFTY26D0824500CE"), plus some futures.
func syntheticRows(n int) []kiteconnect.Instrument {
	underlyings := []string{"NIFTY", "BANKNIFTY", "FINNIFTY", "MIDCPNIFTY", "RELIANCE", "INFY", "TCS", "HDFCBANK",
		"ICICIBANK", "SBIN", "AXISBANK", "KOTAKBANK", "LT", "ITC", "HINDUNILVR", "BAJFINANCE", "MARUTI", "TATAMOTORS",
		"TATASTEEL", "SUNPHARMA", "WIPRO", "HCLTECH", "ONGC", "NTPC", "POWERGRID", "ADANIENT", "M&M", "BAJAJ-AUTO"}
	rows := make([]kiteconnect.Instrument, 0, n)
	ist := time.FixedZone("+0530", 5*3600+30*60)
	for i := 0; len(rows) < n; i++ {
		und := underlyings[i%len(underlyings)]
		week := i / len(underlyings) % 12
		exp := time.Date(2026, 12, 3+7*week, 0, 0, 0, 0, ist)
		strike := 1000 + 50*(i/(len(underlyings)*12))
		typ, seg := "CE", "NFO-OPT"
		if i%2 == 1 {
			typ = "PE"
		}
		sym := und + exp.Format("06") + strconv.Itoa(int(exp.Month())) + exp.Format("02") + strconv.Itoa(strike) + typ
		if i%97 == 0 {
			typ, seg = "FUT", "NFO-FUT"
			sym = und + exp.Format("06Jan") + strconv.Itoa(i) + "FUT"
		}
		rows = append(rows, kiteconnect.Instrument{
			InstrumentToken: 10_000_000 + i*256 + 2, ExchangeToken: 40_000 + i, Tradingsymbol: sym, Name: und,
			LastPrice: 100.5, Expiry: models.Time{Time: exp}, StrikePrice: float64(strike), TickSize: 0.05,
			LotSize: float64(25 + 25*(i%4)), InstrumentType: typ, Segment: seg, Exchange: "NFO",
		})
	}
	return rows
}

// keptCSVBytes is the floor: the bytes of the CSV fields a check keeps
// (exchange, tradingsymbol, instrument_token, lot_size, tick_size, expiry,
// instrument_type, segment) as text in Kite's dump, per row.
func keptCSVBytes(rows []kiteconnect.Instrument) float64 {
	n := 0
	for _, r := range rows {
		n += len(r.Exchange) + len(r.Tradingsymbol) + len(strconv.Itoa(r.InstrumentToken)) +
			len(strconv.FormatFloat(r.LotSize, 'f', -1, 64)) + len(strconv.FormatFloat(r.TickSize, 'f', -1, 64)) +
			len(r.InstrumentType) + len(r.Segment)
		if !r.Expiry.IsZero() {
			n += len("2006-01-02")
		}
	}
	return float64(n) / float64(len(rows))
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkInstrumentsMemory builds the list from 100,000 rows (more than
// NFO's ~90,000) and reports what the built list keeps per instrument, by
// the heap and by its own count, against the floor of the CSV text kept
// and a plain map of Instrument values for comparison.
func BenchmarkInstrumentsMemory(b *testing.B) {
	const n = 100_000
	rows := syntheticRows(n)

	before := heapAlloc()
	ins := FromKite(rows)
	heap := heapAlloc() - before
	runtime.KeepAlive(ins)

	before = heapAlloc()
	naive := make(map[string]Instrument)
	for _, r := range rows {
		naive[r.Exchange+":"+r.Tradingsymbol] = Instrument{Exchange: r.Exchange, Tradingsymbol: r.Tradingsymbol,
			Token: uint32(r.InstrumentToken), LotSize: int(r.LotSize), TickSize: r.TickSize, Expiry: DateOf(r.Expiry.Time),
			Type: r.InstrumentType, Segment: r.Segment}
	}
	naiveHeap := heapAlloc() - before
	runtime.KeepAlive(naive)
	runtime.KeepAlive(rows)

	b.ResetTimer()
	for b.Loop() {
		ins = FromKite(rows)
	}
	b.ReportMetric(float64(heap)/n, "heap-B/instrument")
	b.ReportMetric(float64(ins.Bytes())/n, "counted-B/instrument")
	b.ReportMetric(keptCSVBytes(rows), "floor-csv-B/instrument")
	b.ReportMetric(float64(naiveHeap)/n, "map-B/instrument")
}

func BenchmarkLookup(b *testing.B) {
	rows := syntheticRows(100_000)
	ins := FromKite(rows)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = rows[(i*7919)%len(rows)].Tradingsymbol
	}
	i := 0
	for b.Loop() {
		if _, ok := ins.Lookup("NFO", keys[i%len(keys)]); !ok {
			b.Fatal("not found")
		}
		i++
	}
}

func BenchmarkCheck(b *testing.B) {
	rows := syntheticRows(100_000)
	cal, err := ParseCalendar("", "2026-12-25")
	if err != nil {
		b.Fatal(err)
	}
	m := Market{Calendar: cal, Instruments: FromKite(rows)}
	r := rows[12345]
	o := Order{Exchange: r.Exchange, Tradingsymbol: r.Tradingsymbol, Quantity: r.LotSize * 2, Price: 100.5}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, deskbot.IST)
	for b.Loop() {
		if err := m.Check(o, now); err != nil {
			b.Fatal(err)
		}
	}
}
