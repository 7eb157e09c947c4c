package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Every variable the service reads is in the README's table and in
// .env.example with its default, so a newcomer never meets an undocumented
// setting; and the README keeps the two commands .ci/run relies on.
func TestVariablesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if !f.IsExported() {
			continue // not read from the environment
		}
		name := strings.Split(f.Tag.Get("env"), ",")[0]
		if !strings.Contains(string(readme), "| `"+name+"` |") {
			t.Errorf("README's variable table has no %s", name)
		}
		m := regexp.MustCompile(`(?m)^` + name + `=(.*)$`).FindStringSubmatch(string(example))
		if m == nil {
			t.Errorf(".env.example has no %s= line", name)
			continue
		}
		if def, ok := f.Tag.Lookup("envDefault"); ok && m[1] != def {
			t.Errorf(".env.example: %s=%s, but the default is %q", name, m[1], def)
		}
	}
	for _, cmd := range []string{"go run ./cmd/deskbot", "go test ./..."} {
		if !strings.Contains(string(readme), cmd) {
			t.Errorf("README lacks %q", cmd)
		}
	}
}
