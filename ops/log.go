package ops

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Redactor holds the values no log line may carry: the configuration's
// secrets from the start, and those the service comes to hold while it
// runs (the broker's daily access token) as they come. Safe for
// concurrent use; a value shorter than 8 bytes is not kept, since it would
// redact ordinary words.
type Redactor struct {
	mu   sync.RWMutex
	keep []string
}

// NewRedactor holds secrets.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		r.Add(s)
	}
	return r
}

// Add holds s too; holding it again changes nothing, under a read lock
// only (the Kite login adds the token at each read of its session). A nil
// Redactor holds nothing.
func (r *Redactor) Add(s string) {
	if r == nil || len(s) < 8 {
		return
	}
	r.mu.RLock()
	held := slices.Contains(r.keep, s)
	r.mu.RUnlock()
	if held {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.keep, s) {
		r.keep = append(r.keep, s)
	}
}

// Scrub is s with every held value replaced by "[redacted]".
func (r *Redactor) Scrub(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range r.keep {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}

// NewLogger builds the service's logger: text or JSON (LOG_FORMAT) at
// level (LOG_LEVEL). Every value it writes (a string, an error, and the
// text of bytes, lists, maps and structs) is scrubbed of what r holds, as
// it holds it when the line is written: a second line of defence behind
// the parts that never log them (a library error that quotes a URL must
// not leak the bot token). A nil r scrubs nothing.
func NewLogger(w io.Writer, format, level string, r *Redactor) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if r != nil {
		scrub := r.Scrub
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
					// keep their shape in JSON logs. Both texts are read:
					// %+v shows raw JSON inside as byte values, while the
					// JSON handler writes it as it is.
					a.Value = scrubbedText(a.Value, fmt.Sprintf("%+v", v), scrub)
					if a.Value.Kind() == slog.KindAny {
						if b, err := json.Marshal(v); err == nil {
							a.Value = scrubbedText(a.Value, string(b), scrub)
						}
					}
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
