package webapp

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

//go:embed assets templates
var files embed.FS

// Config is the page's part of the service configuration.
type Config struct {
	URL    string        // WEBAPP_URL: the page's public address; its path is served
	Token  string        // the bot token, for initData's signature; never shown
	MaxAge time.Duration // WEBAPP_MAX_AGE: how old an initData may be
	Desks  []Desk        // in the order the page shows them
	Now    deskbot.Now
	// PriceMaxAge is PRICE_MAX_AGE: a held order's last price older than
	// it is shown as stale, never as current.
	PriceMaxAge time.Duration
	// TradingDay is the operator's calendar (MARKET_HOURS, MARKET_HOLIDAYS)
	// the week's report counts its days on; nil: Monday to Friday.
	TradingDay func(time.Time) bool
	// Consumer names this process; its event-stream group is
	// "webapp:<Consumer>", so every process's pages hear every event.
	Consumer string
}

// Desk is a desk as the page shows it besides its state.
type Desk struct {
	Name     string
	Schedule []string // "cron: text", as configured
	// Product is the product its orders take when they name none
	// (deskbot.Policies.Product): a held order reads with it, as in the
	// chat.
	Product string
}

// Team is what the page asks of the bot.
type Team interface {
	Member(ctx context.Context, user int64) (bool, error)
	Approver(id int64) bool
	FlattenFromPage(ctx context.Context, target string, p deskbot.Person) (string, error)
	PauseFromPage(ctx context.Context, target string, pause bool, p deskbot.Person) error
	// AskWhy asks a held call's desk why, as the chat's Why? does, and
	// returns the person's answer.
	AskWhy(ctx context.Context, requestID string, p deskbot.Person) (string, error)
}

// Events is the event stream as the live view follows it.
type Events interface {
	CreateEventGroupAtEnd(ctx context.Context, group string) error
	ReadEventsAfter(ctx context.Context, group, consumer, after string, count int, block time.Duration) ([]deskbot.Event, error)
	AckEvent(ctx context.Context, group, id string) error
}

// Deps are the parts of the service the page reads and acts through.
type Deps struct {
	Team     Team
	Gate     deskbot.Gate
	Requests deskbot.OpenRequests
	Desks    deskbot.DeskStore
	Broker   deskbot.Broker
	Audit    deskbot.Auditor
	// Ledger and Orders are what the Audit tab's export of a day reads
	// (package audit); a nil Ledger: no export.
	Ledger deskbot.AuditLedger
	Orders deskbot.OrderStore
	Notes  deskbot.Notes
	Events Events
	// Risk is where the report reads the day's P&L samples; nil: the
	// report's picture is not served.
	Risk deskbot.RiskStore
	// Watches are the desks' price watches, which a desk's page lists;
	// nil: not listed.
	Watches deskbot.WatchStore
	// Market is where a shown position's last price is read with its time
	// (the hub); nil, or no price within marketWait: the book's, marked
	// as the broker's.
	Market deskbot.Market
}

// Server serves the page. Handler is mounted at Path on the HTTP server;
// Run follows the event stream for the live view.
type Server struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	path   string // with a trailing slash
	tmpl   *template.Template
	desks  map[string]Desk
	hub    *hub
	recent recentCalls

	mu   sync.Mutex
	life context.Context // the service's lifetime, for the live pages
}

// CheckURL checks WEBAPP_URL: https, or http for a loopback host only
// (tests, a local look); a path that leaves /healthz and /metrics alone.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, deskbot.Errorf(deskbot.EINVALID, "WEBAPP_URL: must be an address like https://desks.example.com/desks/")
	}
	switch u.Scheme {
	case "https":
	case "http":
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, deskbot.Errorf(deskbot.EINVALID, "WEBAPP_URL: must be https (Telegram opens Mini Apps only over https); http is accepted only for a loopback host")
		}
	default:
		return nil, deskbot.Errorf(deskbot.EINVALID, "WEBAPP_URL: must be https")
	}
	p := "/" + strings.Trim(u.Path, "/")
	if p == "/healthz" || p == "/metrics" || strings.HasPrefix(p, "/healthz/") || strings.HasPrefix(p, "/metrics/") {
		return nil, deskbot.Errorf(deskbot.EINVALID, "WEBAPP_URL: its path %s would hide /healthz or /metrics", p)
	}
	return u, nil
}

