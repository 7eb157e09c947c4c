// Package risk applies the desks' day-long rules ([desk.risk] of
// DESKS_FILE) outside their models: a daily loss, a drawdown from the
// day's best, a run of denials, the models' tokens for the day, and a
// square-off by the clock. A rule that trips halts the desk: paused, its
// orders closed where the rule says, the group and the model told.
//
// Concurrency and delivery: one Watcher runs on the leader only. It reads
// the event stream as its own consumer group (at least once: the run of
// refusals is counted by event id, so a repeat counts nothing), and checks
// every desk at each tick, one desk at a time. A halt is taken
// first-caller-wins in the store, so two instances, or a watcher and its
// restart, halt a desk once; what a halt does after that is claimed by one
// watcher and recorded as done, and a halt a dead leader left undone is
// finished by the next once its claim lapsed. The
// people's own actions never pass through here: the watcher only reads
// the book and acts through the broker port, as any broker's book would.
//
// Admission is the one part of the rules on the desks' own path: every
// broker puts each order to it immediately before making it (after any
// rate-limit wait), so a halt, or the square-off, refuses an order however
// the order came to run; and a halt's finish cancels the desk's orders
// still waiting for their send as well as those resting at the broker.
package risk

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// Group is the event stream's consumer group the watcher reads.
const Group = "risk"

// By is who the audit trail names for what the rules do.
const By = "risk"

// MaxEvery is the longest a desk's rules go unchecked: the rules are
// checked at least this often, besides after every fill.
const MaxEvery = 30 * time.Second

// journalDepth is how many of a desk's last fills are read for the day's
// realised P&L: as many as the paper broker keeps.
const journalDepth = 1000

// Store is what the watcher keeps and reads.
type Store interface {
	deskbot.RiskStore
	deskbot.EventLog
	deskbot.Notes
	deskbot.Auditor
	Enqueue(ctx context.Context, t deskbot.Trigger) error
	DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error)
	// CreateEventGroupAtEnd makes the group start after the newest event,
	// so a first start does not count history as new.
	CreateEventGroupAtEnd(ctx context.Context, group string) error
	AckEvents(ctx context.Context, group string, ids ...string) error
}

// Watcher applies the rules. Desks are every desk (each gets P&L samples
// for the day's report); Rules the desks that have rules.
type Watcher struct {
	Desks  []string
	Rules  map[string]deskbot.RiskRules
	Store  Store
	Broker deskbot.Broker
	Now    deskbot.Now
	Every  time.Duration // 0: MaxEvery
	Log    *slog.Logger
	// ClaimFor is how long a watcher's claim to finish a halt or to
	// square a desk off holds (0: ClaimFor): far longer than either takes,
	// short enough that what a watcher that died left undone is done by
	// the next soon after.
	ClaimFor time.Duration

	mu sync.Mutex // one check at a time: the events and the tick share the desks

	retriesOnce sync.Once
	retries     *retry.Schedule[string] // by finishNote (finishRetries)
}

// finishBackoff spaces the tries of a halt's finish whose step failed
// (the broker down): soon at first, then less often, so a broker that
// stays down is not asked at every check and every fill.
var finishBackoff = retry.Backoff{Min: 30 * time.Second, Max: 5 * time.Minute}

// finishRetries is when each halt's failed finish is tried again, by
// finishNote.
func (w *Watcher) finishRetries() *retry.Schedule[string] {
	w.retriesOnce.Do(func() { w.retries = &retry.Schedule[string]{Backoff: finishBackoff} })
	return w.retries
}

