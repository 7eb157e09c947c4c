package webapp

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/audit"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// bookWait bounds a read of a desk's book for a request's trading words,
// as the chat's messages do: the words are a help, the call is what runs.
const bookWait = 2 * time.Second

// journalDepth is how many of a desk's last fills the page reads: today's
// curve and the recent days' bars come from them.
const journalDepth = 1000

type deskCard struct {
	Name      string
	State     string
	Paused    bool
	Open      int
	Positions []positionRow
	Realised  string // today, from the journal
	OpenPnL   string
	Last      string
	Tokens    string // the models' tokens today
	Halt      string // the risk rule that halted it; "" when not halted
}

type positionRow struct {
	Symbol, Holding, Avg, Last, PnL string
	Loss                            bool
}

type page struct {
	Approver bool
	Viewer   string
	Data     any
}

func (s *Server) desksView(ctx context.Context, r *http.Request, v Viewer) (string, any, error) {
	open, err := s.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return "", nil, err
	}
	waiting := map[string]int{}
	for _, q := range open {
		waiting[q.Desk]++
	}
	var cards []deskCard
	for _, d := range s.cfg.Desks {
		c, err := s.card(ctx, d.Name, waiting[d.Name])
		if err != nil {
			return "", nil, err
		}
		cards = append(cards, c)
	}
	return "desks", s.page(v, map[string]any{"Desks": cards, "Open": len(open), "Unowned": s.unowned(ctx)}), nil
}

// unowned is what the broker's account holds that belongs to no desk, as
// the chat's /desks shows it; a broker that does not answer within
// bookWait leaves it out with a word saying so.
func (s *Server) unowned(ctx context.Context) unownedCard {
	ps, err := retry.Within(ctx, bookWait, s.deps.Broker.Unowned)
	if err != nil {
		return unownedCard{Head: words.UnownedHead, Unread: true}
	}
	c := unownedCard{Head: words.UnownedHead}
	for _, p := range ps {
		c.Lines = append(c.Lines, words.UnownedLine(p))
	}
	return c
}

type unownedCard struct {
	Head   string
	Lines  []string
	Unread bool // the broker did not answer
}

func (s *Server) page(v Viewer, data any) page {
	return page{Approver: s.deps.Team.Approver(v.ID), Viewer: v.Person().Name, Data: data}
}

func (s *Server) card(ctx context.Context, desk string, open int) (deskCard, error) {
	st, err := s.deps.Desks.DeskStatus(ctx, desk)
	if err != nil {
		return deskCard{}, err
	}
	book, err := s.deps.Broker.Book(ctx, desk)
	if err != nil {
		return deskCard{}, err
	}
	trades, err := s.deps.Broker.Trades(ctx, desk, journalDepth)
	if err != nil {
		return deskCard{}, err
	}
	c := deskCard{Name: desk, State: words.ShownState(st), Paused: st.Paused, Open: open, Last: "no activity yet"}
	if !st.LastActivity.IsZero() {
		c.Last = words.Time(st.LastActivity) + " IST"
	}
	var unreal float64
	mctx, cancel := context.WithTimeout(ctx, marketWait) // one wait for the whole book
	defer cancel()
	for _, p := range book.Positions {
		if p.Quantity == 0 {
			continue
		}
		u := p.UnrealisedPnL()
		unreal += u
		c.Positions = append(c.Positions, positionRow{
			Symbol: p.Symbol, Holding: words.Holding(p.Quantity), Avg: words.GroupedPrice(p.AvgPrice),
			Last: s.positionLast(mctx, p), PnL: words.SignedRupees(u), Loss: u < 0,
		})
	}
	today, _, _, _ := deskbot.DayPnL(trades, book, deskbot.OrderDay(s.cfg.Now()), false)
	c.Realised, c.OpenPnL = words.SignedRupees(today), words.SignedRupees(unreal)
	c.Tokens = words.TokensToday(st, s.cfg.Now())
	if st.Halt != nil {
		c.Halt = st.Halt.Rule
	}
	return c, nil
}

type tradeRow struct {
	At, Fill, PnL string
	Loss          bool
}

type callRow struct {
	At, Tool, Args, Result string
	Error                  bool
}

