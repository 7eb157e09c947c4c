package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/sandbox"
)

func TestFolderAndVariablesCarryOver(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		s := mustSession(t, mustManager(t, testConfig(t, mode)), "main")
		mustOutput(t, s, "mkdir -p sub && cd sub")
		mustOutput(t, s, "export PRICE=42; LOT=7; declare -a SIDES=(buy sell); f() { echo fn; }")
		got := mustOutput(t, s, `pwd; echo "$PRICE $LOT ${SIDES[1]}"; f; bash -c 'echo child:$PRICE'`)
		want := filepath.Join(s.Dir(), "sub") + "\n42 7 sell\nfn\nchild:42\n"
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

func TestInputIsDevNull(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		s := mustSession(t, mustManager(t, testConfig(t, mode)), "main")
		// If read took its input from the shell's pipe it would swallow
		// the marker line or the next command.
		r := mustRun(t, s, `read x; echo "read:$x"; cat; echo after-cat`)
		if got, want := r.Text, "read:\nafter-cat\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		if got, want := mustOutput(t, s, "echo next"), "next\n"; got != want {
			t.Errorf("next command: got %q, want %q", got, want)
		}
	})
}

func TestOutputEndsOnlyAtTheRealMarker(t *testing.T) {
	s := mustSession(t, mustManager(t, testConfig(t, sandbox.ModeNone)), "main")
	tests := []struct{ name, command, want string }{
		{"marker-like line", `printf '\n__deskbot_%s__ 0\n' AAAAAAAAAAAAAAAAAAAAAAAAAA; echo still-here`,
			"\n__deskbot_AAAAAAAAAAAAAAAAAAAAAAAAAA__ 0\nstill-here\n"},
		{"no final newline", `printf 'abc'`, "abc"},
		{"unbalanced quote", `echo "oops`, "unexpected EOF"},
		{"stray brace", `echo a; }`, "syntax error"},
		{"stderr merged", `echo out; echo err >&2`, "out\nerr\n"},
		{"quotes and backslashes", `printf '%s\n' 'it'"'"'s' "a\\b" $'tab\there'`, "it's\na\\b\ntab\there\n"},
		{"unicode", `echo "₹ नमस्ते"`, "₹ नमस्ते\n"},
		{"heredoc", "cat <<'EOF'\nline $1\nEOF", "line $1\n"},
		{"no output", `true`, "(no output)"},
		{"failure", `echo before; false`, "before\nexit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRun(t, s, tt.command)
			if !strings.Contains(r.Text, tt.want) || r.IsError {
				t.Errorf("got %q (IsError %v), want it to contain %q", r.Text, r.IsError, tt.want)
			}
			if got := mustOutput(t, s, "echo ok"); got != "ok\n" {
				t.Errorf("next command after it: got %q", got)
			}
		})
	}
}

func TestLongOutputIsCut(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		cfg := testConfig(t, mode)
		s := mustSession(t, mustManager(t, cfg), "main")
		r := mustRun(t, s, `head -c 1000000 /dev/zero | tr '\0' a; echo; echo THE-END`)
		if n := utf8.RuneCountInString(r.Text); n > sandbox.DefaultMaxOutput || n < sandbox.DefaultMaxOutput-100 {
			t.Errorf("got %d characters, want at most and about %d", n, sandbox.DefaultMaxOutput)
		}
		for _, want := range []string{"output cut", "1000009 characters", "aaaa\nTHE-END\n"} {
			if !strings.Contains(r.Text, want) {
				t.Errorf("cut output lacks %q: ...%q", want, r.Text[len(r.Text)-200:])
			}
		}
		if !strings.HasPrefix(r.Text, "aaaa") {
			t.Errorf("cut output should start with the head, got %q...", r.Text[:20])
		}
	})
}

func TestOutputNeverExceedsTheMaximum(t *testing.T) {
	tests := []struct {
		name, command string
		max           int
	}{
		{"long output", "seq 1 1000", 100},
		{"long output and a failure", "seq 1 1000; false", 100},
		{"long output and an exit", "seq 1 1000; exit 3", 200},
		{"a maximum smaller than the note", "seq 1 1000; exit 3", 20},
		{"exactly the maximum", "printf '%099d\\n' 0", 100},
	}
	eachMode(t, func(t *testing.T, mode string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cfg := testConfig(t, mode)
				cfg.MaxOutput = tt.max
				s := mustSession(t, mustManager(t, cfg), "main")
				r := mustRun(t, s, tt.command)
				if n := utf8.RuneCountInString(r.Text); n > tt.max {
					t.Errorf("got %d characters for a maximum of %d: %q", n, tt.max, r.Text)
				}
			})
		}
	})
}

