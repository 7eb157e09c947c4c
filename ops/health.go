package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
)

// Check is one thing /healthz verifies. It returns nil when healthy; its
// error's deskbot message (never the raw error, which may name addresses)
// is shown.
type Check struct {
	Name string
	Func func(ctx context.Context) error
}

// Roles a process reports on /healthz when several run on one Redis: one
// leader acts, standbys wait to take over (package leader).
const (
	RoleLeader  = "leader"
	RoleStandby = "standby"
)

// RoleHealthHandler runs every check at once, each within timeout, and
// answers 200 with {"status":"ok",...} when all pass, 503 otherwise, with
// one line per check. The checks depend on the process's role, which the
// body also says ({"status":"ok","role":"standby",...}). A standby that reaches Redis is healthy: it is ready to take over,
// and an orchestrator must not restart it for not polling Telegram. A nil
// role leaves it out.
func RoleHealthHandler(timeout time.Duration, role func() string, checksFor func(role string) []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := ""
		if role != nil {
			name = role()
		}
		checks := checksFor(name)
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		results := make(map[string]string, len(checks))
		var mu sync.Mutex
		var wg sync.WaitGroup
		healthy := true
		for _, c := range checks {
			wg.Go(func() {
				status := "ok"
				if err := c.Func(ctx); err != nil {
					status = deskbot.ErrorMessage(err)
				}
				mu.Lock()
				defer mu.Unlock()
				results[c.Name] = status
				healthy = healthy && status == "ok"
			})
		}
		wg.Wait()
		body := struct {
			Status string            `json:"status"`
			Role   string            `json:"role,omitempty"`
			Checks map[string]string `json:"checks"`
		}{"ok", name, results}
		code := http.StatusOK
		if !healthy {
			body.Status, code = "unhealthy", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	})
}
