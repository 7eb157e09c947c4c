package report

import (
	"context"
	"image/color"
	"slices"
	"time"

	"github.com/deskbot/deskbot"
)

// Report is a report ready to send: a PNG and its caption, plain text of
// at most MaxCaption characters, the most important figures first.
type Report struct {
	PNG     []byte
	Caption string
}

// Scope is which desks a report covers. Every desk keeps the colour of its
// place among Desks whichever are shown, so alpha is blue in every report.
type Scope struct {
	Desks []string // every configured desk, in the configured order
	Only  string   // one of Desks; "" for all of them
}

func (s Scope) desks() ([]string, []color.RGBA, error) {
	if s.Only == "" {
		cs := make([]color.RGBA, len(s.Desks))
		for i := range s.Desks {
			cs[i] = Colour(i)
		}
		return s.Desks, cs, nil
	}
	i := slices.Index(s.Desks, s.Only)
	if i < 0 {
		return nil, nil, deskbot.Errorf(deskbot.ENOTFOUND, "There is no desk named %q.", s.Only)
	}
	return []string{s.Only}, []color.RGBA{Colour(i)}, nil
}

// Day is the report of now's India day: the P&L of each desk of s through
// the day, the P&L now its last point, and the day's figures.
func Day(ctx context.Context, deps Deps, s Scope, now time.Time) (Report, error) {
	desks, colours, err := s.desks()
	if err != nil {
		return Report{}, err
	}
	if len(desks) == 0 {
		return Report{}, deskbot.Errorf(deskbot.EINVALID, "No desks are configured.")
	}
	ds, err := days(ctx, deps, desks, now)
	if err != nil {
		return Report{}, err
	}
	pic, err := drawDay(ds, colours, now)
	if err != nil {
		return Report{}, err
	}
	return Report{PNG: pic, Caption: dayCaption(ds, now)}, nil
}

// Week is the report of the last five trading days up to now's: each desk
// of s's realised P&L per day, as bars.
func Week(ctx context.Context, deps Deps, s Scope, now time.Time) (Report, error) {
	desks, colours, err := s.desks()
	if err != nil {
		return Report{}, err
	}
	if len(desks) == 0 {
		return Report{}, deskbot.Errorf(deskbot.EINVALID, "No desks are configured.")
	}
	ws, err := weeks(ctx, deps, desks, now)
	if err != nil {
		return Report{}, err
	}
	days := TradingDays(now, 5, deps.TradingDay)
	pic, err := drawWeek(ws, colours, days)
	if err != nil {
		return Report{}, err
	}
	return Report{PNG: pic, Caption: weekCaption(ws, days)}, nil
}