// Run checks the desks at every tick and after the events that change
// them, until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { w.readEvents(ctx) })
	every := w.Every
	if every <= 0 || every > MaxEvery {
		every = MaxEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		w.Tick(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Tick checks every desk once: its P&L and tokens against its rules, its
// square-off, and a halt left unfinished.
func (w *Watcher) Tick(ctx context.Context) {
	for _, d := range w.Desks {
		w.Check(ctx, d)
	}
}

// Check checks one desk now.
func (w *Watcher) Check(ctx context.Context, desk string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rules := w.Rules[desk]
	st, err := w.Store.DeskStatus(ctx, desk)
	if err != nil {
		w.unchecked(ctx, desk, rules, err)
		return
	}
	if st.Halt != nil && !st.Halt.Done {
		w.finish(ctx, desk, *st.Halt, rules)
	}
	now := w.Now()
	day := deskbot.OrderDay(now)
	ts, err := w.Broker.Trades(ctx, desk, journalDepth)
	var book deskbot.Book
	if err == nil {
		book, err = w.Broker.Book(ctx, desk)
	}
	if err != nil {
		w.unchecked(ctx, desk, rules, err)
		return
	}
	realised, open, _, _ := deskbot.DayPnL(ts, book, day, len(ts) >= journalDepth)
	pnl := deskbot.RoundPaise(realised + open)
	best, err := w.Store.AddPnLSample(ctx, desk, deskbot.PnLSample{At: now, PnL: pnl})
	if err != nil {
		w.unchecked(ctx, desk, rules, err)
		return
	}
	w.checked(ctx, desk)
	if st.Halt == nil {
		// After a resume from a halt the day's rules count from the
		// figures the desk was halted at (deskbot.Restart).
		var from deskbot.Restart
		if st.Restart != nil && st.Restart.Day == day {
			from = *st.Restart
		}
		tokens := int64(0)
		if st.TokensDay == day {
			tokens = st.Tokens
		}
		fig := figures{pnl: pnl, tokens: tokens}
		switch {
		case rules.MaxDailyLoss > 0 && pnl <= from.PnL-rules.MaxDailyLoss:
			w.halt(ctx, desk, rules, deskbot.RuleMaxDailyLoss, words.LossFigures(pnl, from.PnL, rules.MaxDailyLoss), fig)
		case rules.MaxDrawdown > 0 && best-pnl >= rules.MaxDrawdown:
			w.halt(ctx, desk, rules, deskbot.RuleMaxDrawdown, words.DrawdownFigures(pnl, best, rules.MaxDrawdown), fig)
		case rules.MaxModelTokensPerDay > 0 && tokens-from.Tokens >= rules.MaxModelTokensPerDay:
			w.halt(ctx, desk, rules, deskbot.RuleMaxModelTokensPerDay, words.TokensFigures(tokens, from.Tokens, rules.MaxModelTokensPerDay), fig)
		}
	}
	// The clock's rule holds for a halted desk too: a halt that left its
	// positions open does not carry them overnight.
	w.squareOff(ctx, desk, rules, now)
}

// figures are the desk's day when a rule tripped, kept with the halt.
type figures struct {
	pnl    float64
	tokens int64
}

// halt halts the desk for rule, unless it is halted already, and does
// what a halt does.
func (w *Watcher) halt(ctx context.Context, desk string, rules deskbot.RiskRules, rule, figures string, fig figures) {
	h := deskbot.Halt{Rule: rule, Figures: figures, At: w.Now(), PnL: fig.pnl, Tokens: fig.tokens}
	won, err := w.Store.HaltDesk(ctx, desk, h, deskbot.AuditEntry{Action: "halt", Desk: desk, By: By, At: h.At, Detail: rule + ": " + figures})
	if err != nil {
		w.Log.ErrorContext(ctx, "risk: could not halt a desk; will try again at the next check", "desk", desk, "rule", rule, "err", err)
		return
	}
	if !won {
		return
	}
	w.Log.WarnContext(ctx, "risk: desk halted", "desk", desk, "rule", rule, "figures", figures)
	w.finish(ctx, desk, h, rules)
}

// finish does what a halt does after the halt itself: close the desk's
// positions where flatten_on_halt says so (its open orders cancelled
// either way), tell the group and the model,
// and mark the halt done. A step that fails leaves the halt undone, and a
// check after a backoff (finishBackoff) does it again: closing a flat book
// closes nothing, and the group may be told twice, never not at all. What
// the broker refuses for the server's address is no failure: it is left,
// and the group told so in the halt's words (cancelOrders; a flatten's
// report says it likewise).
//
// The finish is claimed first: a second watcher (an instance taking over,
// which saw the halt before it was marked done) would otherwise tell the
// group of it again while the first is still at it. A claim whose holder
// died lapses after ClaimFor, and the next check finishes the halt.
func (w *Watcher) finish(ctx context.Context, desk string, h deskbot.Halt, rules deskbot.RiskRules) {
	claim := finishNote(desk, h)
	if won, err := w.Store.PutNoteOnce(ctx, claim, "1", w.claimFor()); err != nil || !won {
		return
	}
	done := false
	defer func() {
		if !done { // tried again at the next check
			_ = w.Store.DeleteNote(context.WithoutCancel(ctx), claim)
		}
	}()
	if !w.finishRetries().Due(claim, w.Now()) {
		return // a step failed a moment ago: tried again after its backoff
	}
	steps := []string{"paused the desk (its held calls cannot be allowed)"}
	if rules.FlattenOnHalt {
		did, err := w.flatten(ctx, desk, "halt: "+h.Rule)
		if err != nil {
			wait := w.finishRetries().Failed(claim, w.Now())
			w.Log.ErrorContext(ctx, "risk: a halted desk's positions could not be closed; will try again", "desk", desk, "err", err, "wait", wait)
			return
		}
		steps = append(steps, did)
	} else {
		// Orders resting at the broker would fill after the halt and open
		// or grow what the rules stopped: they go even where positions stay.
		n, left, err := w.cancelOrders(ctx, desk)
		if err != nil {
			wait := w.finishRetries().Failed(claim, w.Now())
			w.Log.ErrorContext(ctx, "risk: a halted desk's open orders could not be cancelled; will try again", "desk", desk, "err", err, "wait", wait)
			return
		}
		if n > 0 {
			steps = append(steps, "cancelled its "+strconv.Itoa(n)+" open orders")
		}
		if len(left) > 0 {
			steps = append(steps, "could not cancel "+strings.Join(left, "; "))
		}
		steps = append(steps, "left its positions open (flatten_on_halt is off)")
	}
	did := words.Did(steps)
	if err := w.Store.Publish(ctx, deskbot.Event{Kind: deskbot.EventRisk, Desk: desk, Time: w.Now(), Text: words.HaltChat(desk, h, did)}); err != nil {
		w.Log.ErrorContext(ctx, "risk: could not tell the group of a halt; will try again at the next check", "desk", desk, "err", err)
		return
	}
	if err := w.Store.Enqueue(ctx, words.HaltTrigger(desk, h)); err != nil {
		w.Log.ErrorContext(ctx, "risk: could not tell a halted desk's model; will try again at the next check", "desk", desk, "err", err)
		return
	}
	if err := w.Store.FinishHalt(ctx, desk, did); err != nil {
		w.Log.ErrorContext(ctx, "risk: could not mark a halt done; will finish it again at the next check", "desk", desk, "err", err)
		return
	}
	done = true
	w.finishRetries().Done(claim)
}

// cancelOrders deletes the desk's active GTTs and cancels its orders open
// at the broker, and says how many orders it cancelled. One that filled,
// fired or ended meanwhile is left; one (an order or a GTT) whose placing
// Kite has not confirmed yet cannot be cancelled yet, and is an error, so
// the finish is tried again.
// One the broker refuses for the server's address (deskbot.ESOURCE) is
// left, said why in left: only the broker's console mends that, so trying
// again would only be refused again, and the halt must still be told.
func (w *Watcher) cancelOrders(ctx context.Context, desk string) (n int, left []string, err error) {
	// Its GTTs first, in the same step: none may fire into a halted desk.
	gtts, err := w.Broker.GTTs(ctx, desk)
	if err != nil {
		return 0, nil, err
	}
	for _, g := range gtts {
		if g.State != deskbot.GTTActive {
			continue
		}
		id := g.ID
		if id == "" {
			id = g.Tag
		}
		_, err := w.Broker.CancelGTT(ctx, desk, id)
		switch deskbot.ErrorCode(err) {
		case "":
		case deskbot.ECONFLICT:
			if g.ID == "" {
				// Its placing not confirmed yet (an answer lost): it may
				// be at the broker, and cannot be deleted until it is
				// known, so the finish is tried again, as for an order.
				return 0, left, err
			}
			// It fired or ended meanwhile.
		case deskbot.ESOURCE:
			left = append(left, "GTT "+id+" on "+g.GTT.Symbol+" (it stays at the broker and may still fire): "+deskbot.ErrorMessage(err))
		default:
			return 0, left, err
		}
	}
	orders, err := w.Broker.Orders(ctx, desk)
	if err != nil {
		return 0, left, err
	}
	for _, po := range orders {
		if !po.Open() {
			continue
		}
		id := po.ID
		if id == "" {
			id = po.Tag
		}
		_, err := w.Broker.CancelOrder(ctx, desk, id)
		switch {
		case err == nil:
			n++
		case deskbot.ErrorCode(err) == deskbot.ECONFLICT && po.State != deskbot.OrderPending:
		case deskbot.ErrorCode(err) == deskbot.ESOURCE:
			left = append(left, "order "+id+" on "+po.Order.Symbol+" (it stays open at the broker): "+deskbot.ErrorMessage(err))
		default:
			return n, left, err
		}
	}
	return n, left, nil
}

// ClaimFor is Watcher.ClaimFor's default.
const ClaimFor = time.Minute

func (w *Watcher) claimFor() time.Duration {
	if w.ClaimFor <= 0 {
		return ClaimFor
	}
	return w.ClaimFor
}

// finishNote names one halt's finish: a later halt of the desk is
// another.
func finishNote(desk string, h deskbot.Halt) string {
	return "risk:finish:" + desk + ":" + strconv.FormatInt(h.At.UnixMilli(), 10)
}

// flatten closes the desk's net positions through the broker, audited by
// the rules, and says what it closed.
func (w *Watcher) flatten(ctx context.Context, desk, why string) (string, error) {
	rep, err := w.Broker.Flatten(ctx, desk, "risk:"+desk+":"+strconv.FormatInt(w.Now().UnixMilli(), 10))
	if err != nil {
		return "", err
	}
	did := words.Closed(rep)
	if err := w.Store.Audit(ctx, deskbot.AuditEntry{Action: "flatten", Desk: desk, By: By, At: w.Now(), Detail: why + "; " + did}); err != nil {
		w.Log.WarnContext(ctx, "risk: could not audit a flatten", "desk", desk, "err", err)
	}
	return did, nil
}

// squareOff closes the desk's positions once on each trading day, at or
// after its square_off_at. The first check past the time does it, so a
// leader that was down at 15:15 does it when it starts. It is claimed
// before and marked done after: a watcher that died in between leaves a
// claim that lapses, not a day marked squared off with its positions
// open.
func (w *Watcher) squareOff(ctx context.Context, desk string, rules deskbot.RiskRules, now time.Time) {
	if !rules.PastSquareOff(now) {
		return
	}
	done := squareOffNote(desk, now)
	if _, err := w.Store.Note(ctx, done); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		return // done today, or not known: tried again at the next check
	}
	claim := done + ":claim"
	won, err := w.Store.PutNoteOnce(ctx, claim, "1", w.claimFor())
	if err != nil || !won {
		return
	}
	did, err := w.flatten(ctx, desk, "square_off_at "+rules.SquareOffAt)
	if err != nil {
		// Tried again at the next check; the group is told once a day that
		// the positions are still open.
		_ = w.Store.DeleteNote(ctx, claim)
		w.Log.ErrorContext(ctx, "risk: could not square off a desk; will try again at the next check", "desk", desk, "err", err)
		if won, nerr := w.Store.PutNoteOnce(ctx, done+":failed", "1", 48*time.Hour); nerr == nil && won {
			text := words.SquareOffFailed(desk, rules.SquareOffAt, deskbot.ErrorMessage(err))
			if perr := w.Store.Publish(ctx, deskbot.Event{Kind: deskbot.EventRisk, Desk: desk, Time: now, Text: text}); perr != nil {
				_ = w.Store.DeleteNote(ctx, done+":failed") // told at the next failure instead
			}
		}
		return
	}
	if err := w.Store.PutNote(ctx, done, "1", 48*time.Hour); err != nil {
		// The claim still holds it; once it lapses the next check closes
		// a flat book and tells the group again.
		w.Log.WarnContext(ctx, "risk: could not mark a square-off done", "desk", desk, "err", err)
	}
	w.Log.InfoContext(ctx, "risk: desk squared off", "desk", desk, "did", did)
	if err := w.Store.Publish(ctx, deskbot.Event{Kind: deskbot.EventRisk, Desk: desk, Time: now, Text: words.SquareOffChat(desk, rules.SquareOffAt, did)}); err != nil {
		w.Log.WarnContext(ctx, "risk: could not tell the group of a square-off", "desk", desk, "err", err)
	}
	if err := w.Store.Enqueue(ctx, words.SquareOffTrigger(desk, rules.SquareOffAt, did, now)); err != nil {
		w.Log.WarnContext(ctx, "risk: could not tell a squared-off desk's model", "desk", desk, "err", err)
	}
}

func squareOffNote(desk string, now time.Time) string {
	return "risk:squareoff:" + desk + ":" + deskbot.OrderDay(now)
}

// unchecked tells the group, once until the rules can be checked again,
// that a desk's rules cannot be checked. Desks without rules that read
// the book or the clock's square-off only miss a sample of the report:
// logged, not told.
func (w *Watcher) unchecked(ctx context.Context, desk string, rules deskbot.RiskRules, err error) {
	if ctx.Err() != nil {
		return
	}
	w.Log.WarnContext(ctx, "risk: a desk's rules could not be checked", "desk", desk, "err", err)
	if !needsBroker(rules) {
		return
	}
	won, nerr := w.Store.PutNoteOnce(ctx, uncheckedNote(desk), "1", 24*time.Hour)
	if nerr != nil || !won {
		return
	}
	text := words.RiskUnchecked(desk, deskbot.ErrorMessage(err))
	if perr := w.Store.Publish(ctx, deskbot.Event{Kind: deskbot.EventRisk, Desk: desk, Time: w.Now(), Text: text}); perr != nil {
		_ = w.Store.DeleteNote(ctx, uncheckedNote(desk)) // told at the next failure instead
	}
}

// checked clears the unchecked note, so the next failure is told again.
func (w *Watcher) checked(ctx context.Context, desk string) {
	if !needsBroker(w.Rules[desk]) {
		return
	}
	// A stop that cuts the clearing short is no failure: the next
	// process's first check clears the note.
	if err := w.Store.DeleteNote(ctx, uncheckedNote(desk)); err != nil && ctx.Err() == nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		w.Log.WarnContext(ctx, "risk: could not clear a note", "desk", desk, "err", err)
	}
}

