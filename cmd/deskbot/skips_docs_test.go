package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// storeSkips finds, in store's tests, the test functions a machine without
// Redis skips: those that ask for a real Redis (storetest.NeedsRealRedis,
// by the command the embedded one lacks) and those that start Redis
// servers of their own (storetest.Start*, skipped with no redis-server on
// PATH). Benchmarks are left out: go test ./... does not run them.
func storeSkips(t *testing.T) (lacks []string, servers int) {
	t.Helper()
	files, err := filepath.Glob("../../store/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			startsServer := false
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !isIdent(sel.X, "storetest") {
					return true
				}
				switch {
				case sel.Sel.Name == "NeedsRealRedis" && len(call.Args) == 2:
					lacks = append(lacks, leadingCommand(t, call.Args[1]))
				case strings.HasPrefix(sel.Sel.Name, "Start"):
					startsServer = true
				}
				return true
			})
			if startsServer {
				servers++
			}
		}
	}
	slices.Sort(lacks)
	return lacks, servers
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// leadingCommand is the Redis command a feature's words start with
// ("OBJECT ENCODING (it has…" is OBJECT ENCODING).
func leadingCommand(t *testing.T, e ast.Expr) string {
	t.Helper()
	for {
		b, ok := e.(*ast.BinaryExpr)
		if !ok {
			break
		}
		e = b.X
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		t.Fatalf("NeedsRealRedis's feature is not a string literal at %T", e)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile(`^[A-Z]+( [A-Z]+)?\b`).FindString(s)
	if cmd == "" {
		t.Fatalf("feature %q does not start with the Redis command the embedded one lacks", s)
	}
	return cmd
}

// README's table of what go test ./... skips stays true: its "no Redis" row
// names exactly the commands the embedded Redis lacks that store's tests
// skip for, and counts the tests that start Redis servers of their own.
func TestREADMESaysWhatIsSkippedWithoutRedis(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| no Redis \|.*$`).FindString(string(readme))
	if row == "" {
		t.Fatal(`README has no "| no Redis |" row in its table of what go test ./... covers`)
	}
	lacks, servers := storeSkips(t)
	var named []string
	for _, m := range regexp.MustCompile("`([A-Z]+( [A-Z]+)?)`").FindAllStringSubmatch(row, -1) {
		named = append(named, m[1])
	}
	slices.Sort(named)
	if !slices.Equal(named, lacks) {
		t.Errorf("README's no-Redis row names the commands %q; store's tests skip for %q", named, lacks)
	}
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	if servers >= len(words) {
		t.Fatalf("%d tests start Redis servers: teach this test the number", servers)
	}
	if want := "the " + words[servers] + " tests in `store` that start Redis servers of their own"; !strings.Contains(row, want) {
		t.Errorf("README's no-Redis row does not say %q", want)
	}
}
