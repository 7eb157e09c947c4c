package ops

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// NewLogger builds the service's logger: text or JSON (LOG_FORMAT) at
// level (LOG_LEVEL). Every value it writes (a string, an error, and the
// text of bytes, lists, maps and structs) is scrubbed of the given
// secrets, a second line of defence behind the parts that never log them:
// a library error that quotes a URL must not leak the bot token.
func NewLogger(w io.Writer, format, level string, secrets ...string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	var keep []string
	for _, s := range secrets {
		if len(s) >= 8 { // a short value would redact ordinary words
			keep = append(keep, s)
		}
	}
	opts := &slog.HandlerOptions{Level: lv}
	if len(keep) > 0 {
		scrub := func(s string) string {
			for _, k := range keep {
				s = strings.ReplaceAll(s, k, "[redacted]")
			}
			return s
		}
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			switch a.Value.Kind() {
			case slog.KindString:
				a.Value = slog.StringValue(scrub(a.Value.String()))
			case slog.KindAny:
				switch v := a.Value.Any().(type) {
				case error:
					a.Value = slog.StringValue(scrub(v.Error()))
				case interface{ String() string }:
					a.Value = slog.StringValue(scrub(v.String()))
				case []byte:
					a.Value = scrubbedText(a.Value, string(v), scrub)
				case json.RawMessage:
					a.Value = scrubbedText(a.Value, string(v), scrub)
				default:
					// Lists, maps, structs: the handler would print
					// their fields. Only a value that carries a secret
					// is replaced (by its scrubbed text), so the others
					// keep their shape in JSON logs.
					a.Value = scrubbedText(a.Value, fmt.Sprintf("%+v", v), scrub)
				}
			}
			return a
		}
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// scrubbedText is v as it is when its text carries no secret, else the
// scrubbed text in its place.
func scrubbedText(v slog.Value, text string, scrub func(string) string) slog.Value {
	if clean := scrub(text); clean != text {
		return slog.StringValue(clean)
	}
	return v
}
