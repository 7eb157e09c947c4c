package gate

import (
	"time"

	"github.com/deskbot/deskbot"
)

// Next is when the sweep after t runs, in India time: the tests check the
// schedule is read in IST.
func (s *Sweeper) Next(t time.Time) time.Time {
	return s.cron.Entry(s.id).Schedule.Next(t.In(deskbot.IST))
}
