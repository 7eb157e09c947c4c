// Package toolargs checks the arguments a model gave for a tool call. It is
// apart from package model so that fuzzing it does not instrument the
// provider SDKs.
package toolargs

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// Parse returns the model's arguments unchanged if they are one JSON object
// ("" or blank means {}). Keys given twice (argtext.RepeatedKey) and invalid UTF-8 are
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
	if first, _, found := argtext.RepeatedKey(b); found {
		return nil, deskbot.Errorf(deskbot.EINVALID, "repeat the key %q", first)
	}
	return json.RawMessage(b), nil
}
