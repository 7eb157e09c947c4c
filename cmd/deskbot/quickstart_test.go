package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func mustBuild(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "deskbot-test-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir, built.bin = dir, filepath.Join(dir, "deskbot")
		out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is the deskbot binary, built once for the tests that run it (a
// link takes many seconds on a small machine) and removed by TestMain.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// TestQuickStart walks the README the way a newcomer does: build, run
// `deskbot check` with the variables missing (it names them), start with
// only the three Telegram variables (the fake Bot API stands in for
// Telegram; Redis is embedded), ask /whoami, see /healthz answer ok, stop
// with SIGTERM and see a clean exit. The token never appears in anything
// the process printed.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	bin := mustBuild(t)
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}

	check := exec.Command(bin, "check")
	check.Env = base
	out, err := check.CombinedOutput()
	if code := check.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("check without variables: exit %d (%v), want 1:\n%s", code, err, out)
	}
	for _, name := range []string{"TELEGRAM_TOKEN", "TELEGRAM_CHAT_ID", "TELEGRAM_APPROVERS"} {
		if !strings.Contains(string(out), name) {
			t.Errorf("check does not name %s:\n%s", name, out)
		}
	}

	tg := telegramtest.New(t, testToken)
	addr := deskbottest.FreeAddr(t)
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir() // DATA_DIR defaults to ./data
	cmd.Env = append(base,
		"TELEGRAM_TOKEN="+testToken,
		fmt.Sprintf("TELEGRAM_CHAT_ID=%d", groupID),
		"TELEGRAM_APPROVERS=101",
		"TELEGRAM_API_URL="+tg.URL,
		"HTTP_ADDR="+addr,
	)
	var output syncBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		if strings.Contains(output.String(), testToken) {
			t.Errorf("the token appears in the process's output")
		}
		if t.Failed() || os.Getenv("DESKBOT_TEST_LOGS") == "1" {
			t.Logf("deskbot output:\n%s", output.String())
		}
	})

	deskbottest.EventuallyWithin(t, 20*time.Second, "/healthz to answer 200", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	tg.InjectText(asha, groupID, "/whoami", 0)
	tg.WaitFor(t, 15*time.Second, func(s *telegramtest.Server) bool {
		for _, m := range s.BotMessages(groupID) {
			if strings.Contains(m.Plain, "101") && strings.Contains(m.Plain, fmt.Sprint(groupID)) {
				return true
			}
		}
		return false
	})

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"deskbot_outbox_depth", "go_goroutines"} {
		if !strings.Contains(metrics.String(), name) {
			t.Errorf("/metrics has no %s", name)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("deskbot did not exit within 20s of SIGTERM")
	}
	if !strings.Contains(output.String(), "stopped") {
		t.Errorf("no 'stopped' line in the logs")
	}
}
