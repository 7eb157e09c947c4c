package ops

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves /healthz and /metrics on its own listener, apart from
// everything the team does in the chat, so a scrape can never slow a
// decision; the desks page, when configured, is mounted beside them.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Mount is a handler served beside /healthz and /metrics under a path
// (its pattern, such as "/desks/"): the desks page.
type Mount struct {
	Pattern string
	Handler http.Handler
}

// Listen binds addr (HTTP_ADDR; port 0 picks a free one) and starts serving.
func Listen(addr string, health, metrics http.Handler, mounts ...Mount) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", health)
	mux.Handle("GET /metrics", metrics)
	for _, m := range mounts {
		mux.Handle(m.Pattern, m.Handler)
	}
	// Every request's context ends when Close begins: a long-lived answer
	// (the desks page's live stream) then returns, instead of holding the
	// shutdown until its timeout.
	base, cancel := context.WithCancel(context.Background())
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}}
	s.srv.RegisterOnShutdown(cancel)
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return s, nil
}

// Addr is the address it listens on (the real port when HTTP_ADDR asked for 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving, letting a scrape in progress finish for a moment;
// streams (whose handlers wait on their request's context) end at once.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
