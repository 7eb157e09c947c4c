package deskbot

import (
	"context"
	"time"
)

// Risk rules watch a desk's whole day, outside its model: approvals guard
// one call and hard limits one order, but nothing else stops a desk that
// loses in twenty small approved orders, keeps asking for what it was
// denied, or burns tokens in a loop. A rule that trips halts the desk.

// The rules, as DESKS_FILE's [desk.risk] names them and a Halt records
// which one tripped.
const (
	RuleMaxDailyLoss         = "max_daily_loss"
	RuleMaxDrawdown          = "max_drawdown"
	RuleMaxDenialsInARow     = "max_denials_in_a_row"
	RuleMaxModelTokensPerDay = "max_model_tokens_per_day"
)

// RiskRules are one desk's [desk.risk] table. A zero field is no rule: the
// desks file refuses a 0 that is written, so zero here only ever means
// "left out".
type RiskRules struct {
	MaxDailyLoss         float64 // ₹: the India day's P&L (realised plus open) at or below minus this halts
	MaxDrawdown          float64 // ₹: the day's P&L this far below its best of the day halts
	SquareOffAt          string  // "15:15", India time: close intraday positions, then refuse opening orders for the day
	MaxDenialsInARow     int     // denials, lapses and hard-limit refusals in a row that halt
	MaxModelTokensPerDay int64   // the models' reported tokens in the India day that halt
	FlattenOnHalt        bool    // a halt also closes the desk's positions
}

// Watches reports whether any rule needs the desk's P&L or tokens read.
func (r RiskRules) Watches() bool {
	return r.MaxDailyLoss > 0 || r.MaxDrawdown > 0 || r.MaxModelTokensPerDay > 0
}

// Any reports whether the desk has any rule at all.
func (r RiskRules) Any() bool {
	return r.Watches() || r.SquareOffAt != "" || r.MaxDenialsInARow > 0
}

// Halt is why the harness stopped a desk. It is kept with the desk's state,
// survives restarts and hand-overs, and only an approver's /resume lifts it.
type Halt struct {
	Rule    string    `json:"rule"`    // one of the Rule constants
	Figures string    `json:"figures"` // the figures that tripped it, in words
	At      time.Time `json:"at"`
	// Done is set once everything a halt does was done (orders cancelled,
	// positions closed where the rule says, the chat and the model told):
	// a halt not done when its process died is finished by the next leader.
	Done bool `json:"done,omitempty"`
	// Did is what the halt did, in words, once Done.
	Did string `json:"did,omitempty"`
	// PnL and Tokens are the desk's P&L and its models' tokens for the day
	// when it was halted: a resume restarts the day's rules from them.
	PnL    float64 `json:"pnl"`
	Tokens int64   `json:"tokens"`
}

// Restart is where a desk's rules count from after an approver resumed it
// from a halt: on Day (India), a loss of max_daily_loss below PnL, a
// drawdown from the best since, or max_model_tokens_per_day more than
// Tokens halts it again. A resume is a person's informed yes to go on,
// so the rule that tripped does not trip again at once on the same
// figures; it is never a way round the rules for the rest of the day.
// Only a halt of the resume's own India day leaves one: a halt of an
// earlier day was that day's figures, and the new day counts from its
// start.
type Restart struct {
	Day    string  `json:"day"`
	PnL    float64 `json:"pnl"`
	Tokens int64   `json:"tokens"`
}

// PnLSample is a desk's P&L for the India day (realised plus open) at At.
type PnLSample struct {
	At  time.Time `json:"at"`
	PnL float64   `json:"pnl"`
}

// RiskStore keeps what the risk rules need across restarts. Every write is
// first-caller-wins or idempotent, so two instances, or one that restarts
// mid-way, act once.
type RiskStore interface {
	// HaltDesk pauses the desk and records h, with its audit entry, unless
	// the desk is halted already; it reports whether this call halted it.
	HaltDesk(ctx context.Context, desk string, h Halt, audit AuditEntry) (bool, error)
	// FinishHalt marks the desk's halt done, with what it did.
	FinishHalt(ctx context.Context, desk string, did string) error
	// CountInARow counts the desk's event eventID (a stream id) into its
	// run of refusals (refused) or ends the run (not refused) and returns
	// the run's length. An event already counted, or older than the last
	// one counted, changes nothing: delivery is at least once.
	CountInARow(ctx context.Context, desk, eventID string, refused bool) (int, error)
	// AddPnLSample records the desk's P&L for the India day of s.At and
	// returns the day's best P&L so far, this sample included.
	AddPnLSample(ctx context.Context, desk string, s PnLSample) (best float64, err error)
	// PnLSamples returns the desk's samples of the India day (2006-01-02),
	// oldest first.
	PnLSamples(ctx context.Context, desk, day string) ([]PnLSample, error)
}

// DayPnL is the India day's realised P&L of a desk, from its journal, and
// its open P&L, from its book: the figures the day's rules and report read.
// partial is true when the journal may no longer hold every fill of the
// day (it was full and all of it was the day's).
func DayPnL(trades []Trade, b Book, day string, journalFull bool) (realised, open float64, n int, partial bool) {
	for _, t := range trades {
		if OrderDay(t.At) == day {
			realised += t.RealisedPnL
			n++
		}
	}
	for _, p := range b.Positions {
		open += p.UnrealisedPnL()
	}
	return RoundPaise(realised), RoundPaise(open), n, journalFull && n == len(trades)
}

// TradingDay reports whether t's India day is a trading day: a weekday.
// (Holidays and special sessions belong to the market's calendar, which
// a real broker's setting will bring.)
func TradingDay(t time.Time) bool {
	wd := t.In(IST).Weekday()
	return wd != time.Saturday && wd != time.Sunday
}

// PastSquareOff reports whether t is at or after the desk's square_off_at
// on a trading day: the square-off is due.
func (r RiskRules) PastSquareOff(t time.Time) bool {
	return r.SquareOffAt != "" && TradingDay(t) && t.In(IST).Format("15:04") >= r.SquareOffAt
}

// SquaredOff reports whether orders that open or grow a position are
// refused at t: from square_off_at on a trading day until the next
// trading day begins.
func (r RiskRules) SquaredOff(t time.Time) bool {
	return r.SquareOffAt != "" && (!TradingDay(t) || r.PastSquareOff(t))
}
