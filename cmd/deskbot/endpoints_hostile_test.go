package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/model/modeltest"
)

// What the service serves over HTTP without a sign-in (/healthz, /metrics,
// the desks page's shell and assets) and what its chat says when things
// fail never carry a secret: not the bot token (whole or its part after
// the colon), not a model's API key, however the desks and the model
// fail first.
func TestHostileServedPagesCarryNoSecret(t *testing.T) {
	t.Parallel()
	const apiKey = "sk-model-key-never-shown-0042"
	s := startWithPage(t, map[string]string{"MODEL_API_KEY": apiKey})
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Status: 401, ErrorMessage: "Incorrect API key provided: " + apiKey}
	})
	s.tg.InjectText(asha, groupID, "/tell main hello", 0)
	s.mustBotMessage(t, "the model's failure told", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "401")
	})
	secrets := []string{testToken, config.TokenSecret(testToken), apiKey}
	for _, p := range []string{"/healthz", "/metrics", pagePath, pagePath + "assets/app.js"} {
		resp, err := http.Get("http://" + s.main.HTTP.Addr() + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, sec := range secrets {
			if strings.Contains(string(b), sec) {
				t.Errorf("%s carries a secret (%.6s…)", p, sec)
			}
		}
	}
	for _, m := range s.tg.ChatMessages(groupID) {
		for _, sec := range secrets {
			if strings.Contains(m.Plain, sec) {
				t.Errorf("the chat carries a secret (%.6s…): %q", sec, m.Plain)
			}
		}
	}
	if strings.Contains(s.logs.String(), apiKey) {
		t.Errorf("the model's API key reached the logs")
	}
}
