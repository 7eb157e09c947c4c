package words

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// UnrecordedMessage tells a desk's model that a guarded call was not run
// because its request could not be saved. The executor says it, since the
// gate, which failed to save the request, could not.
func UnrecordedMessage(tool string, err error) string {
	return fmt.Sprintf("%s needs the user's permission, but the request could not be recorded (%s), so it was not run. Tell the user and end this turn.",
		tool, strings.TrimSuffix(deskbot.ErrorMessage(err), "."))
}

// UncheckedMessage tells a desk's model its call was not run because what
// it needs checked before anyone is asked (its instrument, the market's
// price) could not be read.
func UncheckedMessage(tool string, err error) string {
	return fmt.Sprintf("%s was not run: it could not be checked before anyone was asked (%s). Tell the user and end this turn.",
		tool, strings.TrimSuffix(deskbot.ErrorMessage(err), "."))
}

// TooLongToShowMessage tells a desk's model that a guarded call was refused
// because its arguments cannot be shown whole to an approver.
func TooLongToShowMessage(tool string, n int) string {
	return fmt.Sprintf("%s needs the user's permission, but its arguments are %d characters long and the user can be shown at most %d, so it was not run and no request was sent. Make the call shorter (for example, write a long script to a file in your folder and run the file), then call %s again.",
		tool, n, argtext.MaxArguments, tool)
}

// TooLargeToKeepMessage tells a desk's model that a guarded call was
// refused because its arguments as sent (n bytes, padding included) are
// more than a request keeps.
func TooLargeToKeepMessage(tool string, n int) string {
	return fmt.Sprintf("%s needs the user's permission, but its arguments are %d bytes as sent and a request keeps at most %d, so it was not run and no request was sent. Send the arguments without padding (no runs of spaces or line breaks between values), then call %s again.",
		tool, n, argtext.MaxRawArguments, tool)
}

// Time renders t as HH:MM in India time, the form used in every message.
func Time(t time.Time) string { return t.In(deskbot.IST).Format("15:04") }

// FlattenTrigger is what a desk is told after a person flattened it. The
// words are part of the contract with the desk's model.
func FlattenTrigger(desk string, at time.Time, summary string) deskbot.Trigger {
	return deskbot.Trigger{
		Desk:      desk,
		Kind:      deskbot.TriggerFlatten,
		Text:      fmt.Sprintf("The user flattened this desk at %s India time: %s", Time(at), summary),
		CreatedAt: at,
	}
}

// until is when a broker session ends, as the chat and the login page say
// it: "06:00 IST on Sat 5 Dec".
func until(t time.Time) string {
	return Time(t) + " IST on " + t.In(deskbot.IST).Format("Mon 2 Jan")
}

// BrokerLoggedIn tells the group who logged in to Kite and until when.
func BrokerLoggedIn(s deskbot.BrokerSession) string {
	return fmt.Sprintf("🔑 %s logged in to Kite (account %s); the session lasts until %s.", s.By.Name, s.UserID, until(s.Until))
}

// BrokerSessionEnded tells the group, once, that Kite ended s.
func BrokerSessionEnded(s deskbot.BrokerSession) string {
	return "⚠️ Kite ended the session " + s.By.Name + " started at " + Time(s.At) + " IST: orders are refused until an approver sends /login."
}

// BrokerSourceRefused tells the group, once a day, that Kite refused an
// order for the address it came from (source: the address deskbot sent
// it from, or "" when the host's routing chose it).
func BrokerSourceRefused(source string) string {
	from := "this server's address"
	if source != "" {
		from = "this server's address " + source + " (KITE_SOURCE_IP)"
	}
	return "⛔ Kite refused an order because it came from " + from + ", which is not in the Kite app's IP whitelist: no order can be placed, modified or cancelled until it is. " +
		"Fix: register this server's address in the Kite developer console's IP whitelist (developers.kite.trade, Profile, IP Whitelist); changes take a week (one change a calendar week), " +
		"or set KITE_SOURCE_IP to an address already registered that this host owns. `deskbot check` prints the address orders leave from. Orders refused meanwhile were not placed, and nothing retries them."
}

// BrokerDayOrdersFull is the refusal of an order past the account's cap
// of orders a day at Kite.
func BrokerDayOrdersFull(count, max int) string {
	return fmt.Sprintf("the account has placed %s orders today, Kite's limit for a day is %s: the order was not placed. Orders can be placed again on the next trading day.", Count(count), Count(max))
}

// BrokerLoginAsked is the morning's reminder to log in to Kite.
const BrokerLoginAsked = "🔑 No Kite session today yet: an approver, send /login before the market opens."

// BrokerSession says whose Kite session is on and until when.
func BrokerSession(s deskbot.BrokerSession) string {
	return fmt.Sprintf("Kite's session is %s's (account %s), since %s IST, until %s.", s.By.Name, s.UserID, Time(s.At), until(s.Until))
}

// BrokerLoginPage is what the login page says once the session is kept.
func BrokerLoginPage(s deskbot.BrokerSession) string {
	return fmt.Sprintf("Logged in to Kite as %s until %s. You can close this page.", s.UserID, until(s.Until))
}
