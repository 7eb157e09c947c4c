package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
	"github.com/redis/go-redis/v9"
)

// Topologies of Redis for tests and drills, started from Debian's binaries
// (redis-server, redis-sentinel, redis-cli) on random loopback ports, each
// process tied to the test binary (it dies with it) and killed when the
// test ends: a primary with one replica, that pair watched by three
// sentinels, and a three-node Cluster. Every data node has one random
// password; the sentinels have none.

// Server is one redis-server or redis-sentinel of a test's own. Its port,
// folder and arguments stay the same across Kill and Start, so a restarted
// server comes back where it was.
type Server struct {
	Port int
	Dir  string
	bin  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Alive reports whether the process runs.
func (s *Server) Alive() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Kill ends the server with SIGKILL (a dead host: nothing is flushed) and
// waits for it to be gone.
func (s *Server) Kill() {
	if s.Alive() {
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Signal sends sig to the server (SIGSTOP freezes it, SIGCONT thaws it).
func (s *Server) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if !s.Alive() {
		t.Fatalf("server on %s is not running", s.Addr())
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Restart runs the server again and waits until it answers PING (a
// restarted redis-server may answer LOADING for a while after that). It
// returns what went wrong rather than failing a test, so that it may be
// called from any goroutine (t.Fatal may be called only from the test's).
func (s *Server) Restart() error { return s.start() }

func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args...)
	log, err := os.OpenFile(filepath.Join(s.Dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	started := make(chan error, 1)
	go func() { started <- cmd.Start() }() // see startServer
	if err := <-started; err != nil {
		return fmt.Errorf("%s: %v", filepath.Base(s.bin), err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if pingRaw(s.Addr()) {
			return nil
		}
		if !s.Alive() || time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
			return fmt.Errorf("%s on %s did not start: %s", filepath.Base(s.bin), s.Addr(), lastLines(string(b), 5))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pingRaw reports whether addr answers PING with anything at all (PONG,
// NOAUTH, LOADING): the process is up and listening.
func pingRaw(addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1, DialTimeout: time.Second, Protocol: 2})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.Ping(ctx).Err()
	var re redis.Error
	return err == nil || errors.As(err, &re)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// newServer starts bin with args (after a "--port <port>" of its own, or
// in a config file for sentinels) in a fresh folder.
func newServer(t testing.TB, bin string, args func(port int, dir string) []string) *Server {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err != nil {
		needBinaries(t, bin)
	}
	var last error
	for range 3 { // a free port may be taken between probe and start
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Port: port, Dir: t.TempDir(), bin: path}
		s.args = args(port, s.Dir)
		if last = s.start(); last == nil {
			t.Cleanup(s.Kill)
			return s
		}
		s.Kill()
	}
	t.Fatal(last)
	return nil
}

// needBinaries skips t (fails it under DESKBOT_REQUIRE_REDIS=1) when a
// binary a topology needs is missing.
func needBinaries(t testing.TB, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			if required() {
				t.Fatalf("%s is required (DESKBOT_REQUIRE_REDIS=1) but not on PATH (Debian packages redis-server, redis-sentinel, redis-tools)", b)
			}
			t.Skipf("%s not on PATH (Debian packages redis-server, redis-sentinel, redis-tools)", b)
		}
	}
}

func dataNodeArgs(port int, dir, password string, extra ...string) []string {
	return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--requirepass", password, "--masterauth", password,
		"--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}, extra...)
}

// StartServer starts a lone redis-server with the append-only file on, and
// returns it with its URL (password included: never log it). Kill and
// Start restart it from its file.
func StartServer(t testing.TB) (*Server, string) {
	t.Helper()
	needBinaries(t, "redis-server")
	pw := rand.Text()
	s := newServer(t, "redis-server", func(port int, dir string) []string { return dataNodeArgs(port, dir, pw) })
	return s, "redis://:" + pw + "@" + s.Addr()
}

// Replicated is a primary and its replica.
type Replicated struct {
	Primary, Replica *Server
	Password         string
}

// StartReplicated starts a primary and one replica of it, and waits until
// the replica has its first copy.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	needBinaries(t, "redis-server")
	r := &Replicated{Password: rand.Text()}
	r.Primary = newServer(t, "redis-server", func(port int, dir string) []string { return dataNodeArgs(port, dir, r.Password) })
	r.Replica = newServer(t, "redis-server", func(port int, dir string) []string {
		return dataNodeArgs(port, dir, r.Password, "--replicaof", "127.0.0.1", strconv.Itoa(r.Primary.Port))
	})
	deskbottest.EventuallyWithin(t, 20*time.Second, "the replica's first copy", func() bool {
		info, err := r.client(r.Primary).Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "state=online")
	})
	return r
}

// URL is the primary's redis:// URL, password included: never log it.
func (r *Replicated) URL() string { return "redis://:" + r.Password + "@" + r.Primary.Addr() }

func (r *Replicated) client(s *Server) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), Password: r.Password, DisableIdentity: true, MaxRetries: -1})
}

