package words

import (
	"fmt"
	"strings"
	"time"
)

// StaleTriggerAfter is how long after it was sent a trigger reaches its
// desk's model before the model is told how old it is: a /tell queued while
// no model answered, or behind a long turn, may be read hours later, and
// "buy now" then means something else.
const StaleTriggerAfter = 2 * time.Minute

// TriggerAgePattern matches TriggerAge's note where it follows the
// trigger's clock: words for the model, which the chat leaves out of a
// desk's last turn.
const TriggerAgePattern = `^\(This was sent [^\n]* ago, at \d{2}:\d{2} India time; it is \d{2}:\d{2} India time now\.[^\n]*\)\n`

// TriggerAge tells a model, plainly, how long ago a trigger it is reading
// now was sent, and that the market may have moved since; "" when it is
// fresh (under StaleTriggerAfter). It follows TriggerClock in the trigger's
// text.
func TriggerAge(sent, now time.Time) string {
	age := now.Sub(sent)
	if sent.IsZero() || age < StaleTriggerAfter {
		return ""
	}
	return fmt.Sprintf("(This was sent %s ago, at %s India time; it is %s India time now. Prices, positions and orders may have changed since: check them before acting on it.)\n",
		Ago(age), Time(sent), Time(now))
}

// Ago says a duration as people do, to the minute: "3 minutes", "1 hour
// 5 minutes", "2 days 4 hours" (days drop the minutes).
func Ago(d time.Duration) string {
	m := int(d / time.Minute)
	days, hours, mins := m/(24*60), m/60%24, m%60
	switch {
	case days > 0 && hours > 0:
		return plural(days, "day") + " " + plural(hours, "hour")
	case days > 0:
		return plural(days, "day")
	case hours > 0 && mins > 0:
		return plural(hours, "hour") + " " + plural(mins, "minute")
	case hours > 0:
		return plural(hours, "hour")
	}
	return plural(mins, "minute")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// ModelUnreachable tells the group that a desk reaches none of its models,
// once per outage, whether its own turn found it or the start's probe did;
// failures say why, one per model.
func ModelUnreachable(desk string, failures []string) string {
	return fmt.Sprintf("Desk %s cannot reach any of its models (%s). Its messages wait in its queue; it keeps trying and will say when it is back.",
		desk, strings.Join(failures, "; "))
}
