package broker_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/broker"
	"github.com/google/uuid"
)

func TestTag(t *testing.T) {
	id := "3f2b8c1e-9a4d-4e7f-b6c5-0123456789ab"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"uuid", id, "db3f2b8c1e9a4d4e7fb6"},
		{"uuid upper case", strings.ToUpper(id), "db3f2b8c1e9a4d4e7fb6"},
		{"not hex", "not-a-uuid-at-all-ok", ""},
		{"short", "abc", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := broker.Tag(tc.in)
			if tc.want != "" && got != tc.want {
				t.Errorf("Tag(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if len(got) != broker.MaxTagLen || !kiteTag(got) {
				t.Errorf("Tag(%q) = %q: want %d letters and digits", tc.in, got, broker.MaxTagLen)
			}
			if again := broker.Tag(tc.in); again != got {
				t.Errorf("Tag(%q) is not deterministic: %q then %q", tc.in, got, again)
			}
		})
	}
	seen := map[string]bool{}
	for range 20000 {
		tag := broker.Tag(uuid.NewString())
		if seen[tag] {
			t.Fatalf("two random keys gave the tag %s", tag)
		}
		seen[tag] = true
	}
}

// kiteTag is Kite's rule for a tag: 1 to 20 letters and digits.
var kiteTag = regexp.MustCompile(`^[A-Za-z0-9]{1,20}$`).MatchString