// New builds the page. A nil log logs nothing.
func New(cfg Config, deps Deps, log *slog.Logger) (*Server, error) {
	u, err := CheckURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Hour
	}
	if cfg.Consumer == "" {
		cfg.Consumer = "bot"
	}
	p := "/" + strings.Trim(u.Path, "/") + "/"
	if p == "//" {
		p = "/"
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, deps: deps, log: log, path: p, tmpl: tmpl, desks: map[string]Desk{}, hub: newHub(), life: context.Background()}
	for _, d := range cfg.Desks {
		s.desks[d.Name] = d
	}
	return s, nil
}

// Path is where the page is served, with a trailing slash.
func (s *Server) Path() string { return s.path }

// Handler serves the page and its views, actions and live stream under
// Path, every answer with the security headers.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	p := s.path
	mux.HandleFunc("GET "+p+"{$}", s.shell)
	assets, _ := fs.Sub(files, "assets")
	mux.Handle("GET "+p+"assets/", http.StripPrefix(p+"assets/", http.FileServerFS(assets)))
	mux.HandleFunc("GET "+p+"v/desks", s.view(s.desksView))
	mux.HandleFunc("GET "+p+"v/desk/{desk}", s.view(s.deskView))
	mux.HandleFunc("GET "+p+"v/requests", s.view(s.requestsView))
	mux.HandleFunc("GET "+p+"v/grants", s.view(s.grantsView))
	mux.HandleFunc("GET "+p+"v/audit", s.view(s.auditView))
	mux.HandleFunc("GET "+p+"x/audit.csv", s.auditExport)
	mux.HandleFunc("GET "+p+"v/flatten", s.view(s.flattenAsk))
	mux.HandleFunc("GET "+p+"v/grant", s.view(s.grantAsk))
	mux.HandleFunc("GET "+p+"r/pnl/{desk}", s.reportPicture(false))
	mux.HandleFunc("GET "+p+"r/pnl/{desk}/week", s.reportPicture(true))
	mux.HandleFunc("POST "+p+"a/decide", s.act(s.decide))
	mux.HandleFunc("POST "+p+"a/flatten", s.act(s.flatten))
	mux.HandleFunc("POST "+p+"a/pause", s.act(func(w http.ResponseWriter, r *http.Request, v Viewer) { s.pause(w, r, v, true) }))
	mux.HandleFunc("POST "+p+"a/resume", s.act(func(w http.ResponseWriter, r *http.Request, v Viewer) { s.pause(w, r, v, false) }))
	mux.HandleFunc("POST "+p+"a/revoke", s.act(s.revoke))
	mux.HandleFunc("POST "+p+"a/why", s.act(s.why))
	mux.HandleFunc("POST "+p+"a/change", s.act(s.change))
	mux.HandleFunc("GET "+p+"events", s.live)
	return headers(mux)
}

// frameAncestors are Telegram's web clients, the only pages that may frame
// this one (the apps open it in a web view of their own, not a frame).
const frameAncestors = "https://web.telegram.org https://webk.telegram.org https://webz.telegram.org"

// headers sets the security headers on every answer: no inline script or
// style (the page's own files and Telegram's script only), no framing but
// by Telegram, no sniffing, no referrer, no caching of what carries data.
func headers(h http.Handler) http.Handler {
	csp := strings.Join([]string{
		"default-src 'none'",
		"script-src 'self' https://telegram.org",
		"style-src 'self'",
		"img-src 'self' data:",
		"connect-src 'self'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors " + frameAncestors,
	}, "; ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// Run follows the event stream for the open pages until ctx ends; ctx is
// also the lifetime of the live pages' streams.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	s.life = ctx
	s.mu.Unlock()
	return s.follow(ctx)
}

func (s *Server) lifetime() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.life
}

