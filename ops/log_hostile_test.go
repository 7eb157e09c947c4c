package ops_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/ops"
)

type creds struct {
	User, Password string
}

// The log scrubber is the second line of defence: whatever shape a value
// carrying a secret has when it reaches a log line (a string, an error, a
// byte slice, a list, a map, a struct, a group), the secret never reaches
// the log's output, in either format.
func TestHostileSecretInAnyLoggedValue(t *testing.T) {
	const secret = "7318554406:AAHs3cr3t-bot-token-value"
	values := []struct {
		name string
		attr slog.Attr
	}{
		{"message", slog.String("msg2", "x")},
		{"string", slog.String("v", "token="+secret)},
		{"error", slog.Any("err", errors.New("Post https://api.telegram.org/bot"+secret+"/getMe: EOF"))},
		{"wrapped error", slog.Any("err", fmt.Errorf("send: %w", &url.Error{Op: "Post", URL: "https://api.telegram.org/bot" + secret + "/x", Err: errors.New("EOF")}))},
		{"bytes", slog.Any("body", []byte(`{"token":"`+secret+`"}`))},
		{"strings", slog.Any("argv", []string{"--token", secret})},
		{"map", slog.Any("env", map[string]string{"TELEGRAM_TOKEN": secret})},
		{"struct", slog.Any("creds", creds{User: "bot", Password: secret})},
		{"pointer to struct", slog.Any("creds", &creds{User: "bot", Password: secret})},
		{"group", slog.Group("g", slog.String("inner", secret))},
	}
	for _, format := range []string{"text", "json"} {
		for _, v := range values {
			t.Run(format+"/"+v.name, func(t *testing.T) {
				var b strings.Builder
				log := ops.NewLogger(&b, format, "debug", ops.NewRedactor(secret))
				msg := "plain"
				if v.name == "message" {
					msg = "token is " + secret
				}
				log.Info(msg, v.attr)
				if got := b.String(); strings.Contains(got, secret) || strings.Contains(got, "AAHs3cr3t") {
					t.Errorf("the secret reached the log: %s", got)
				}
			})
		}
	}
}

// A secret the service comes to hold while it runs (the broker's daily
// access token) is scrubbed from every line written once it is added, by
// the logger built at the start.
func TestLoggerScrubsASecretLearntLater(t *testing.T) {
	const token = "kiteAccessToken0123456789abcdef"
	var b strings.Builder
	r := ops.NewRedactor("another-secret")
	log := ops.NewLogger(&b, "text", "info", r)
	r.Add(token)
	r.Add(token)
	log.Info("kite answered", "err", errors.New("Authorization: token key:"+token))
	if got := b.String(); strings.Contains(got, token) || !strings.Contains(got, "[redacted]") {
		t.Errorf("the access token learnt after the start reached the log: %s", got)
	}
}