func (s *Server) deskView(ctx context.Context, r *http.Request, v Viewer) (string, any, error) {
	name := r.PathValue("desk")
	d, ok := s.desks[name]
	if !ok {
		return "", nil, deskbot.Errorf(deskbot.ENOTFOUND, "There is no desk named %q.", name)
	}
	open, err := s.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return "", nil, err
	}
	n := 0
	for _, q := range open {
		if q.Desk == name {
			n++
		}
	}
	c, err := s.card(ctx, name, n)
	if err != nil {
		return "", nil, err
	}
	trades, err := s.deps.Broker.Trades(ctx, name, journalDepth)
	if err != nil {
		return "", nil, err
	}
	book, err := s.deps.Broker.Book(ctx, name)
	if err != nil {
		return "", nil, err
	}
	now := s.cfg.Now()
	var unreal float64
	for _, p := range book.Positions {
		unreal += p.UnrealisedPnL()
	}
	var rows []tradeRow
	for i := len(trades) - 1; i >= 0 && len(rows) < 50; i-- {
		t := trades[i]
		rows = append(rows, tradeRow{At: t.At.In(deskbot.IST).Format("02 Jan 15:04"), Fill: words.FormatFill(t.Fill), PnL: words.SignedRupees(t.RealisedPnL), Loss: t.RealisedPnL < 0})
	}
	var watches []string
	watchesRead := s.deps.Watches != nil
	if watchesRead {
		ws, err := s.deps.Watches.Watches(ctx, name)
		watchesRead = err == nil
		for _, w := range ws {
			watches = append(watches, words.WatchLine(w))
		}
	}
	return "desk", s.page(v, map[string]any{
		"Desk": c, "Schedule": d.Schedule, "Trades": rows, "Calls": s.recent.of(name),
		"Watches": watches, "WatchesRead": watchesRead,
		"Today": dayChart(trades, unreal, now), "Days": daysChart(trades, report.TradingDays(now, 5, s.cfg.TradingDay)),
	}), nil
}

type requestCard struct {
	ID, Desk, Tool, Args, Lapses string
	Words                        []string
	Whole                        bool
	// Shown is how many times the call shown was changed (an allow or a
	// change from this card names it); Changed says who changed what;
	// Changeable offers Change (an order).
	Shown      int
	Changed    string
	Changeable bool
	// ConfirmGrant: Always allow asks to confirm the grant first (a
	// capped tool: deskbot.Policies.GrantCap), as in the chat.
	ConfirmGrant bool
}

func (s *Server) requestsView(ctx context.Context, r *http.Request, v Viewer) (string, any, error) {
	open, err := s.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return "", nil, err
	}
	now := s.cfg.Now()
	books := map[string]*deskbot.Book{}
	var cards []requestCard
	for _, q := range open {
		if q.State != deskbot.StateOpen || !now.Before(q.ExpiresAt) {
			continue // never offered after it lapsed
		}
		if _, ok := books[q.Desk]; !ok && words.NeedsBook(q) {
			books[q.Desk] = s.book(ctx, q.Desk)
		}
		live := s.liveOf(ctx, q)
		live.Book = books[q.Desk]
		cards = append(cards, renderRequest(q, live))
	}
	return "requests", s.page(v, cards), nil
}

// renderRequest is a request as the page shows it: the chat's trading
// words, then the call's arguments whole, as argtext.Arguments shows
// them to an approver in the chat. Allow is offered only on a call the
// chat could show whole too, so the page never allows what the chat would
// refuse.
// live is what the words read besides the call (words.Live), as the
// chat's message reads it.
func renderRequest(q *deskbot.Request, live words.Live) requestCard {
	card := requestCard{Shown: q.Changes}
	if c := q.Changed; c != nil {
		// The call that runs is shown, with who changed what.
		card.Changed = "Changed by " + argtext.Show(c.By) + ": " + argtext.Show(c.What) + ". This is the call that runs."
		cp := *q
		cp.Content.Arguments = c.Arguments
		q = &cp
	}
	args := argtext.Arguments(q.Content.Arguments)
	_, orderErr := deskbot.ParseOrder(q.Content.Arguments)
	card.ID, card.Desk, card.Tool, card.Args = q.ID, argtext.Show(q.Desk), argtext.Show(q.Content.ToolName), args
	card.Words, card.Lapses = words.TradingWords(q, live), words.Time(q.ExpiresAt)+" IST"
	card.Whole = argtext.Length(args) <= argtext.MaxArguments
	card.Changeable = card.Whole && q.Content.ToolName == deskbot.ToolPlaceOrder && orderErr == nil
	card.ConfirmGrant = q.Content.ToolName == deskbot.ToolPlaceOrder
	return card
}

