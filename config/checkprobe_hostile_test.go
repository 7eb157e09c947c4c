package config

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// A model provider is not trusted with the bytes of its replies, and the
// model list it answers deskbot check with is printed on the operator's
// terminal. A hostile list (escape sequences that rewrite the screen or set
// the clipboard, a newline that forges a check line) reaches the output
// escaped: no control character, no extra line.
func TestHostileModelListCannotWriteTheTerminal(t *testing.T) {
	ids := []string{
		"\x1b[2K\rmodel openai:qwen3  ok      serves qwen3",
		"x\ndeskbot would start.",
		"\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
		"\u202eevil",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var list struct {
			Data []map[string]string `json:"data"`
		}
		for _, id := range ids {
			list.Data = append(list.Data, map[string]string{"id": id})
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	env := configtest.GoodEnv(t)
	env["MODEL_BASE_URL"] = srv.URL + "/v1"
	_, out, _ := configtest.CheckOut(t, RunCheck, env)
	if strings.ContainsAny(out, "\x1b\x07\r\u202e") {
		t.Errorf("check printed the provider's control characters:\n%q", out)
	}
	forged := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "deskbot would start.") || strings.HasPrefix(l, "model openai:qwen3  ok") {
			forged++
		}
	}
	if forged > 1 {
		t.Errorf("the provider's model list forged a line of check's output:\n%s", out)
	}
}
