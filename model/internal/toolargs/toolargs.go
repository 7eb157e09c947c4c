// Package toolargs checks the arguments a model gave for a tool call. It is
// apart from package model so that fuzzing it does not instrument the
// provider SDKs.
package toolargs

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
)

// Parse returns the model's arguments unchanged if they are one JSON object
// ("" or blank means {}). Duplicate top-level keys and invalid UTF-8 are
// refused too: readers of such text disagree on what it says, and a person
// approving a call must see exactly what will run. The error's message
// completes "arguments of tool call X ...".
func Parse(s string) (json.RawMessage, error) {
	b := []byte(s)
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	if trimmed[0] != '{' || !utf8.Valid(b) || !json.Valid(b) {
		return nil, deskbot.Errorf(deskbot.EINVALID, "are not a JSON object")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.Token() // the opening brace
	keys := make(map[string]bool)
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, deskbot.Errorf(deskbot.EINVALID, "are not a JSON object")
		}
		k, _ := t.(string)
		if keys[k] {
			return nil, deskbot.Errorf(deskbot.EINVALID, "repeat the key %q", k)
		}
		keys[k] = true
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, deskbot.Errorf(deskbot.EINVALID, "are not a JSON object")
		}
	}
	return json.RawMessage(b), nil
}
