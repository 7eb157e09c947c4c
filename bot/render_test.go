package bot

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// mustPlain checks text is HTML Telegram accepts, within the limit, and
// returns what people read.
func mustPlain(t *testing.T, text string, limit int) string {
	t.Helper()
	plain, err := telegramtest.CheckHTML(text)
	if err != nil {
		t.Fatalf("Telegram would refuse %q: %v", text, err)
	}
	if n := utf16Len(plain); n > limit {
		t.Fatalf("%d characters, over %d", n, limit)
	}
	return plain
}

func heldRequest() *deskbot.Request {
	created := time.Date(2026, 3, 2, 8, 30, 0, 0, time.UTC) // 14:00 IST
	return &deskbot.Request{
		ID: reqID, Desk: "alpha", Kind: deskbot.KindPermission, State: deskbot.StateOpen,
		Content: deskbot.PermissionContent{
			ToolName:  "place_order",
			Arguments: json.RawMessage(`{"symbol": "INFY", "side":"buy", "quantity": 10, "price": 1500.50, "note": "<b>trust me</b> & go"}`),
		},
		CreatedAt: created, ExpiresAt: created.Add(5 * time.Minute),
	}
}

func TestRenderRequest(t *testing.T) {
	r := heldRequest()
	text, kb := RenderRequest(r)
	plain := mustPlain(t, text, MaxMessage)
	for _, want := range []string{
		"alpha", "place_order", reqID, "Lapses at 14:05 IST",
		`{"note":"<b>trust me</b> & go","price":1500.50,"quantity":10,"side":"buy","symbol":"INFY"}`,
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("request reads %q; missing %q", plain, want)
		}
	}
	if len(kb.InlineKeyboard) != 1 {
		t.Fatalf("%d keyboard rows, want exactly 1", len(kb.InlineKeyboard))
	}
	var labels []string
	for _, b := range kb.InlineKeyboard[0] {
		labels = append(labels, b.Text)
		if a, arg, err := ParseCallback(CallbackData(b.Unique, b.Data)); err != nil || arg != reqID {
			t.Errorf("button %q carries %q %q (%v)", b.Text, a, arg, err)
		}
	}
	if want := []string{"Allow once", "Always allow", "Deny"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	// telebot rewrites the markup it sends: the next call must not share it.
	kb.InlineKeyboard[0][0].Data = "\f" + kb.InlineKeyboard[0][0].Data
	if _, kb2 := RenderRequest(r); kb2.InlineKeyboard[0][0].Data != reqID {
		t.Errorf("second keyboard shares the first's buttons")
	}
}

func TestRenderRequestTrimsLongArguments(t *testing.T) {
	r := heldRequest()
	r.Content.Arguments = json.RawMessage(`{"a_script":"` + strings.Repeat("echo <x> && ", 5000) + `","list":[` + strings.Repeat(`"aaaaaaaaaa",`, 900) + `"z"]}`)
	text, _ := RenderRequest(r)
	plain := mustPlain(t, text, MaxMessage)
	if !strings.Contains(plain, "echo <x> && echo") || !strings.Contains(plain, "…") {
		t.Errorf("long arguments not shown trimmed: %.300q", plain)
	}
	// Even trimmed to the full, the outcome still fits one message.
	r.State, r.Decision, r.DecidedBy, r.DecidedAt = deskbot.StateFailed, deskbot.AllowOnce, "Asha", r.CreatedAt
	r.Result = &deskbot.ToolResult{Text: strings.Repeat("<error> ", 2000), IsError: true}
	mustPlain(t, RenderOutcome(r), MaxMessage)
}

