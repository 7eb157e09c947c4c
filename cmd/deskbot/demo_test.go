package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskbot/deskbot/demo"
	"github.com/deskbot/deskbot/deskbottest"
)

// loopbackURL finds the URLs a demo prints.
var loopbackURL = regexp.MustCompile(`https?://\S+`)

// TestDemoCommand runs `deskbot demo` as the README's first command does,
// on a machine with nothing but the binary: no Redis, no model server, no
// Telegram. It prints one URL, on loopback; the page there answers and
// plays the team of three; the bot answers a person's command there; and
// SIGINT stops it cleanly.
func TestDemoCommand(t *testing.T) {
	t.Parallel()
	bin := mustBuild(t)
	cmd := exec.Command(bin, "demo")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LOG_LEVEL=debug",
		"MODEL_BASE_URL=http://" + deskbottest.RefusedAddr(t) + "/v1"}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var printed syncBuffer
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			printed.Write([]byte(sc.Text() + "\n"))
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() || os.Getenv("DESKBOT_TEST_LOGS") == "1" {
			t.Logf("deskbot demo printed:\n%s\nand logged:\n%s", printed.String(), logs.String())
		}
	})

	var page string
	for page == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("deskbot demo exited before printing its URL")
			}
			if u, ok := strings.CutPrefix(line, "deskbot demo: open "); ok {
				page = u
			}
		case <-time.After(30 * time.Second):
			t.Fatal("deskbot demo printed no URL within 30s")
		}
	}
	if !strings.HasPrefix(page, "http://127.0.0.1:") {
		t.Errorf("the demo's page is at %s, want a loopback URL", page)
	}

	resp, err := http.Get(page + "api/chat")
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		People []struct {
			Name     string
			Approver bool
		}
		Desks bool
	}
	err = json.NewDecoder(resp.Body).Decode(&chat)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	approvers := 0
	for _, p := range chat.People {
		if p.Approver {
			approvers++
		}
	}
	if len(chat.People) != 3 || approvers != 2 || !chat.Desks {
		t.Errorf("the chat page plays %+v (desks page %v), want two approvers and a member, and the desks page", chat.People, chat.Desks)
	}
	resp, err = http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "chat.js") {
		t.Errorf("GET %s: %d\n%s", page, resp.StatusCode, body)
	}

	// A word in the group as Asha: the bot answers, through the fake.
	req, err := http.NewRequest(http.MethodPost, page+"api/send", strings.NewReader(`{"as":101,"text":"/whoami"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Deskbot-Demo", "1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deskbottest.EventuallyWithin(t, 15*time.Second, "the bot's answer to /whoami on the page", func() bool {
		resp, err := http.Get(page + "api/chat")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "Your user id: 101")
	})

	// Let the bot's next long poll get under way: telebot (v3.3.8) may
	// miss a stop that comes within moments of a poll's start (Raw reads
	// the stop channel on a goroutine of its own, after Stop cleared it),
	// and the stop then waits for that poll to end, past StopTimeout.
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGINT: %v, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("deskbot demo did not exit within 30s of SIGINT")
	}
	if urls := loopbackURL.FindAllString(printed.String(), -1); len(urls) != 1 {
		t.Errorf("deskbot demo printed %d URLs %q, want exactly one", len(urls), urls)
	}
	if u := loopbackURL.FindString(logs.String()); u != "" {
		t.Errorf("deskbot demo's logs carry a URL %q; only its page's is printed", u)
	}
}

// The demo prints no warning meant for a real run: its Redis is in memory
// on purpose, its model and Telegram are its own. At its own log level,
// on a machine whose sandbox works (or with SANDBOX=none, as here where
// bubblewrap may be missing), it logs no warning and no error at all.
func TestDemoPrintsNoRealRunWarning(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	r, err := startDemo(t.Context(), map[string]string{
		"MODEL_BASE_URL": "http://" + deskbottest.RefusedAddr(t) + "/v1",
		"SANDBOX":        "none",
	}, &logs)
	if err != nil {
		t.Fatalf("start the demo: %v", err)
	}
	// A turn of the desk, through the chat page, so what a turn logs is in.
	req, err := http.NewRequest(http.MethodPost, r.Demo.URL+"api/send", strings.NewReader(fmt.Sprintf(`{"as":%d,"text":"/tell main positions"}`, demo.People[0].ID)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Deskbot-Demo", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deskbottest.EventuallyWithin(t, 15*time.Second, "the desk's book in the chat", func() bool {
		resp, err := http.Get(r.Demo.URL + "api/chat")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "No open positions")
	})
	if err := r.Close(); err != nil {
		t.Errorf("close the demo: %v", err)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "REDIS_URL") {
			t.Errorf("the demo logged: %s", line)
		}
	}
}

// startDemo starts the demo and the service against it, as runDemo does
// before it waits for a signal.
func startDemo(ctx context.Context, environ map[string]string, logs io.Writer) (*demo.Run[*Main], error) {
	return demo.StartAll(ctx, environ, logs, newDemoMain)
}