func (s *Server) book(ctx context.Context, desk string) *deskbot.Book {
	ctx, cancel := context.WithTimeout(ctx, bookWait)
	defer cancel()
	b, err := s.deps.Broker.Book(ctx, desk)
	if err != nil {
		return nil
	}
	return &b
}

// liveOf is what q's words read besides the call but the book (read once
// a desk): the desk's product, and for an order the last price and the
// margin (priced).
func (s *Server) liveOf(ctx context.Context, q *deskbot.Request) words.Live {
	live := words.Live{Product: s.desks[q.Desk].Product}
	live.LastPrice, live.Margin = s.priced(ctx, q, live.Product)
	if s.cfg.Now != nil {
		// The last price read when the order was sized, aged now.
		live.Now, live.MaxAge = s.cfg.Now(), s.cfg.PriceMaxAge
	}
	return live
}

// priced reads, for a held order, the last price an order at market is
// valued at and the margin the order needs, side by side and for bookWait
// at most, as the chat's message does: what fails, has none or has not
// answered by then is left out (0, nil), and a broker that ignores its
// context cannot hold the page back.
func (s *Server) priced(ctx context.Context, q *deskbot.Request, product string) (last float64, margin *deskbot.OrderMargin) {
	args := q.Content.Arguments
	if q.Changed != nil {
		args = q.Changed.Arguments
	}
	if g, ok := words.GTTOf(args); ok && q.Content.ToolName == deskbot.ToolPlaceGTT && s.deps.Broker != nil {
		// A GTT's triggers are shown with their distance from the last
		// price.
		return s.lastPrice(ctx, g.Symbol), nil
	}
	o, ok := words.OrderOf(args)
	if !ok || q.Content.ToolName != deskbot.ToolPlaceOrder || s.deps.Broker == nil {
		return 0, nil
	}
	o = o.ForDesk(product)
	ctx, cancel := context.WithTimeout(ctx, bookWait)
	defer cancel()
	br := s.deps.Broker
	var lastc chan float64
	if o.AtMarket() {
		lastc = make(chan float64, 1)
		go func() {
			p, ok, err := br.LastPrice(ctx, o.Symbol)
			if err != nil || !ok {
				p.Value = 0
			}
			lastc <- p.Value
		}()
	}
	marginc := make(chan *deskbot.OrderMargin, 1)
	go func() {
		m, ok, err := br.Margin(ctx, o)
		if err != nil || !ok {
			marginc <- nil
			return
		}
		marginc <- &m
	}()
	for lastc != nil || marginc != nil {
		select {
		case last = <-lastc:
			lastc = nil
		case margin = <-marginc:
			marginc = nil
		case <-ctx.Done():
			return last, margin
		}
	}
	return last, margin
}

// lastPrice is symbol's last price, read for bookWait at most (0 when
// not read in time).
func (s *Server) lastPrice(ctx context.Context, symbol string) float64 {
	ctx, cancel := context.WithTimeout(ctx, bookWait)
	defer cancel()
	lastc := make(chan float64, 1)
	go func() {
		p, ok, err := s.deps.Broker.LastPrice(ctx, symbol)
		if err != nil || !ok {
			p.Value = 0
		}
		lastc <- p.Value
	}()
	select {
	case last := <-lastc:
		return last
	case <-ctx.Done():
		return 0
	}
}

type grantRow struct {
	Desk, Tool, By, At, Cap, Until string
}

