package ops

import (
	"io"
	"log/slog"
	"strings"
)

// NewLogger builds the service's logger: text or JSON (LOG_FORMAT) at
// level (LOG_LEVEL). Every string and error value it writes is scrubbed of
// the given secrets, a second line of defence behind the parts that never
// log them: a library error that quotes a URL must not leak the bot token.
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
