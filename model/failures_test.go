package model_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

func TestFailuresHandOver(t *testing.T) {
	cases := []struct {
		name  string
		reply modeltest.Reply
		code  string
		say   string // the error names this
	}{
		{"500", modeltest.Status(500), deskbot.EUNAVAILABLE, "500"},
		{"503", modeltest.Status(503), deskbot.EUNAVAILABLE, "503"},
		{"429", modeltest.Reply{Status: 429, ErrorMessage: "slow down"}, deskbot.EUNAVAILABLE, "429"},
		{"malformed body", modeltest.Reply{Malformed: true}, deskbot.EUNAVAILABLE, "fake:"},
		{"400", modeltest.Reply{Status: 400, ErrorMessage: "tools[0].name is invalid"}, deskbot.EINVALID, "tools[0].name is invalid"},
		{"401", modeltest.Reply{Status: 401, ErrorMessage: "bad key"}, deskbot.EINVALID, "401"},
	}
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		for _, c := range cases {
			srv.Push(c.reply)
			_, err := m.Complete(t.Context(), ask("hi"))
			wantCode(t, err, c.code)
			if msg := deskbot.ErrorMessage(err); !strings.Contains(msg, "fake:"+b.name) || !strings.Contains(msg, c.say) {
				t.Errorf("%s: message %q should name the backend and %q", c.name, msg, c.say)
			}
		}
		if got, want := len(srv.Requests()), len(cases); got != want {
			t.Errorf("requests = %d, want %d (no retries of failures)", got, want)
		}
	})
}

func TestHangTimesOut(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, _ deskbot.Model) {
		c := b.config(srv)
		c.Timeout = 150 * time.Millisecond
		m := mustNew(t, c)
		srv.Push(modeltest.Reply{Hang: true})
		start := time.Now()
		_, err := m.Complete(t.Context(), ask("hi"))
		wantCode(t, err, deskbot.EUNAVAILABLE)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("gave up after %s, want about %s", d, c.Timeout)
		}
	})
}

func TestCallerCancelIsNotAFailover(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		asked := make(chan struct{})
		srv.SetHandler(func(modeltest.Request) modeltest.Reply {
			close(asked)
			return modeltest.Reply{Hang: true}
		})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-asked // the request reached the server; the caller gives up
			cancel()
		}()
		_, err := m.Complete(ctx, ask("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		if deskbot.ErrorCode(err) == deskbot.EUNAVAILABLE {
			t.Errorf("a cancelled caller must not move the chain on: %v", err)
		}
	})
}

func TestConnectionRefused(t *testing.T) {
	addr := deskbottest.RefusedAddr(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			c := b.config(nil)
			c.BaseURL = "http://user:pass@" + addr + "/v1"
			_, err := mustNew(t, c).Complete(t.Context(), ask("hi"))
			wantCode(t, err, deskbot.EUNAVAILABLE)
			if msg := err.Error(); !strings.Contains(msg, "connection refused") || strings.Contains(msg, "pass") {
				t.Errorf("error %q: want 'connection refused' and no URL credentials", msg)
			}
		})
	}
}

func TestBrokenArgumentsRetryOnce(t *testing.T) {
	broken := modeltest.Calls(modeltest.ToolCall{ID: "c1", Name: "place_order", Arguments: `{"symbol": "INFY", "quantity": `})
	fixed := modeltest.Calls(modeltest.ToolCall{ID: "c2", Name: "place_order", Arguments: `{"symbol": "INFY", "quantity": 1}`})
	notObject := modeltest.Calls(modeltest.ToolCall{ID: "c3", Name: "place_order", Arguments: `["INFY", 1]`})
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(broken, fixed)
		got, err := m.Complete(t.Context(), ask("buy"))
		if err != nil {
			t.Fatalf("broken then fixed: %v", err)
		}
		if len(got.ToolCalls) != 1 || string(got.ToolCalls[0].Arguments) != `{"symbol": "INFY", "quantity": 1}` {
			t.Errorf("calls = %+v, want the fixed call", got.ToolCalls)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("requests = %d, want 2 (one retry)", n)
		}

		srv.Push(broken, notObject)
		_, err = m.Complete(t.Context(), ask("buy"))
		wantCode(t, err, deskbot.EUNAVAILABLE)
		if msg := deskbot.ErrorMessage(err); !strings.Contains(msg, "place_order") || !strings.Contains(msg, "fake:"+b.name) {
			t.Errorf("message %q should name the tool and the backend", msg)
		}
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("requests = %d, want 4 (exactly one retry)", n)
		}
	})
}

func TestKeyNeverInErrors(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		// A provider that echoes the key it refused, as some do.
		srv.SetHandler(func(r modeltest.Request) modeltest.Reply {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + r.Header.Get("X-Api-Key")
			code := 401
			if r.Index%2 == 1 {
				code = 500
			}
			return modeltest.Reply{Status: code, ErrorMessage: "Incorrect API key provided: " + key}
		})
		for range 2 {
			_, err := m.Complete(t.Context(), ask("hi"))
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), secretKey) || strings.Contains(deskbot.ErrorMessage(err), secretKey) {
				t.Errorf("error carries the key: %v", err)
			}
			if !strings.Contains(err.Error(), "Incorrect API key provided") {
				t.Errorf("error %q lost the provider's message", err)
			}
		}
		h := srv.LastRequest().Header
		if !strings.Contains(h.Get("Authorization")+h.Get("X-Api-Key"), secretKey) {
			t.Errorf("the key was never sent, so this test proves nothing")
		}
	})
}

func TestEnvironmentKeysNotSent(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-env-LEAK")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env-LEAK")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, _ deskbot.Model) {
		c := b.config(srv)
		c.APIKey = ""
		srv.Push(modeltest.Text("ok"))
		if _, err := mustNew(t, c).Complete(t.Context(), ask("hi")); err != nil {
			t.Fatal(err)
		}
		for k, v := range srv.LastRequest().Header {
			if strings.Contains(strings.Join(v, " "), "LEAK") {
				t.Errorf("header %s carries a key from the environment", k)
			}
		}
	})
}

// A backend logs through the logger it is given, never the process-wide
// one (which would skip the service's format, level and secret scrubber).
func TestWarningsGoToTheGivenLogger(t *testing.T) {
	var global bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&global, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })

	srv := modeltest.New(t)
	var given bytes.Buffer
	c := backends[0].config(srv)
	c.Log = slog.New(slog.NewTextHandler(&given, nil))
	m := mustNew(t, c)
	srv.Push(modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":`}),
		modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY"}`}))
	if _, err := m.Complete(t.Context(), ask("buy")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(given.String(), "malformed tool arguments") {
		t.Errorf("given logger got %q, want the warning", given.String())
	}
	if global.Len() != 0 {
		t.Errorf("process-wide logger got %q, want nothing", global.String())
	}
}
