package storetest

import (
	"context"
	"strings"
	"testing"
)

// The cleanup must delete exactly the test's own keys: Redis is shared.
func TestMustOpenCleansUpOnlyItsPrefix(t *testing.T) {
	ctx := context.Background()
	var prefix string
	other := MustOpen(t)
	if err := other.Client().Set(ctx, other.Key("keep"), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Run("inner", func(t *testing.T) {
		s := MustOpen(t)
		prefix = s.Prefix()
		for _, k := range []string{"a", "b:c"} {
			if err := s.Client().Set(ctx, s.Key(k), "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	n, err := other.Client().Keys(ctx, "{"+strings.TrimSuffix(prefix, ":")+"}*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(n) != 0 {
		t.Errorf("keys left under %s: %v", prefix, n)
	}
	if got, _ := other.Client().Exists(ctx, other.Key("keep")).Result(); got != 1 {
		t.Errorf("another test's key was deleted")
	}
}

func TestReopenSharesData(t *testing.T) {
	ctx := context.Background()
	for _, embedded := range []bool{false, true} {
		open := MustOpen
		if embedded {
			open = MustOpenEmbedded
		}
		s := open(t)
		s2 := MustReopen(t, s)
		if err := s.Client().Set(ctx, s.Key("x"), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := s2.Client().Get(ctx, s2.Key("x")).Result()
		if got != "v" || err != nil {
			t.Errorf("embedded=%v: reopened store read %q, %v; want v", embedded, got, err)
		}
		if s2.Embedded() != embedded {
			t.Errorf("embedded=%v: reopened Embedded() = %v", embedded, s2.Embedded())
		}
	}
}