func (s *Server) shell(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "shell", map[string]any{"Base": s.path})
}

// viewer signs the person in from the request's initData and checks they
// may look: approvers may, and members of the team's group.
func (s *Server) viewer(w http.ResponseWriter, r *http.Request) (Viewer, bool) {
	v, err := ValidateInitData(r.Header.Get(InitDataHeader), s.cfg.Token, s.cfg.MaxAge, s.cfg.Now())
	if err != nil {
		s.log.InfoContext(r.Context(), "webapp: refused a sign-in", "path", r.URL.Path, "remote", r.RemoteAddr)
		s.refuse(w, http.StatusUnauthorized, deskbot.ErrorMessage(err))
		return Viewer{}, false
	}
	if s.deps.Team.Approver(v.ID) {
		return v, true
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	member, err := s.deps.Team.Member(ctx, v.ID)
	if err != nil {
		s.refuse(w, http.StatusServiceUnavailable, deskbot.ErrorMessage(err))
		return Viewer{}, false
	}
	if !member {
		s.log.InfoContext(r.Context(), "webapp: refused someone outside the team's group", "user", v.ID)
		s.refuse(w, http.StatusForbidden, "Only members of the team's group can see the desks.")
		return Viewer{}, false
	}
	return v, true
}

// view serves a fragment of the page to a viewer.
func (s *Server) view(f func(ctx context.Context, r *http.Request, v Viewer) (string, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.viewer(w, r)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		name, data, err := f(ctx, r, v)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.render(w, http.StatusOK, name, data)
	}
}

// act serves an action to an approver; anyone else is refused and nothing
// changes.
func (s *Server) act(f func(w http.ResponseWriter, r *http.Request, v Viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.viewer(w, r)
		if !ok {
			return
		}
		if !s.deps.Team.Approver(v.ID) {
			s.log.InfoContext(r.Context(), "webapp: refused an action by a non-approver", "user", v.ID, "path", r.URL.Path)
			s.refuse(w, http.StatusForbidden, "Only approvers can act; nothing was changed.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if err := r.ParseForm(); err != nil {
			s.refuse(w, http.StatusBadRequest, "That request could not be read; nothing was changed.")
			return
		}
		f(w, r, v)
	}
}

// fail answers an error in words (the one error type's message; an
// internal error is logged and not shown).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch deskbot.ErrorCode(err) {
	case deskbot.EINVALID:
		code = http.StatusBadRequest
	case deskbot.ENOTFOUND:
		code = http.StatusNotFound
	case deskbot.ECONFLICT:
		code = http.StatusConflict
	case deskbot.EUNAUTHORIZED, deskbot.ESOURCE:
		// A refusal for the server's address is Kite's word to the
		// person, who must see it, not a failure of the page.
		code = http.StatusForbidden
	case deskbot.EUNAVAILABLE:
		code = http.StatusServiceUnavailable
	}
	msg := deskbot.ErrorMessage(err)
	if code == http.StatusInternalServerError {
		s.log.ErrorContext(r.Context(), "webapp: request failed", "path", r.URL.Path, "err", err)
		msg = "Something went wrong; nothing was changed. Try again in a moment."
	}
	s.refuse(w, code, msg)
}

// refuse answers with a plain message the page shows as it is.
func (s *Server) refuse(w http.ResponseWriter, code int, msg string) {
	say(w, code, msg)
}

func say(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("webapp: template failed", "template", name, "err", err)
		say(w, http.StatusInternalServerError, "The page could not be drawn.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	// Signed amounts stay whole on a phone's narrow lines. html/template
	// writes "+" as "&#43;"; a "+" is plain text in HTML, so it is written
	// back before its ₹ for the join.
	_, _ = w.Write([]byte(words.OnOneLine(strings.ReplaceAll(b.String(), "&#43;₹", "+₹"))))
}

// funcs are the templates' helpers; html/template escapes everything else.
var funcs = template.FuncMap{}
