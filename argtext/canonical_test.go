package argtext_test

import (
	"encoding/json"
	"testing"

	"github.com/deskbot/deskbot/argtext"
)

func TestCanonicalArguments(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{``, `{}`},
		{`  `, `{}`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{ "a" : { "z":1, "y":[2, 1] } }`, `{"a":{"y":[2,1],"z":1}}`},
		// Numbers keep their exact text: 24512.123456789012 must not round.
		{`{"price":24512.123456789012,"q":1e3}`, `{"price":24512.123456789012,"q":1e3}`},
		{`{"broken":`, `{"broken":`},
	}
	for _, tt := range tests {
		if got := argtext.Canonical(json.RawMessage(tt.in)); got != tt.want {
			t.Errorf("argtext.Canonical(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
