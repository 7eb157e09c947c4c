package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
)

// A careless operator misspells a tool in a desk's tools list (case, a
// stray space, a dash). The service refuses to start on it, so deskbot
// check, which exits 0 only when the service would start, must say FAIL
// and name the tool, not "ok".
func TestHostileDeskToolTypoFailsCheck(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, tools, bad string }{
		{"case", `["get_positions", "Place_Order"]`, "Place_Order"},
		{"trailing space", `["place_order "]`, "place_order "},
		{"dash", `["bash", "flatten-desk"]`, "flatten-desk"},
		{"empty name", `["bash", ""]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			env["APPROVAL_TOOLS"] = "place_order,flatten_desk"
			env["DESKS_FILE"] = configtest.DesksFile(t, "[[desk]]\nname = \"main\"\ntools = "+tt.tools+"\n")
			want := `desk "main" lists tool "` + tt.bad + `", which does not exist`

			cfg, err := config.Load(env)
			if err == nil {
				m := &Main{Config: cfg, Log: slog.New(slog.DiscardHandler)}
				err = m.Run(t.Context())
				m.Close()
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("start: %v; want an error containing %q", err, want)
			}

			code, out, lines := configtest.CheckOut(t, config.RunCheck, env)
			if code != 1 || !strings.HasPrefix(lines["desks"], "FAIL") || !strings.Contains(lines["desks"], want) {
				t.Errorf("check exited %d with desks line %q; want 1 and a FAIL containing %q\n%s", code, lines["desks"], want, out)
			}
		})
	}
}
