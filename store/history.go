package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
)

// decodeHistory decodes a desk's history entries. A desk reads its whole
// history (some forty entries) at the start of every turn, and nearly every
// entry is as this store writes a turn's two messages: {"role":…,"content":…}
// with text. Those are read directly, their content shared with the reply
// when it has no escapes; any other entry (tool calls, other keys or order,
// a surrogate pair, invalid UTF-8) is decoded by encoding/json, and every
// entry reads as json.Unmarshal reads it.
func decodeHistory(key string, vals []string) ([]deskbot.Message, error) {
	out := make([]deskbot.Message, len(vals))
	for i, v := range vals {
		if m, ok := plainMessage(v); ok {
			out[i] = m
			continue
		}
		if err := json.Unmarshal([]byte(v), &out[i]); err != nil {
			return nil, fmt.Errorf("store: decode %s entry: %w", key, err)
		}
	}
	return out, nil
}

// plainMessage reads v when it is exactly {"role":"…"} or
// {"role":"…","content":"…"} as encoding/json writes them, with strings of
// valid UTF-8 and escapes other than a surrogate pair; ok is false for
// anything else.
func plainMessage(v string) (m deskbot.Message, ok bool) {
	if !utf8.ValidString(v) {
		return m, false // encoding/json replaces bad bytes
	}
	rest, ok := strings.CutPrefix(v, `{"role":`)
	if !ok {
		return m, false
	}
	if m.Role, rest, ok = plainString(rest); !ok {
		return m, false
	}
	if rest == "}" {
		return m, true
	}
	if rest, ok = strings.CutPrefix(rest, `,"content":`); !ok {
		return m, false
	}
	if m.Content, rest, ok = plainString(rest); !ok || rest != "}" {
		return deskbot.Message{}, false
	}
	return m, true
}

// plainString reads the JSON string at the start of s, which is valid
// UTF-8, and returns it and what follows it; ok is false when s does not
// start with one that plainMessage accepts.
func plainString(s string) (str, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", "", false
	}
	var b []byte // the string unescaped, once an escape is met
	start := 1
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			str = s[start:i]
			if b != nil {
				str = string(append(b, str...))
			}
			return str, s[i+1:], true
		case c < 0x20:
			return "", "", false // not JSON: encoding/json says why
		case c == '\\':
			if i+1 == len(s) {
				return "", "", false
			}
			if b == nil {
				b = make([]byte, 0, len(s)) // s is the string and what follows it: room enough
			}
			var r byte
			switch s[i+1] {
			case '"', '\\', '/':
				r = s[i+1]
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			case 'u':
				// encoding/json writes <, > and & so: a turn's note
				// "tool {…} -> result" has one.
				if i+6 > len(s) {
					return "", "", false
				}
				u, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
				if err != nil || utf16.IsSurrogate(rune(u)) {
					return "", "", false // half of a pair, or not four hex digits
				}
				b = utf8.AppendRune(append(b, s[start:i]...), rune(u))
				i += 5
				start = i + 1
				continue
			default:
				return "", "", false
			}
			b = append(append(b, s[start:i]...), r)
			i++
			start = i + 1
		}
	}
	return "", "", false
}
