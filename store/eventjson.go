package store

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
)

// appendStoredEvent appends se's JSON exactly as encoding/json writes it
// (the same fields, order, omissions and escaping, byte for byte: a
// test and a fuzz test compare the two), without json.Marshal's
// reflection and its copies: every hold, decision and turn writes
// events. The rare parts (a grant) are still written by encoding/json.
func appendStoredEvent(b []byte, se *storedEvent) ([]byte, error) {
	b = append(b, `{"k":`...)
	b = appendJSONString(b, string(se.Kind))
	if se.Desk != "" {
		b = appendJSONString(append(b, `,"d":`...), se.Desk)
	}
	b = strconv.AppendInt(append(b, `,"m":`...), se.Time, 10)
	if se.TriggerID != "" {
		b = appendJSONString(append(b, `,"g":`...), se.TriggerID)
	}
	if se.RequestID != "" {
		b = appendJSONString(append(b, `,"r":`...), se.RequestID)
	}
	if c := se.Call; c != nil {
		b = append(b, `,"c":{`...)
		if c.ID != "" {
			b = append(appendJSONString(append(b, `"i":`...), c.ID), ',')
		}
		b = appendJSONString(append(b, `"n":`...), c.Name)
		if len(c.Arguments) > 0 {
			var err error
			if b, err = appendRawJSON(append(b, `,"a":`...), c.Arguments); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if r := se.Result; r != nil {
		b = append(b, `,"o":{`...)
		n := len(b)
		if r.Text != "" {
			b = appendJSONString(append(b, `"x":`...), r.Text)
		}
		b = appendJSONBool(b, n, "e", r.IsError)
		if r.Picture != "" {
			b = appendJSONString(append(comma(b, n), `"p":`...), r.Picture)
		}
		b = appendJSONBool(b, n, "h", r.Held)
		b = append(b, '}')
	}
	if se.Text != "" {
		b = appendJSONString(append(b, `,"x":`...), se.Text)
	}
	if se.Picture != "" {
		b = appendJSONString(append(b, `,"p":`...), se.Picture)
	}
	if se.Grant != nil {
		g, err := json.Marshal(se.Grant)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"gr":`...), g...)
	}
	if se.Hold != "" {
		b = appendJSONString(append(b, `,"h":`...), se.Hold)
	}
	if se.CallID != "" {
		b = appendJSONString(append(b, `,"i":`...), se.CallID)
	}
	if se.TriggerOfRequest {
		b = append(b, `,"t":true`...)
	}
	return append(b, '}'), nil
}

// appendTrigger appends tr's JSON exactly as encoding/json writes a
// deskbot.Trigger (a test and a fuzz test compare the two): every
// result of an allowed call and every denial carries one to the desk's
// inbox. A time json.Marshal refuses (a year outside 0 to 9999) is left
// to it, for its error.
func appendTrigger(b []byte, tr *deskbot.Trigger) ([]byte, error) {
	if y := tr.CreatedAt.Year(); y < 0 || y > 9999 {
		m, err := json.Marshal(tr)
		return append(b, m...), err
	}
	b = appendJSONString(append(b, `{"id":`...), tr.ID)
	b = appendJSONString(append(b, `,"desk":`...), tr.Desk)
	b = appendJSONString(append(b, `,"kind":`...), string(tr.Kind))
	b = appendJSONString(append(b, `,"text":`...), tr.Text)
	if tr.From != "" {
		b = appendJSONString(append(b, `,"from":`...), tr.From)
	}
	if tr.RequestID != "" {
		b = appendJSONString(append(b, `,"request_id":`...), tr.RequestID)
	}
	b = tr.CreatedAt.AppendFormat(append(b, `,"created_at":"`...), time.RFC3339Nano)
	return append(b, `"}`...), nil
}

// appendToolResult appends r's JSON exactly as encoding/json writes a
// deskbot.ToolResult (compared as appendTrigger is): every run of an
// allowed call stores one.
func appendToolResult(b []byte, r *deskbot.ToolResult) []byte {
	b = appendJSONString(append(b, `{"text":`...), r.Text)
	if r.IsError {
		b = append(b, `,"is_error":true`...)
	}
	if r.Picture != "" {
		b = appendJSONString(append(b, `,"picture":`...), r.Picture)
	}
	if r.Held {
		b = append(b, `,"held":true`...)
	}
	if r.Limit {
		b = append(b, `,"limit":true`...)
	}
	return append(b, '}')
}

// comma adds the comma before a field of an object that began at n,
// unless the field is its first.
func comma(b []byte, n int) []byte {
	if len(b) > n {
		return append(b, ',')
	}
	return b
}

// appendJSONBool adds `"name":true` when v (an omitempty bool).
func appendJSONBool(b []byte, n int, name string, v bool) []byte {
	if !v {
		return b
	}
	b = append(comma(b, n), '"')
	return append(append(b, name...), `":true`...)
}

// appendRawJSON adds raw (valid JSON) as encoding/json writes a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped. A
// raw value that has none of them, nor any space to take out, is already
// that: the common case, copied as it is.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, error) {
	plain := true
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			plain = false
		}
		if !plain {
			break
		}
	}
	if plain {
		if !json.Valid(raw) {
			return nil, &json.SyntaxError{}
		}
		return append(b, raw...), nil
	}
	m, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString adds s as encoding/json writes a string (HTML escaping
// on, as json.Marshal has it): quoted; ", \ and control characters
// escaped (\b, \f, \n, \r, \t by their letters, the rest as \u00XX); <, >
// and & as \u003c, \u003e, \u0026; U+2028 and U+2029 as \u2028, \u2029;
// each byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
