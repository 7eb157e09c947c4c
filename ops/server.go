package ops

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves /healthz and /metrics on its own listener, apart from
// everything the team does, so a scrape can never slow a decision.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen binds addr (HTTP_ADDR; port 0 picks a free one) and starts serving.
func Listen(addr string, health, metrics http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", health)
	mux.Handle("GET /metrics", metrics)
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return s, nil
}

// Addr is the address it listens on (the real port when HTTP_ADDR asked for 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving, letting a scrape in progress finish for a moment.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
