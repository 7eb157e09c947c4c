package storetest

import (
	"bufio"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
)

func TestChooseOrder(t *testing.T) {
	server := redisServerDir(t)
	noServer := t.TempDir() // a PATH without redis-server
	answering, stop, err := store.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	tests := []struct {
		name string
		env  map[string]string
		want Kind
	}{
		{name: "configured answers", env: map[string]string{"REDIS_URL": answering, "PATH": server}, want: Configured},
		{name: "TEST_REDIS_URL first", env: map[string]string{"TEST_REDIS_URL": answering, "REDIS_URL": "redis://:secret-never-shown@" + deskbottest.RefusedAddr(t)}, want: Configured},
		{name: "closed port, redis-server on PATH", env: map[string]string{"REDIS_URL": "redis://:secret-never-shown@" + deskbottest.RefusedAddr(t), "PATH": server}, want: Throwaway},
		{name: "closed port, nothing on PATH", env: map[string]string{"REDIS_URL": "redis://:secret-never-shown@" + deskbottest.RefusedAddr(t), "PATH": noServer}, want: Embedded},
		{name: "closed port, Redis required", env: map[string]string{"REDIS_URL": "redis://:secret-never-shown@" + deskbottest.RefusedAddr(t), "PATH": server, "DESKBOT_REQUIRE_REDIS": "1"}, want: Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TEST_REDIS_URL", "")
			t.Setenv("TEST_REDIS_CLUSTER_ADDRS", "")
			t.Setenv("DESKBOT_REQUIRE_REDIS", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			b := choose()
			if b.kind != tt.want {
				t.Fatalf("kind = %s (%s), want %s", b.kind, b.why, tt.want)
			}
			if strings.Contains(b.why, "secret-never-shown") || b.err != nil && strings.Contains(b.err.Error(), "secret-never-shown") {
				t.Errorf("the URL's password reached the log line: %q", b.why)
			}
			if b.kind != Unavailable {
				if err := ping(b.url); err != nil {
					t.Errorf("chosen %s Redis does not answer: %v", b.kind, err)
				}
			}
		})
	}
}

// redisServerDir is a folder holding a redis-server: the machine's, or,
// where none is installed, a stand-in that runs this test binary as an
// embedded Redis on the port and password it is given, so the throwaway path
// is tested everywhere.
func redisServerDir(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("redis-server"); err == nil {
		return filepath.Dir(p)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nSTORETEST_FAKE_SERVER=1 exec " + os.Args[0] + " -test.run='^TestFakeRedisServer$' -- \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "redis-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFakeRedisServer is the stand-in redis-server when this binary runs as
// one; otherwise it does nothing.
func TestFakeRedisServer(t *testing.T) {
	if os.Getenv("STORETEST_FAKE_SERVER") != "1" {
		return
	}
	var port, pw string
	args := flag.Args()
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--port":
			port = args[i+1]
		case "--requirepass":
			pw = args[i+1]
		}
	}
	m := miniredis.NewMiniRedis()
	m.RequireAuth(pw)
	if err := m.StartAddr("127.0.0.1:" + port); err != nil {
		os.Exit(1)
	}
	select {} // until killed
}

// The throwaway redis-server must not outlive the test binary that started
// it, however that binary ends: here it exits without any cleanup.
func TestThrowawayServerStopsWithTestBinary(t *testing.T) {
	if os.Getenv("STORETEST_CHILD") == "1" {
		url, err := startServer()
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(url + "\n")
		os.Exit(0)
	}
	if !canTieToParent {
		t.Skip("this OS cannot tie the server to the test binary")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestThrowawayServerStopsWithTestBinary$")
	cmd.Env = append(os.Environ(), "STORETEST_CHILD=1", "PATH="+redisServerDir(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	url, _ := bufio.NewReader(out).ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	url = strings.TrimSpace(url)
	if !strings.HasPrefix(url, "redis://") {
		t.Fatalf("child printed %q, want a redis:// URL", url)
	}
	deskbottest.Eventually(t, "the child's redis-server to stop", func() bool { return ping(url) != nil })
}
