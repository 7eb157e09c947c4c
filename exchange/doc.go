// Package exchange owns what may be traded when: the market's calendar
// (MARKET_HOURS and MARKET_HOLIDAYS), the day's instrument list from the
// broker (lot size, tick size, expiry), and the one check an order passes
// before anyone is asked to approve it. An order the exchange would refuse
// for its symbol, lot, tick, expiry or the hour is refused here first, with
// words that tell the model what to send instead, so no approver reads an
// order that cannot run.
//
// Time. Everything is India time, Asia/Kolkata, which is a fixed +05:30 all
// year (India has no daylight saving): the package uses the fixed zone deskbot.IST
// and never loads tzdata, which the container may not have. Clock times
// and dates are read in IST whatever zone a time.Time carries. The package
// never reads the wall clock: callers pass the time (deskbot.Now), so tests
// and replays decide what "now" is.
//
// One calendar for every exchange. NSE, BSE, NFO and BFO, cash and F&O,
// share 09:15–15:30 and the same holidays, which is what the desks trade;
// MCX (09:00 to 23:30 or 23:55) and currency (09:00–17:00) differ and are
// not modelled separately. An operator trading them widens MARKET_HOURS,
// and then the broker, not this package, refuses an NSE order after 15:30.
// After-market orders follow Kite's windows around those sessions (from 30
// minutes after a close to 17 minutes before the next opening, none from
// 01:00 to 05:30). The check here is a pre-filter that saves a round trip
// to an approver; the exchange remains the authority.
//
// Concurrency. Hours, Calendar and Instruments are immutable once built and
// safe to share between goroutines without locks. The instrument list
// changes daily (new contracts, expired ones gone): the service builds a new
// Instruments from the morning's download and swaps the whole value (e.g.
// an atomic.Pointer[Market]); a check in flight keeps the list it started
// with.
package exchange
