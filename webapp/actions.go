package webapp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	"github.com/google/uuid"
)

// actionWait bounds an action's own work; an allowed call then runs on the
// service's lifetime, which the gate was started with.
const actionWait = 15 * time.Second

// decide takes an approver's decision on a request through the gate, as a
// tap in the chat does, and says the gate's answer: of any number of
// decisions from anywhere, the first wins and the others are told what
// already happened. The outbox edits the request's chat message from the
// decision's event.
//
// An allow is one approval: on a call that needs more approvers than have
// allowed it, it is only counted, nothing runs, and the person is told how
// many more it needs (as a tap in the chat is), never that it runs.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, v Viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), actionWait)
	defer cancel()
	id := r.PostForm.Get("id")
	d, err := deskbot.ParseDecision(r.PostForm.Get("decision"))
	if err != nil || id == "" {
		s.refuse(w, http.StatusBadRequest, "That decision could not be read; nothing was changed.")
		return
	}
	reason := r.PostForm.Get("reason")
	// What the page showed goes with an allow: the call as it was changed
	// (how many times; a page that says nothing showed the desk's own
	// call), whether its card showed it whole, and the grant's terms a
	// confirmation showed.
	seen := deskbot.Seen{Changes: -1, Whole: true}
	if d != deskbot.Deny {
		q, err := s.deps.Gate.Request(ctx, id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var ok bool
		if seen.Changes, ok = shownArg(r.PostForm.Get("shown")); !ok {
			s.refuse(w, http.StatusBadRequest, "That decision could not be read; nothing was changed.")
			return
		}
		seen.Whole, seen.Terms = renderRequest(q, words.Live{}).Whole, r.PostForm.Get("terms")
		reason = "" // a reason goes with a denial only
	}
	p := v.Person()
	ans, err := s.deps.Gate.Decide(ctx, id, seen, d, reason, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The page asks for the reason with the denial, so the desk is told
	// now rather than after the chat's wait for a reason.
	if ans.AwaitsReason {
		if _, err := s.deps.Gate.AddReason(ctx, id, "", p); err != nil && deskbot.ErrorCode(err) != deskbot.ECONFLICT {
			s.log.WarnContext(ctx, "webapp: could not tell a desk of its denial now; the sweep will", "request", id, "err", deskbot.ErrorMessage(err))
		}
	}
	say(w, http.StatusOK, ans.Text)
}

// change takes an approver's change of a held order through the gate, as
// a reply to the chat's change prompt does: refused unless it lowers the
// risk of the call the page showed; it counts as the changer's approval.
func (s *Server) change(w http.ResponseWriter, r *http.Request, v Viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), actionWait)
	defer cancel()
	id := r.PostForm.Get("id")
	shown, ok := shownArg(r.PostForm.Get("shown"))
	if id == "" || !ok {
		s.refuse(w, http.StatusBadRequest, "That change could not be read; nothing was changed.")
		return
	}
	ans, err := s.deps.Gate.Change(ctx, id, r.PostForm.Get("changes"), shown, v.Person())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	say(w, http.StatusOK, ans.Text)
}

// shownArg reads how many times the call a page showed had been changed:
// "" (a page that says nothing showed the desk's own call) or 0 to 9999.
func shownArg(v string) (int, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 9999 || strconv.Itoa(n) != v {
		return 0, false
	}
	return n, true
}

// flattenAsk offers the confirmation of a flatten: a one-time token,
// bound to the desk and the person, that the confirmation must carry.
func (s *Server) flattenAsk(ctx context.Context, r *http.Request, v Viewer) (string, any, error) {
	if !s.deps.Team.Approver(v.ID) {
		return "", nil, deskbot.Errorf(deskbot.EUNAUTHORIZED, "Only approvers can flatten a desk.")
	}
	desk := r.URL.Query().Get("desk")
	if _, ok := s.desks[desk]; !ok && desk != deskbot.AllDesks {
		return "", nil, deskbot.Errorf(deskbot.ENOTFOUND, "There is no desk named %q.", desk)
	}
	token := uuid.NewString()
	if err := s.deps.Notes.PutNote(ctx, flattenAskKey(token), desk+"|"+strconv.FormatInt(v.ID, 10), flattenAskTTL); err != nil {
		return "", nil, err
	}
	return "flatten", s.page(v, map[string]string{"Desk": desk, "Token": token}), nil
}

