package main

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/model/modeltest"
)

// The whole service with APPROVAL_TOOLS written as people write lists: the
// second, space-led tool is really held, shown with its buttons, and does
// not run. Every tool the desks are offered is one APPROVAL_TOOLS may name.
func TestSpacedApprovalToolIsHeld(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"APPROVAL_TOOLS": "flatten_desk, place_order", "SANDBOX": "none"})
	offered := make(chan []string, 1)
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		select {
		case offered <- r.Tools():
		default:
		}
		last := r.Last()
		switch {
		case last.Role == "tool":
			return modeltest.Text("Waiting for the team.")
		case strings.Contains(last.Text, "buy one"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"RELIANCE","side":"buy","quantity":1,"price":2500}`})
		}
		return modeltest.Text("ok")
	})

	s.tg.InjectText(asha, groupID, "/tell main buy one", 0)
	held := s.mustBotMessage(t, "place_order held with buttons", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "place_order")
	})
	if got, want := held.Labels(), []string{"Allow once", "Always allow", "Deny", "Why?", "Change…"}; !slices.Equal(got, want) {
		t.Errorf("buttons = %v, want %v", got, want)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 0 {
		t.Errorf("the held order ran: %+v", book)
	}

	tools := <-offered
	if len(tools) == 0 {
		t.Fatal("the model was offered no tools")
	}
	for _, name := range tools {
		if !slices.Contains(config.KnownTools(), name) {
			t.Errorf("desks are offered %q, which APPROVAL_TOOLS cannot name (knownTools %v)", name, config.KnownTools())
		}
	}
}

// Run applies the same rules to a Config not made by LoadConfig, before it
// opens anything: the gate never gets an unchecked APPROVAL_TOOLS.
func TestRunRefusesUnguardingConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  config.Config
		want string
	}{
		{"typo", config.Config{ApprovalTools: []string{"flatten-desk"}}, `APPROVAL_TOOLS: "flatten-desk" is not a tool`},
		{"secret", config.Config{ApprovalTools: []string{"flatten_desk"}, SandboxEnv: []string{"REDIS_URL"}}, "SANDBOX_ENV: REDIS_URL holds a secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Main{Config: tt.cfg, Log: slog.New(slog.DiscardHandler)}
			err := m.Run(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run: %v, want an error containing %q", err, tt.want)
			}
			if m.Store != nil {
				t.Errorf("Run opened Redis before refusing the configuration")
			}
			m.Close()
		})
	}
}
