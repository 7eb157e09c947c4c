package sandbox_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/sandbox"
)

func mustCheck(t *testing.T, s *sandbox.Session, id string) string {
	t.Helper()
	r, err := s.CheckBackground(t.Context(), id)
	if err != nil || r.IsError {
		t.Fatalf("CheckBackground(%q): %q, %v", id, r.Text, err)
	}
	return r.Text
}

func mustStart(t *testing.T, s *sandbox.Session, command string) string {
	t.Helper()
	id, err := s.RunInBackground(t.Context(), command)
	if err != nil {
		t.Fatalf("RunInBackground(%q): %v", command, err)
	}
	return id
}

func TestBackgroundJobRunsThenFinishes(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		s := mustSession(t, mustManager(t, testConfig(t, mode)), "main")
		mustOutput(t, s, "mkdir -p work && cd work && export SYMBOL=NIFTY")
		// The job waits for a file the test creates, so "running" is
		// observed for sure and no sleep decides the outcome.
		id := mustStart(t, s, `echo "started $SYMBOL in $PWD"; while [ ! -e go ]; do sleep 0.02; done; echo last-line; exit 4`)
		if ok, _ := regexp.MatchString(`^[0-9a-f]{8}$`, id); !ok {
			t.Errorf("job id %q, want 8 hexadecimal digits", id)
		}
		deskbottest.Eventually(t, "the log shows the start", func() bool {
			return strings.Contains(mustCheck(t, s, id), "started NIFTY in "+filepath.Join(s.Dir(), "work"))
		})
		if got := mustCheck(t, s, id); !strings.Contains(got, id+": running") {
			t.Errorf("got %q, want running", got)
		}
		// The foreground stays usable while the job runs.
		mustOutput(t, s, "touch go")
		deskbottest.Eventually(t, "the job finishes", func() bool {
			return strings.Contains(mustCheck(t, s, id), "finished, exit status 4")
		})
		if got := mustCheck(t, s, id); !strings.HasSuffix(got, "last-line\n") {
			t.Errorf("finished job: got %q, want the log tail ending in last-line", got)
		}
	})
}

func TestBackgroundLogTailIsBounded(t *testing.T) {
	s := mustSession(t, mustManager(t, testConfig(t, sandbox.ModeNone)), "main")
	id := mustStart(t, s, `seq 1 100000`)
	deskbottest.Eventually(t, "the job finishes", func() bool { return strings.Contains(mustCheck(t, s, id), "exit status 0") })
	got := mustCheck(t, s, id)
	_, tail, _ := strings.Cut(got, "characters):\n")
	if len(tail) != sandbox.JobTail || !strings.HasSuffix(tail, "\n99999\n100000\n") {
		t.Errorf("tail has %d characters ending %q, want %d ending in 100000", len(tail), tail[len(tail)-20:], sandbox.JobTail)
	}
}

func TestUnknownJobIsAToolError(t *testing.T) {
	m := mustManager(t, testConfig(t, sandbox.ModeNone))
	s := mustSession(t, m, "main")
	other := mustSession(t, m, "other")
	id := mustStart(t, other, "echo theirs")
	for _, bad := range []string{"zzzzzzzz", "", "../../etc/passwd", "ABCDEFGH", id} {
		r, err := s.CheckBackground(t.Context(), bad)
		if err != nil || !r.IsError || !strings.Contains(r.Text, "no background job") {
			t.Errorf("CheckBackground(%q): got %q, %v; want an error result", bad, r.Text, err)
		}
	}
}

// TestBackgroundJobsStopWithTheSession checks every way a session ends:
// no job process may outlive it.
func TestBackgroundJobsStopWithTheSession(t *testing.T) {
	ends := []struct {
		name string
		end  func(t *testing.T, m *sandbox.Manager, s *sandbox.Session)
	}{
		{"timeout", func(t *testing.T, m *sandbox.Manager, s *sandbox.Session) {
			if r := mustRun(t, s, "sleep 30"); !r.IsError {
				t.Fatalf("want a timeout, got %q", r.Text)
			}
		}},
		{"exit", func(t *testing.T, m *sandbox.Manager, s *sandbox.Session) { mustRun(t, s, "exit 0") }},
		{"desk stop", func(t *testing.T, m *sandbox.Manager, s *sandbox.Session) { m.Stop("main") }},
		{"manager close", func(t *testing.T, m *sandbox.Manager, s *sandbox.Session) { m.Close() }},
	}
	eachMode(t, func(t *testing.T, mode string) {
		for _, tt := range ends {
			t.Run(tt.name, func(t *testing.T) {
				cfg := testConfig(t, mode)
				cfg.Timeout = time.Second
				m := mustManager(t, cfg)
				s := mustSession(t, m, "main")
				secs := fmt.Sprint(500000 + rand.IntN(400000)) // names this test's processes
				id := mustStart(t, s, "sleep "+secs+" & sleep "+secs+"; echo never")
				mustRun(t, s, "sleep "+secs+" >/dev/null 2>&1 &")
				deskbottest.Eventually(t, "three sleeps run", func() bool { return len(processesWith("sleep "+secs)) == 3 })
				tt.end(t, m, s)
				deskbottest.Eventually(t, "no orphan survives", func() bool { return len(processesWith("sleep "+secs)) == 0 })
				if tt.name == "manager close" {
					return
				}
				s = mustSession(t, m, "main") // a new one after a desk stop
				if got := mustCheck(t, s, id); !strings.Contains(got, "stopped before it finished") {
					t.Errorf("got %q, want stopped", got)
				}
			})
		}
	})
}

// In bwrap mode even a job that leaves the process group dies with the
// sandbox, because the whole PID namespace goes.
func TestBwrapKillsJobsThatLeftTheGroup(t *testing.T) {
	needBwrap(t)
	m := mustManager(t, testConfig(t, sandbox.ModeBwrap))
	s := mustSession(t, m, "main")
	secs := fmt.Sprint(500000 + rand.IntN(400000))
	mustStart(t, s, "setsid sleep "+secs)
	deskbottest.Eventually(t, "the sleep runs", func() bool { return len(processesWith("sleep "+secs)) == 1 })
	m.Stop("main")
	deskbottest.Eventually(t, "no orphan survives", func() bool { return len(processesWith("sleep "+secs)) == 0 })
}

func TestBackgroundEmptyCommandIsInvalid(t *testing.T) {
	s := mustSession(t, mustManager(t, testConfig(t, sandbox.ModeNone)), "main")
	if _, err := s.RunInBackground(t.Context(), "  "); err == nil {
		t.Error("an empty background command must be refused")
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir(), sandbox.ScratchDir)); len(entries) != 0 {
		t.Errorf("a refused job left files: %v", entries)
	}
}