// grantAsk is the confirmation an Always allow of a capped tool (an
// order) asks for, as the chat's: what the grant would cover and until
// when, over a button that decides it through the one decision flow.
func (s *Server) grantAsk(ctx context.Context, r *http.Request, v Viewer) (string, any, error) {
	if !s.deps.Team.Approver(v.ID) {
		return "", nil, deskbot.Errorf(deskbot.EUNAUTHORIZED, "Only approvers can decide.")
	}
	id := r.URL.Query().Get("id")
	shown := r.URL.Query().Get("shown")
	if _, ok := shownArg(shown); !ok || id == "" {
		return "", nil, deskbot.Errorf(deskbot.EINVALID, "That request could not be read; nothing was changed.")
	}
	g, key, ok, err := s.deps.Gate.GrantTerms(ctx, id)
	if err != nil {
		return "", nil, err
	}
	now := s.cfg.Now()
	// The terms' key goes with the button: the gate grants only while
	// they are still the terms it would give.
	data := map[string]any{"ID": id, "Shown": shown, "Terms": key, "Lines": strings.Split(words.GrantConfirm(g, now), "\n"), "Button": words.GrantConfirmButton(g, now)}
	if !ok {
		data["Lines"] = []string{"This call can be allowed once only: no grant can be capped for it."}
		data["Button"] = "Allow once"
	}
	return "grant", s.page(v, data), nil
}

// flatten acts on a confirmation, once, however often it is sent: the
// chat's /flatten path (Team.FlattenFromPage).
func (s *Server) flatten(w http.ResponseWriter, r *http.Request, v Viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), actionWait)
	defer cancel()
	token := r.PostForm.Get("token")
	want, err := s.deps.Notes.Note(ctx, flattenAskKey(token))
	desk, user, _ := strings.Cut(want, "|")
	if token == "" || deskbot.ErrorCode(err) == deskbot.ENOTFOUND || user != strconv.FormatInt(v.ID, 10) || desk != r.PostForm.Get("desk") {
		s.refuse(w, http.StatusConflict, "This confirmation is not valid (too old, or not yours); nothing was closed. Tap Flatten again.")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	first, err := s.deps.Notes.PutNoteOnce(ctx, flattenDoneKey(token), "1", flattenAskTTL)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !first {
		s.refuse(w, http.StatusConflict, "This flatten was already done.")
		return
	}
	summary, err := s.deps.Team.FlattenFromPage(ctx, desk, v.Person())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	say(w, http.StatusOK, "Flattened. "+summary)
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request, v Viewer, pause bool) {
	ctx, cancel := context.WithTimeout(r.Context(), actionWait)
	defer cancel()
	desk := r.PostForm.Get("desk")
	if _, ok := s.desks[desk]; !ok {
		s.refuse(w, http.StatusNotFound, "There is no such desk; nothing was changed.")
		return
	}
	if err := s.deps.Team.PauseFromPage(ctx, desk, pause, v.Person()); err != nil {
		s.fail(w, r, err)
		return
	}
	if pause {
		say(w, http.StatusOK, "Paused "+desk+".")
	} else {
		say(w, http.StatusOK, "Resumed "+desk+".")
	}
}

// why asks a held call's desk why, as the chat's Why? does: the same
// question, one at a time, its answer posted under the request's message.
func (s *Server) why(w http.ResponseWriter, r *http.Request, v Viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), actionWait)
	defer cancel()
	id := r.PostForm.Get("id")
	if id == "" {
		s.refuse(w, http.StatusBadRequest, "That question could not be read; nobody was asked.")
		return
	}
	text, err := s.deps.Team.AskWhy(ctx, id, v.Person())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	say(w, http.StatusOK, text)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request, v Viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), actionWait)
	defer cancel()
	desk, tool := r.PostForm.Get("desk"), r.PostForm.Get("tool")
	if _, ok := s.desks[desk]; !ok || tool == "" {
		s.refuse(w, http.StatusBadRequest, "There is no such grant; nothing was changed.")
		return
	}
	err := s.deps.Gate.Revoke(ctx, desk, tool, v.Person())
	switch deskbot.ErrorCode(err) {
	case "":
		say(w, http.StatusOK, "Revoked: "+desk+" asks again before "+tool+".")
	case deskbot.ENOTFOUND:
		s.refuse(w, http.StatusNotFound, "There is no such grant (already revoked?).")
	default:
		s.fail(w, r, err)
	}
}