// SentinelSet is a primary, its replica and three sentinels watching them,
// quick to act: a primary silent for a second is down, and two sentinels
// agreeing is enough to fail over.
type SentinelSet struct {
	*Replicated
	Sentinels  []*Server
	MasterName string
}

// StartSentinel starts a primary, a replica and three sentinels, and waits
// until every sentinel knows the replica and the other two.
func StartSentinel(t testing.TB) *SentinelSet {
	t.Helper()
	needBinaries(t, "redis-server", "redis-sentinel")
	set := &SentinelSet{Replicated: StartReplicated(t), MasterName: "deskbot"}
	for range 3 {
		set.Sentinels = append(set.Sentinels, newServer(t, "redis-sentinel", func(port int, dir string) []string {
			conf := filepath.Join(dir, "sentinel.conf")
			body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
				"sentinel monitor %s 127.0.0.1 %d 2\nsentinel auth-pass %[3]s %[5]s\n"+
				"sentinel down-after-milliseconds %[3]s 1000\nsentinel failover-timeout %[3]s 5000\n",
				port, dir, set.MasterName, set.Primary.Port, set.Password)
			if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{conf}
		}))
	}
	for _, s := range set.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), DisableIdentity: true, MaxRetries: -1})
		deskbottest.EventuallyWithin(t, 30*time.Second, "sentinel on "+s.Addr()+" to know the replica and the other sentinels", func() bool {
			ctx := context.Background()
			reps, err1 := c.Replicas(ctx, set.MasterName).Result()
			sens, err2 := c.Sentinels(ctx, set.MasterName).Result()
			return err1 == nil && err2 == nil && len(reps) == 1 && len(sens) == 2
		})
		c.Close()
	}
	return set
}

// Addrs are the sentinels' host:port.
func (set *SentinelSet) Addrs() []string {
	var out []string
	for _, s := range set.Sentinels {
		out = append(out, s.Addr())
	}
	return out
}

// Master is the server the sentinels now name primary.
func (set *SentinelSet) Master(t testing.TB) *Server {
	t.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: set.Sentinels[0].Addr(), DisableIdentity: true})
	defer c.Close()
	addr, err := c.GetMasterAddrByName(context.Background(), set.MasterName).Result()
	if err != nil {
		t.Fatalf("ask a sentinel for the primary: %v", err)
	}
	for _, s := range []*Server{set.Primary, set.Replica} {
		if len(addr) == 2 && addr[1] == strconv.Itoa(s.Port) {
			return s
		}
	}
	t.Fatalf("the sentinels name %v, neither of ours", addr)
	return nil
}

// Cluster is a three-node Redis Cluster with no replicas.
type Cluster struct {
	Nodes    []*Server
	Password string
}

// StartCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create, and waits until every node reports the
// cluster ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	needBinaries(t, "redis-server", "redis-cli")
	c, err := startCluster(t)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startCluster(t testing.TB) (*Cluster, error) {
	c := &Cluster{Password: rand.Text()}
	for range 3 {
		c.Nodes = append(c.Nodes, newServer(t, "redis-server", func(port int, dir string) []string {
			bus, err := freePort() // its own: port+10000, the default, may be past 65535
			if err != nil {
				t.Fatal(err)
			}
			return dataNodeArgs(port, dir, c.Password, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
				"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "2000")
		}))
	}
	args := []string{"-a", c.Password, "--no-auth-warning", "--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, lastLines(strings.ReplaceAll(string(out), c.Password, "***"), 5))
	}
	for _, n := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: c.Password, DisableIdentity: true})
		ok := false
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if info, err := cl.ClusterInfo(context.Background()).Result(); err == nil && strings.Contains(info, "cluster_state:ok") {
				ok = true
				break
			}
		}
		cl.Close()
		if !ok {
			return nil, fmt.Errorf("cluster node %s never reported cluster_state:ok", n.Addr())
		}
	}
	return c, nil
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return out
}