func (s *Server) grantsView(ctx context.Context, r *http.Request, v Viewer) (string, any, error) {
	gs, err := s.deps.Gate.Grants(ctx)
	if err != nil {
		return "", nil, err
	}
	var rows []grantRow
	for _, g := range gs {
		now := s.cfg.Now()
		row := grantRow{Desk: g.Desk, Tool: g.Tool, By: g.GrantedBy, At: words.When(g.GrantedAt, now), Cap: words.GrantCap(g), Until: words.GrantEnd(g, now)}
		rows = append(rows, row)
	}
	return "grants", s.page(v, rows), nil
}

// auditDepth is how much of the trail the filters search.
const auditDepth = 5000

type auditRow struct {
	At, Action, Desk, Tool, By, Detail, Request string
}

func (s *Server) auditView(ctx context.Context, r *http.Request, v Viewer) (string, any, error) {
	q := r.URL.Query()
	f := struct{ Desk, Tool, By, Day string }{q.Get("desk"), q.Get("tool"), q.Get("by"), q.Get("day")}
	if f.Day != "" {
		if _, err := time.Parse("2006-01-02", f.Day); err != nil {
			return "", nil, deskbot.Errorf(deskbot.EINVALID, "A day is written like 2026-12-01.")
		}
	}
	trail, err := s.deps.Audit.AuditTrail(ctx, auditDepth)
	if err != nil {
		return "", nil, err
	}
	var rows []auditRow
	tools, people := map[string]bool{}, map[string]bool{}
	for i := len(trail) - 1; i >= 0; i-- {
		e := trail[i]
		if e.Tool != "" {
			tools[e.Tool] = true
		}
		if e.By != "" {
			people[e.By] = true
		}
		if (f.Desk != "" && e.Desk != f.Desk) || (f.Tool != "" && e.Tool != f.Tool) ||
			(f.By != "" && e.By != f.By) || (f.Day != "" && deskbot.OrderDay(e.At) != f.Day) || len(rows) >= 200 {
			continue
		}
		rows = append(rows, auditRow{
			At: e.At.In(deskbot.IST).Format("02 Jan 15:04:05"), Action: words.AuditAction(e.Action), Desk: e.Desk, Tool: e.Tool,
			By: e.By, Detail: argtext.Clip(argtext.Show(words.AuditDetail(e.Action, e.Detail)), 300, "… (cut)"), Request: e.RequestID,
		})
	}
	names := make([]string, 0, len(s.cfg.Desks))
	for _, d := range s.cfg.Desks {
		names = append(names, d.Name)
	}
	return "audit", s.page(v, map[string]any{
		"Rows": rows, "Filter": f, "Desks": names, "Tools": sorted(tools), "People": sorted(people),
	}), nil
}

// auditExport serves a day of the audit trail as CSV (package audit), to
// whoever may see the Audit tab: the day of the query, today's in India
// when it names none.
func (s *Server) auditExport(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.viewer(w, r); !ok {
		return
	}
	if s.deps.Ledger == nil {
		s.fail(w, r, deskbot.Errorf(deskbot.EUNAVAILABLE, "The audit's export is not available here."))
		return
	}
	day := r.URL.Query().Get("day")
	if day == "" {
		day = deskbot.OrderDay(s.cfg.Now())
	}
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		s.fail(w, r, deskbot.Errorf(deskbot.EINVALID, "A day is written like 2026-12-01."))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var b bytes.Buffer
	d := audit.Deps{Ledger: s.deps.Ledger, Orders: s.deps.Orders, Product: func(desk string) string { return s.desks[desk].Product }}
	if err := audit.Export(ctx, d, day, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="audit-`+day+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// marketWait bounds the reads of a book's last prices (ctx carries it): the hub runs only on
// the leader, and a standby's page must not hang on it.
const marketWait = 2 * time.Second

// positionLast is p's last price as the market has it, with its age, or the
// book's marked as the broker's (words.PositionLast).
func (s *Server) positionLast(ctx context.Context, p deskbot.Position) string {
	var (
		got deskbot.Price
		ok  bool
	)
	if s.deps.Market != nil {
		var err error
		got, ok, err = s.deps.Market.LastPrice(ctx, p.Symbol)
		if err != nil {
			ok = false
		}
	}
	return words.PositionLast(p.LastPrice, got, ok, s.cfg.Now(), s.cfg.PriceMaxAge)
}
