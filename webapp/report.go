package webapp

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/report"
)

// reportPicture serves a desk's report as a PNG, the day's or (week) the
// last five trading days': the picture /pnl sends, to the same viewers as
// the page's views and no one else. The desk view links it; the page
// fetches it with the sign-in header and shows it in place.
func (s *Server) reportPicture(week bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.viewer(w, r); !ok {
			return
		}
		if s.deps.Risk == nil {
			s.fail(w, r, deskbot.Errorf(deskbot.EUNAVAILABLE, "The report is not available here."))
			return
		}
		desk := r.PathValue("desk")
		if _, ok := s.desks[desk]; !ok {
			s.fail(w, r, deskbot.Errorf(deskbot.ENOTFOUND, "There is no desk named %q.", desk))
			return
		}
		// Drawing takes a fraction of a second; the reads are the page's.
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		deps := report.Deps{Broker: s.deps.Broker, Desks: s.deps.Desks, Risk: s.deps.Risk, Audit: s.deps.Audit, TradingDay: s.cfg.TradingDay}
		scope := report.Scope{Desks: s.deskNames(), Only: desk}
		draw := report.Day
		if week {
			draw = report.Week
		}
		rep, err := draw(ctx, deps, scope, s.cfg.Now())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", strconv.Itoa(len(rep.PNG)))
		// Figures of the moment, for a signed-in viewer only.
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(rep.PNG)
	}
}

// deskNames are the desks in the page's order: the report's colours.
func (s *Server) deskNames() []string {
	names := make([]string, len(s.cfg.Desks))
	for i, d := range s.cfg.Desks {
		names[i] = d.Name
	}
	return names
}
