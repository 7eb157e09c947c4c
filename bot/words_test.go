package bot

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

func TestTradingWords(t *testing.T) {
	t.Parallel()
	book := &deskbot.Book{RealisedPnL: 40, Positions: []deskbot.Position{
		{Symbol: "RELIANCE", Quantity: 6, AvgPrice: 100, LastPrice: 110},
		{Symbol: "NIFTY24DECFUT", Quantity: -20, AvgPrice: 24500, LastPrice: 24512.5},
	}}
	tests := []struct {
		name, tool, args string
		book             *deskbot.Book
		want, not        []string
	}{
		{"order with the book", "place_order", `{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`, book,
			[]string{"SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50\nNotional ₹12,25,625.00\nPosition after: short 70\nDesk P&L: realised +₹40.00, open -₹190.00\n"}, nil},
		{"order without the book", "place_order", `{"symbol":"RELIANCE","side":"buy","quantity":10,"price":100}`, nil,
			[]string{"BUY 10 RELIANCE LIMIT @ 100.00\nNotional ₹1,000.00\n"}, []string{"Position after", "P&L"}},
		{"flatten lists what it closes", "flatten_desk", `{}`, book,
			[]string{"Would close 2:\n• SELL 6 RELIANCE MARKET (closes long 6 at about ₹110.00, open +₹60.00)\n• BUY 20 NIFTY24DECFUT MARKET (closes short 20 at about ₹24,512.50, open -₹250.00)\nDesk P&L: realised +₹40.00, open -₹190.00\n"}, nil},
		{"flatten of nothing", "flatten_desk", `{}`, &deskbot.Book{RealisedPnL: -12.5},
			[]string{"Would close nothing: the desk has no open positions.\nDesk P&L: realised -₹12.50, open +₹0.00\n"}, nil},
		{"flatten without the book", "flatten_desk", `{}`, nil, []string{"Closes every open position of the desk"}, nil},
		// Arguments the words could misstate get none: the call is what runs.
		{"repeated key", "place_order", `{"symbol":"INFY","side":"buy","side":"sell","quantity":1,"price":1}`, book, nil, []string{"BUY", "SELL", "Notional"}},
		{"unknown key", "place_order", `{"symbol":"INFY","side":"buy","quantity":1,"price":1,"note":"x"}`, book, nil, []string{"BUY", "Notional"}},
		{"price the words would round", "place_order", `{"symbol":"INFY","side":"buy","quantity":1,"price":1500.500001}`, book, nil, []string{"BUY", "Notional"}},
		{"number as a string", "place_order", `{"symbol":"INFY","side":"buy","quantity":"10","price":1}`, book, nil, []string{"BUY", "Notional"}},
		{"negative quantity", "place_order", `{"symbol":"INFY","side":"buy","quantity":-10,"price":1}`, book, nil, []string{"BUY", "Notional"}},
		{"unknown side", "place_order", `{"symbol":"INFY","side":"short","quantity":10,"price":1}`, book, nil, []string{"SHORT", "Notional"}},
		{"other tools", "bash", `{"command":"ls"}`, book, nil, []string{"Notional", "P&L"}},
		{"a symbol with markup is escaped", "place_order", `{"symbol":"M&M","side":"buy","quantity":1,"price":1}`, nil, []string{"BUY 1 M&M LIMIT @ 1.00"}, nil},
		// The words read the order as the broker does (deskbot.ParseOrder):
		// a symbol the broker would refuse gets no words, only the call.
		{"a symbol the broker refuses", "place_order", `{"symbol":"M&M<b>","side":"buy","quantity":1,"price":1}`, book, nil, []string{"BUY", "Notional"}},
	}
	for _, tt := range tests {
		r := heldRequest()
		r.Content.ToolName, r.Content.Arguments = tt.tool, json.RawMessage(tt.args)
		text, kb := RenderRequest(r, words.Live{Book: tt.book})
		plain := mustPlain(t, text, MaxMessage)
		if len(kb.InlineKeyboard[0]) != 3 {
			t.Errorf("%s: %d buttons, want 3", tt.name, len(kb.InlineKeyboard[0]))
		}
		for _, w := range tt.want {
			if !strings.Contains(plain, w) {
				t.Errorf("%s: request reads %q; missing %q", tt.name, plain, w)
			}
		}
		head, _, _ := strings.Cut(text, "<pre>")
		for _, w := range tt.not {
			if strings.Contains(head, w) {
				t.Errorf("%s: request reads %q above the call; want no %q", tt.name, head, w)
			}
		}
		switch args := argtext.Arguments(r.Content.Arguments); {
		case noArguments(args):
			if !strings.Contains(plain, tt.tool+" with no arguments\n") || strings.Contains(plain, "{}") {
				t.Errorf("%s: a call with no arguments reads %q; want it said, with no empty {}", tt.name, plain)
			}
		case !strings.Contains(text, esc(args)):
			t.Errorf("%s: the call is not shown whole beneath the words: %q", tt.name, text)
		}
	}
}

