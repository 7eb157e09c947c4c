package ops_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/ops"
)

// toolCall has the shape of a logged call: its arguments are raw JSON.
type toolCall struct {
	Name      string
	Arguments json.RawMessage
}

// A secret inside raw JSON held by a struct or a map is scrubbed from a
// LOG_FORMAT=json log, which writes that JSON as it is (its %+v text shows
// it as byte values, where no secret can be seen).
func TestSecretInsideRawJSONOfAStructIsScrubbed(t *testing.T) {
	const token = "kiteAccessToken0123456789abcdef"
	values := []slog.Attr{
		slog.Any("call", toolCall{Name: "bash", Arguments: json.RawMessage(`{"command":"echo ` + token + `"}`)}),
		slog.Any("fields", map[string]json.RawMessage{"symbol": json.RawMessage(`"` + token + `"`)}),
	}
	for _, a := range values {
		var b strings.Builder
		r := ops.NewRedactor()
		log := ops.NewLogger(&b, "json", "info", r)
		r.Add(token)
		log.Info("tool call", a)
		if got := b.String(); strings.Contains(got, token) {
			t.Errorf("the access token reached the JSON log through %s: %s", a.Key, got)
		}
	}
}
