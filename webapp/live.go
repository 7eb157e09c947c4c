package webapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// hub fans events out to the open pages. A page that cannot keep up loses
// events, not the server's time: each event only tells it to read again.
type hub struct {
	mu   sync.Mutex
	subs map[chan liveEvent]struct{}
}

// liveEvent is what a page is told of an event: enough to drop a decided
// request at once and know which view to read again. No desk text.
type liveEvent struct {
	Kind    string `json:"kind"`
	Desk    string `json:"desk,omitempty"`
	Request string `json:"request,omitempty"`
	State   string `json:"state,omitempty"`
}

func newHub() *hub { return &hub{subs: map[chan liveEvent]struct{}{}} }

func (h *hub) subscribe() (chan liveEvent, func()) {
	ch := make(chan liveEvent, 32)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

func (h *hub) publish(e liveEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// follow reads the event stream in this process's own consumer group,
// created at the stream's end (a page wants what happens from now on),
// acknowledging each batch at once: nothing here needs redelivery.
func (s *Server) follow(ctx context.Context) error {
	group := groupPrefix + s.cfg.Consumer
	backoff := retry.Backoff{Min: time.Second, Max: 30 * time.Second}
	made := false
	for ctx.Err() == nil {
		var evs []deskbot.Event
		err := error(nil)
		if !made {
			err = s.deps.Events.CreateEventGroupAtEnd(ctx, group)
			made = err == nil
		}
		if err == nil {
			evs, err = s.deps.Events.ReadEventsAfter(ctx, group, "page", ">", 100, time.Second)
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			wait := backoff.Next()
			s.log.WarnContext(ctx, "webapp: cannot follow the event stream, will retry", "err", err, "wait", wait)
			if retry.Sleep(ctx, wait) != nil {
				break
			}
			continue
		}
		backoff.Reset()
		for _, ev := range evs {
			s.recent.note(ev)
			e := liveEvent{Kind: string(ev.Kind), Desk: ev.Desk, Request: ev.RequestID}
			if ev.Request != nil {
				e.State = string(ev.Request.State)
			}
			s.hub.publish(e)
			if err := s.deps.Events.AckEvent(ctx, group, ev.ID); err != nil && ctx.Err() == nil {
				s.log.DebugContext(ctx, "webapp: could not acknowledge an event", "err", err)
			}
		}
	}
	return ctx.Err()
}

// heartbeat keeps the stream open through proxies, and lets a page see a
// dead connection.
const heartbeat = 15 * time.Second

// live streams events to a viewer as server-sent events. The page reads it
// with fetch (EventSource cannot carry the initData header). It ends when
// the viewer's initData expires: the page then asks them to reopen it.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	v, ok := s.viewer(w, r)
	if !ok {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		say(w, http.StatusInternalServerError, "Live updates are not available here.")
		return
	}
	ch, done := s.hub.subscribe()
	defer done()
	stop := s.lifetime().Done()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not hold events back
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": hello\n\n")
	fl.Flush()
	expire := time.NewTimer(max(v.AuthDate.Add(s.cfg.MaxAge).Sub(s.cfg.Now()), 0))
	defer expire.Stop()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-stop:
			return // the service stops: the page reconnects to the next one
		case <-expire.C:
			fmt.Fprint(w, "event: expired\ndata: {}\n\n")
			fl.Flush()
			return
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
		case e := <-ch:
			data, _ := json.Marshal(e)
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", data)
		}
		fl.Flush()
	}
}

// recentCalls keeps each desk's last tool calls and their results as the
// event stream tells them (tool_result events, and the outcomes of held
// calls), for the desk's page. It is memory only: after a restart it
// fills again from the calls made since.
type recentCalls struct {
	mu sync.Mutex
	m  map[string][]callRow // oldest first
}

// recentDepth is how many calls a desk's page lists.
const recentDepth = 20

func (rc *recentCalls) note(ev deskbot.Event) {
	var row callRow
	switch {
	case ev.Kind == deskbot.EventToolResult && ev.Call != nil && ev.Result != nil:
		row = callRow{Tool: ev.Call.Name, Args: argtext.Arguments(ev.Call.Arguments), Result: peoplesResult(ev.Call.Name, *ev.Result), Error: ev.Result.IsError}
		if w, ok := words.ParseHoldWords(ev.Result.Text); ok && ev.Result.Held {
			// The hold message is the model's; people read what it means.
			row.Result = "Held for the team's decision (request " + words.ShortID(w.RequestID) + ")."
		}
		if ev.Grant != nil {
			row.Tool += " (" + words.RanUnderGrant(*ev.Grant) + ")"
		}
	case ev.Kind == deskbot.EventRequestDecided && ev.Result != nil && ev.Request != nil:
		r := ev.Request
		row = callRow{Tool: r.Content.ToolName + " (" + words.AuditAction(string(r.Decision)) + " by " + r.DecidedBy + ")",
			Args: argtext.Arguments(r.Content.Arguments), Result: peoplesResult(r.Content.ToolName, *ev.Result), Error: ev.Result.IsError}
	default:
		return
	}
	row.At = words.Time(ev.Time) + " IST"
	row.Tool, row.Result = argtext.Show(row.Tool), argtext.Clip(argtext.Show(row.Result), 2000, "… (cut)")
	row.Args = argtext.Clip(row.Args, 2000, "… (cut)")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.m == nil {
		rc.m = map[string][]callRow{}
	}
	l := append(rc.m[ev.Desk], row)
	if len(l) > recentDepth {
		l = l[len(l)-recentDepth:]
	}
	rc.m[ev.Desk] = l
}

// peoplesResult is a call's result as people read it. A place_order's
// answer is written for the desk's model; people read the order's id and
// where it stood when placed (words.OrderOutcome), as the chat tells it.
// A refusal, an error, and any other tool's output are shown as they are.
func peoplesResult(tool string, r deskbot.ToolResult) string {
	if tool != deskbot.ToolPlaceOrder || r.IsError || r.Held {
		return r.Text
	}
	if o, ok := words.OrderOutcome(r.Text); ok {
		return o
	}
	return "Ran."
}

// of returns a desk's recent calls, newest first.
func (rc *recentCalls) of(desk string) []callRow {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	l := rc.m[desk]
	out := make([]callRow, len(l))
	for i, r := range l {
		out[len(l)-1-i] = r
	}
	return out
}