// A flatten of a book too long for the message keeps the call whole and
// its buttons, with as many lines of the plan as fit.
func TestTradingWordsGiveWayToTheCall(t *testing.T) {
	t.Parallel()
	book := &deskbot.Book{}
	for i := range 400 {
		book.Positions = append(book.Positions, deskbot.Position{Symbol: fmt.Sprintf("SYM%03d", i), Quantity: 1, AvgPrice: 1, LastPrice: 2})
	}
	r := heldRequest()
	r.Content.ToolName, r.Content.Arguments = "flatten_desk", json.RawMessage(`{}`)
	text, kb := RenderRequest(r, words.Live{Book: book})
	plain := mustPlain(t, text, MaxMessage-outcomeRoom+100)
	if !strings.Contains(plain, "SYM000") || strings.Contains(plain, "SYM399") || !strings.Contains(plain, "\n…\n") {
		t.Errorf("a long plan is not cut with a mark: %q", plain)
	}
	if len(kb.InlineKeyboard[0]) != 3 || !shownWhole(r) {
		t.Errorf("a long plan took Allow away")
	}
	r.State, r.Decision = deskbot.StateRan, deskbot.AllowOnce
	mustPlain(t, RenderOutcome(r), MaxMessage)
}

func TestRequestSummary(t *testing.T) {
	t.Parallel()
	tests := []struct{ tool, args, want string }{
		{"place_order", `{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`, "<b>alpha</b>: SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50 · NRML, notional ₹12,25,625.00"},
		{"place_order", `{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5,"product":"MIS"}`, "<b>alpha</b>: SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50 · MIS, notional ₹12,25,625.00"},
		// An order at market is valued at its symbol's last price, and says
		// when there is none.
		{"place_order", `{"symbol":"NSE:INFY","side":"buy","quantity":50}`, "<b>alpha</b>: BUY 50 INFY MARKET · NRML, notional ≈ ₹75,000.00 at the last price"},
		{"place_order", `{"symbol":"NSE:TCS","side":"buy","quantity":50}`, "<b>alpha</b>: BUY 50 TCS MARKET · NRML, notional not known: no last price for TCS just now"},
		{"flatten_desk", `{}`, "<b>alpha</b>: flatten_desk (close every open position)"},
		{"get_positions", `{}`, "<b>alpha</b>: get_positions (no arguments)"},
		{"get_positions", `null`, "<b>alpha</b>: get_positions (no arguments)"},
		{"place_order", `{"symbol":"X","side":"buy","side":"sell","quantity":1,"price":1}`, `<b>alpha</b>: place_order {&#34;price&#34;:1,&#34;quantity&#34;:1,&#34;side&#34;:&#34;sell&#34;,&#34;symbol&#34;:&#34;X&#34;}`},
		{"bash", `{"command":"` + strings.Repeat("a", 200) + `"}`, `<b>alpha</b>: bash {&#34;command&#34;:&#34;` + strings.Repeat("a", 67) + `…`},
	}
	for _, tt := range tests {
		r := heldRequest()
		r.Content.ToolName, r.Content.Arguments = tt.tool, json.RawMessage(tt.args)
		got := requestSummary(r, deskbot.ProductNRML, map[string]float64{"INFY": 1500})
		if got != tt.want {
			t.Errorf("%s %s: got %q, want %q", tt.tool, tt.args, got, tt.want)
		}
		mustPlain(t, got, 200)
	}
}

func mis(string) string { return deskbot.ProductMIS }

func TestMoreRequestsListsEachInTradingWords(t *testing.T) {
	t.Parallel()
	var rs []*deskbot.Request
	for i := range 3 {
		r := heldRequest()
		r.Content.Arguments = json.RawMessage(fmt.Sprintf(`{"symbol":"INFY","side":"buy","quantity":%d,"price":1500.5}`, 10*(i+1)))
		rs = append(rs, r)
	}
	rs[2].Content.ToolName, rs[2].Content.Arguments = "flatten_desk", json.RawMessage(`{}`)
	got := mustPlain(t, moreRequests(rs, mis, nil), MaxMessage)
	want := "…and 3 more; decide these first.\nalpha: BUY 10 INFY LIMIT @ 1,500.50 · MIS, notional ₹15,005.00\nalpha: BUY 20 INFY LIMIT @ 1,500.50 · MIS, notional ₹30,010.00\nalpha: flatten_desk (close every open position)"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for range 200 {
		rs = append(rs, rs[0])
	}
	if got := mustPlain(t, moreRequests(rs, mis, nil), MaxMessage); !strings.HasSuffix(got, "more not listed)") {
		t.Errorf("a long list is not cut with a count: %q", got[len(got)-80:])
	}
}