func uncheckedNote(desk string) string { return "risk:unchecked:" + desk }

// needsBroker says whether the desk's rules need its broker: the P&L and
// tokens rules read its book, the square-off closes it.
func needsBroker(r deskbot.RiskRules) bool { return r.Watches() || r.SquareOffAt != "" }

// readEvents follows the event stream: decisions, lapses and refusals
// count into a desk's run of refusals; fills and turns' ends check the
// desk at once.
func (w *Watcher) readEvents(ctx context.Context) {
	backoff := retry.Backoff{Min: time.Second, Max: time.Minute}
	created := false
	for ctx.Err() == nil {
		var err error
		if !created {
			if err = w.Store.CreateEventGroupAtEnd(ctx, Group); err == nil {
				created = true
			}
		}
		var evs []deskbot.Event
		if err == nil {
			evs, err = w.Store.ReadEvents(ctx, Group, "watcher", 100, time.Second)
		}
		if err == nil && len(evs) > 0 {
			err = w.handle(ctx, evs)
		}
		if err == nil {
			backoff.Reset()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		wait := backoff.Next()
		w.Log.WarnContext(ctx, "risk: reading events failed, will retry", "err", err, "wait", wait)
		if retry.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// handle counts a batch of events and acknowledges it; the desks whose
// book or tokens it changed are checked once each, after.
func (w *Watcher) handle(ctx context.Context, evs []deskbot.Event) error {
	check := map[string]bool{}
	ids := make([]string, 0, len(evs))
	for _, e := range evs {
		ids = append(ids, e.ID)
		rules, ok := w.Rules[e.Desk]
		if !ok {
			continue
		}
		refused, counts := refusal(e)
		if counts && rules.MaxDenialsInARow > 0 {
			n, err := w.Store.CountInARow(ctx, e.Desk, e.ID, refused)
			if err != nil {
				return err
			}
			if n >= rules.MaxDenialsInARow {
				w.mu.Lock()
				w.haltInARow(ctx, e.Desk, rules, n)
				w.mu.Unlock()
			}
		}
		if changesBook(e) || e.Kind == deskbot.EventDeskState {
			check[e.Desk] = true
		}
	}
	desks := make([]string, 0, len(check))
	for d := range check {
		desks = append(desks, d)
	}
	sort.Strings(desks)
	for _, d := range desks {
		w.Check(ctx, d)
	}
	return w.Store.AckEvents(ctx, Group, ids...)
}

func (w *Watcher) haltInARow(ctx context.Context, desk string, rules deskbot.RiskRules, n int) {
	st, err := w.Store.DeskStatus(ctx, desk)
	if err != nil || st.Halt != nil {
		return
	}
	// The day's figures are read at the next check; a run of refusals
	// does not wait for them.
	var fig figures
	if st.Restart != nil && st.Restart.Day == deskbot.OrderDay(w.Now()) {
		fig = figures{pnl: st.Restart.PnL, tokens: st.Restart.Tokens}
	}
	w.halt(ctx, desk, rules, deskbot.RuleMaxDenialsInARow, words.InARowFigures(n), fig)
}

// refusal says whether e counts into a desk's run of refusals (counts)
// and which way: a denial, a lapse or a hard-limit refusal adds to it
// (refused); an allow ends it. Only the decision itself counts: a
// request's second request_decided, once its call ran, carries a Result.
func refusal(e deskbot.Event) (refused, counts bool) {
	switch e.Kind {
	case deskbot.EventRequestLapsed:
		return true, true
	case deskbot.EventRequestDecided:
		if e.Result != nil || e.Request == nil || e.Request.Decision == "" || e.Request.DecidedAt.UnixMilli() != e.Time.UnixMilli() {
			return false, false
		}
		return e.Request.Decision == deskbot.Deny, true
	case deskbot.EventToolResult:
		if e.Result != nil && e.Result.Limit {
			return true, true
		}
	}
	return false, false
}

// changesBook says whether e may have changed a desk's book: a broker
// tool's result, run straight or after an allow.
func changesBook(e deskbot.Event) bool {
	if e.Result == nil || e.Result.IsError {
		return false
	}
	tool := ""
	switch {
	case e.Call != nil:
		tool = e.Call.Name
	case e.Request != nil:
		tool = e.Request.Content.ToolName
	}
	// A modification may fill the order it changes (on paper, at once).
	return tool == deskbot.ToolPlaceOrder || tool == deskbot.ToolModifyOrder || tool == deskbot.ToolFlattenDesk
}
