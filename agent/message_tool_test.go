package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

func mustFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("\x89PNG"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSendMessage(t *testing.T) {
	st := storetest.MustOpen(t)
	data := t.TempDir()
	deskDir := filepath.Join(data, "desks", "main")
	mustFile(t, filepath.Join(deskDir, "charts", "pnl.png"))
	mustFile(t, filepath.Join(data, "desks", "other", "secret.png"))
	mustFile(t, filepath.Join(data, "outside.png"))
	if err := os.Symlink(filepath.Join(data, "outside.png"), filepath.Join(deskDir, "link.png")); err != nil {
		t.Fatal(err)
	}
	tool := &agent.MessageTool{Events: st, DataDir: data, Now: func() time.Time { return deskbottest.FixedNow }}

	tests := []struct {
		name, args  string
		wantErr     string // "" for success
		wantPicture string // relative to the desk's folder
	}{
		{"text", `{"text":"P&L is +120.00"}`, "", ""},
		{"picture", `{"text":"Today","picture":"charts/pnl.png"}`, "", "charts/pnl.png"},
		{"dot segments inside", `{"text":"x","picture":"charts/../charts/pnl.png"}`, "", "charts/pnl.png"},
		{"escape", `{"text":"x","picture":"../other/secret.png"}`, "stays inside it", ""},
		{"deep escape", `{"text":"x","picture":"charts/../../../outside.png"}`, "stays inside it", ""},
		{"absolute", `{"text":"x","picture":"` + filepath.Join(data, "outside.png") + `"}`, "relative to your folder", ""},
		{"symlink out", `{"text":"x","picture":"link.png"}`, "leads outside your folder", ""},
		{"missing", `{"text":"x","picture":"nope.png"}`, "no file 'nope.png'", ""},
		{"directory", `{"text":"x","picture":"charts"}`, "not a regular file", ""},
		{"empty", `{"text":"  "}`, "non-empty text", ""},
		{"unknown field", `{"text":"x","photo":"a.png"}`, "unknown field", ""},
		{"not an object", `["x"]`, "send_message takes", ""},
		{"too long", `{"text":"` + strings.Repeat("x", 4001) + `"}`, "too long", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tool.Run(t.Context(), "main", json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Text, tt.wantErr) {
					t.Errorf("result = %+v, want a tool error containing %q", res, tt.wantErr)
				}
				return
			}
			if res.IsError {
				t.Fatalf("result = %+v, want success", res)
			}
			want := ""
			if tt.wantPicture != "" {
				root, _ := filepath.EvalSymlinks(deskDir)
				want = filepath.Join(root, tt.wantPicture)
			}
			if res.Picture != want {
				t.Errorf("picture = %q, want %q", res.Picture, want)
			}
		})
	}
	// Exactly the successful calls reached the event stream.
	evs, err := st.ReadEvents(t.Context(), "test", "t", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	if e := evs[1]; e.Kind != deskbot.EventDeskMessage || e.Desk != "main" || e.Text != "Today" || !strings.HasSuffix(e.Picture, "/desks/main/charts/pnl.png") {
		t.Errorf("event = %+v", e)
	}
}

type backlog map[string]int

func (b backlog) ChatBacklog(desk string) int { return b[desk] }

// A desk with its share of messages still waiting is told to wait, and
// its message is not published; another desk still speaks.
func TestSendMessageOverShareWaits(t *testing.T) {
	st := storetest.MustOpen(t)
	tool := agent.MessageTools(st, t.TempDir(), time.Now, backlog{"chatty": agent.ChatShare})("")[0]
	tests := []struct {
		desk    string
		wantErr string
	}{
		{desk: "chatty", wantErr: "was NOT sent"},
		{desk: "quiet"},
	}
	for _, tt := range tests {
		res, err := tool.Run(t.Context(), tt.desk, json.RawMessage(`{"text":"hello"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.IsError && strings.Contains(res.Text, tt.wantErr); tt.wantErr != "" && !got {
			t.Errorf("%s: result %+v; want a tool error with %q", tt.desk, res, tt.wantErr)
		}
		if tt.wantErr == "" && res.IsError {
			t.Errorf("%s: result %+v; want it sent", tt.desk, res)
		}
	}
	evs, err := st.ReadEvents(t.Context(), "test", "t", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Desk != "quiet" {
		t.Errorf("published %+v; want only the quiet desk's message", evs)
	}
}