func TestRenderOutcome(t *testing.T) {
	at := time.Date(2026, 3, 2, 8, 32, 0, 0, time.UTC) // 14:02 IST
	decided := func(state deskbot.RequestState, d deskbot.Decision, result *deskbot.ToolResult, reason string) *deskbot.Request {
		r := heldRequest()
		r.State, r.Decision, r.DecidedBy, r.DecidedAt, r.Result, r.Reason = state, d, "Asha <admin>", at, result, reason
		return r
	}
	tests := []struct {
		name string
		r    *deskbot.Request
		want []string
	}{
		{"running", decided(deskbot.StateRunning, deskbot.AllowOnce, nil, ""), []string{"Allowed once by Asha <admin> at 14:02 IST", "running…"}},
		{"ran", decided(deskbot.StateRan, deskbot.AlwaysAllow, &deskbot.ToolResult{Text: "filled 10 INFY @ 1500.50"}, ""), []string{"Always allowed by Asha <admin> at 14:02 IST. Ran", "filled 10 INFY"}},
		{"failed", decided(deskbot.StateFailed, deskbot.AllowOnce, &deskbot.ToolResult{Text: "<rejected>: margin", IsError: true}, ""), []string{"Failed", "<rejected>: margin"}},
		{"interrupted", decided(deskbot.StateInterrupted, deskbot.AllowOnce, nil, ""), []string{"outcome unknown", "will not be run again"}},
		{"denied", decided(deskbot.StateDenied, deskbot.Deny, nil, ""), []string{"Denied by Asha <admin> at 14:02 IST."}},
		{"denied with reason", decided(deskbot.StateDenied, deskbot.Deny, nil, "too big, <i>halve</i> it"), []string{"Reason: too big, <i>halve</i> it"}},
		{"lapsed", func() *deskbot.Request { r := heldRequest(); r.State = deskbot.StateLapsed; return r }(), []string{"Lapsed at 14:05 IST, not run."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := mustPlain(t, RenderOutcome(tt.r), MaxMessage)
			for _, w := range append(tt.want, "place_order", reqID) {
				if !strings.Contains(plain, w) {
					t.Errorf("outcome reads %q; missing %q", plain, w)
				}
			}
			if strings.Contains(plain, "Lapses at") {
				t.Errorf("a decided request still says when it lapses: %q", plain)
			}
		})
	}
}

func TestRenderDeskMessages(t *testing.T) {
	prose := strings.Repeat("The book is long INFY and short TCS as a hedge. ", 20) + "\n\n"
	para := strings.Repeat("The book is long INFY & short TCS <hedge>. ", 20) + "\n\n"
	tests := []struct {
		name      string
		text      string
		parts     int
		trimmed   bool
		wholeText bool
	}{
		{"short", "bought <b>10</b> INFY", 1, false, true},
		{"empty", "  ", 1, false, false},
		{"ten thousand characters", strings.Repeat(prose, 10000/len(prose)+1)[:10000], 3, false, true},
		// Escapes count at their escaped length: more parts, still whole.
		{"ten thousand with markup", strings.Repeat(para, 10000/len(para)+1)[:10000], 4, false, true},
		{"one long word", strings.Repeat("x", 9000), 3, false, true},
		{"runaway", strings.Repeat(para, 60), 5, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := RenderDeskMessages("alpha", tt.text)
			if len(msgs) != tt.parts {
				t.Fatalf("%d messages, want %d", len(msgs), tt.parts)
			}
			var got strings.Builder
			for i, m := range msgs {
				plain := mustPlain(t, m, MaxMessage)
				head, body, _ := strings.Cut(plain, "\n")
				if !strings.Contains(head, "alpha") {
					t.Errorf("part %d not labelled with the desk: %q", i+1, head)
				}
				got.WriteString(body)
			}
			if tt.wholeText && got.String() != tt.text {
				t.Errorf("text did not arrive whole: got %d characters, want %d", len(got.String()), len(tt.text))
			}
			if strings.Contains(got.String(), "more characters not shown") != tt.trimmed {
				t.Errorf("trimmed note present = %v, want %v", !tt.trimmed, tt.trimmed)
			}
		})
	}
}
