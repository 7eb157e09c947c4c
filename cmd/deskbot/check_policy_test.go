package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
)

// The service refuses to start on a policy that would guard nothing.
func TestRunRefusesUnguardingPolicy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "desks.toml")
	if err := os.WriteFile(path, []byte("[[desk]]\nname = \"main\"\n[desk.policy.place_order]\napprovals = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := configtest.GoodEnv(t)
	env["DESKS_FILE"] = path
	env["TELEGRAM_APPROVERS"] = "101,102"
	env["APPROVAL_TOOLS"] = "flatten_desk" // place_order unguarded on purpose
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	m := &Main{Config: cfg, Log: slog.New(slog.DiscardHandler)}
	defer m.Close()
	err = m.Run(t.Context())
	if want := "place_order is not in APPROVAL_TOOLS"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v; want an error containing %q", err, want)
	}
}
