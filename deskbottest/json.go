package deskbottest

import (
	"encoding/json"
	"testing"
)

// MustJSON is v as encoding/json writes it, failing the test when it
// cannot be: what a test compares a hand encoder or a wire body with.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