func TestTimeoutRestartsTheSession(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		cfg := testConfig(t, mode)
		cfg.Timeout = time.Second
		s := mustSession(t, mustManager(t, cfg), "main")
		mustOutput(t, s, "mkdir -p deep && cd deep && export MOOD=calm")
		start := time.Now()
		r := mustRun(t, s, "sleep 100")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the timeout took %v", took)
		}
		want := "The command did not finish within 1 seconds. The terminal was restarted, so the folder and variables are reset; use bash_background for long commands."
		if r.Text != want || !r.IsError {
			t.Errorf("got %q (IsError %v), want %q as an error", r.Text, r.IsError, want)
		}
		if got, want := mustOutput(t, s, `pwd; echo "mood:$MOOD"`), s.Dir()+"\nmood:\n"; got != want {
			t.Errorf("after restart: got %q, want %q", got, want)
		}
	})
}

func TestExitIsSurvived(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		s := mustSession(t, mustManager(t, testConfig(t, mode)), "main")
		mustOutput(t, s, "cd .scratch")
		r := mustRun(t, s, "echo bye; exit 3")
		for _, want := range []string{"bye\n", "exit status 3", "terminal exited"} {
			if !strings.Contains(r.Text, want) {
				t.Errorf("exit: got %q, want it to contain %q", r.Text, want)
			}
		}
		r = mustRun(t, s, "pwd")
		if !strings.Contains(r.Text, "new one") || !strings.HasSuffix(r.Text, s.Dir()+"\n") {
			t.Errorf("next command: got %q, want the restart note and %s", r.Text, s.Dir())
		}
		if got := mustOutput(t, s, "echo again"); got != "again\n" {
			t.Errorf("the note must be told once; got %q", got)
		}
	})
}

func TestParallelRunsDoNotInterleave(t *testing.T) {
	s := mustSession(t, mustManager(t, testConfig(t, sandbox.ModeNone)), "main")
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Go(func() {
			r, err := s.Run(t.Context(), fmt.Sprintf(`for n in $(seq 1 300); do echo w%d-$n; done`, i))
			if err != nil {
				t.Error(err)
			}
			got[i] = r.Text
		})
	}
	wg.Wait()
	for i, text := range got {
		var want strings.Builder
		for n := 1; n <= 300; n++ {
			fmt.Fprintf(&want, "w%d-%d\n", i, n)
		}
		if text != want.String() {
			t.Errorf("run %d: output interleaved or lost (%d bytes, want %d)", i, len(text), want.Len())
		}
	}
}

func TestCancelAndCloseEndARunningCommand(t *testing.T) {
	m := mustManager(t, testConfig(t, sandbox.ModeNone))
	s := mustSession(t, m, "main")
	mustOutput(t, s, "cd .scratch")

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Run(ctx, "sleep 100"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled run: got %v, want the context's error", err)
	}
	if got := mustOutput(t, s, "pwd"); got != s.Dir()+"\n" {
		t.Errorf("after a cancelled command the session must be fresh; pwd %q", got)
	}

	errc := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), "sleep 100")
		errc <- err
	}()
	deskbottest.Eventually(t, "sleep started", func() bool { return len(processesWith("sleep 100")) > 0 })
	m.Close()
	select {
	case err := <-errc:
		if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
			t.Errorf("run during Close: got %v, want EUNAVAILABLE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the running command")
	}
	if _, err := m.Session("main"); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("Session after Close: got %v, want EUNAVAILABLE", err)
	}
}

// The commands run in a loop of the shell's own: the loop's keywords at the
// top level, a failing first command and a marker that lands in the middle
// of a line longer than the reader's buffer must all end as in a terminal.
func TestCommandLoopIsInvisible(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		s := mustSession(t, mustManager(t, testConfig(t, mode)), "main")
		if r := mustRun(t, s, "false"); !strings.Contains(r.Text, "exit status 1") {
			t.Errorf("a fresh shell's first command: got %q, want its exit status 1", r.Text)
		}
		mustOutput(t, s, "export KEPT=yes; G=0")
		tests := []struct{ name, command, want string }{
			{"break", "echo a; break; echo b", "a\n"},
			{"continue", "echo a; continue; echo b", "a\n"},
			{"own loop", "for i in 1 2 3; do echo $i; [ $i = 2 ] && break; done", "1\n2\n"},
			{"declare stays global", "declare G=1; echo $G", "1\n"},
			{"declared before", "echo $G", "1\n"},
			{"status after break", "false; break", "(no output)"},
			{"long line, no newline", "head -c 200000 /dev/zero | tr '\\0' a", strings.Repeat("a", 10)},
		}
		for _, tt := range tests {
			r := mustRun(t, s, tt.command)
			if !strings.HasPrefix(r.Text, tt.want) || strings.Contains(r.Text, "__deskbot_") {
				t.Errorf("%s: got %q, want it to start with %q", tt.name, r.Text, tt.want)
			}
			if got, want := mustOutput(t, s, `echo "next $KEPT"`), "next yes\n"; got != want {
				t.Errorf("%s: the next command got %q", tt.name, got)
			}
		}
	})
}
