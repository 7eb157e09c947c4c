package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot/store"
	"github.com/redis/go-redis/v9"
)

// Kind names the Redis a test binary uses.
type Kind string

const (
	Configured        Kind = "configured" // TEST_REDIS_URL, REDIS_URL or the default 127.0.0.1:6379
	Throwaway         Kind = "throwaway"  // a redis-server from PATH, started for this test binary
	Embedded          Kind = "embedded"   // the in-memory miniredis the service runs on without REDIS_URL
	ClusterConfigured Kind = "cluster"    // the Redis Cluster at TEST_REDIS_CLUSTER_ADDRS
	Unavailable       Kind = "unavailable"
)

// defaultURL is tried when neither TEST_REDIS_URL nor REDIS_URL is set.
const defaultURL = "redis://127.0.0.1:6379"

// backend is the one Redis this test binary uses, chosen on first use.
type backend struct {
	kind Kind
	url  string // never logged: it may carry a password
	// A Cluster's nodes and password (never logged) instead of url.
	clusterAddrs []string
	password     string
	why          string // how it was chosen, for the log line and skip messages
	err          error  // set when kind is Unavailable
}

var (
	chooseOnce sync.Once
	chosen     backend
)

func current() backend {
	chooseOnce.Do(func() { chosen = choose() })
	return chosen
}

// required reports whether a real Redis is required (CI): then nothing falls
// back, and a missing Redis fails the test instead of skipping it.
func required() bool { return os.Getenv("DESKBOT_REQUIRE_REDIS") == "1" }

// choose finds Redis in this order: the configured URL if it answers; else a
// throwaway redis-server from PATH; else the embedded miniredis. With
// DESKBOT_REQUIRE_REDIS=1 only the configured URL will do, so CI proves the
// real Redis it set up.
func choose() backend {
	if addrs := os.Getenv("TEST_REDIS_CLUSTER_ADDRS"); addrs != "" {
		return chooseCluster(strings.Split(addrs, ","), os.Getenv("TEST_REDIS_PASSWORD"))
	}
	name, u := "TEST_REDIS_URL", os.Getenv("TEST_REDIS_URL")
	if u == "" {
		name, u = "REDIS_URL", os.Getenv("REDIS_URL")
	}
	if u == "" {
		name, u = "the default "+defaultURL, defaultURL
	}
	err := ping(u)
	if err == nil {
		return backend{kind: Configured, url: u, why: "Redis at " + name}
	}
	tried := fmt.Sprintf("Redis at %s does not answer (%v)", name, redacted(err))
	if required() {
		return backend{kind: Unavailable, why: tried, err: errors.New(tried)}
	}
	if url, serr := startServer(); serr == nil {
		return backend{kind: Throwaway, url: url, why: tried + "; a throwaway redis-server from PATH, stopped when the test binary exits"}
	} else {
		tried += "; " + serr.Error()
	}
	url, _, eerr := store.StartEmbedded()
	if eerr != nil {
		return backend{kind: Unavailable, why: tried, err: fmt.Errorf("%s; embedded: %w", tried, eerr)}
	}
	return backend{kind: Embedded, url: url, why: tried + "; the embedded miniredis the service runs on without REDIS_URL"}
}

// chooseCluster takes the Cluster at addrs if it answers and is ok; with
// it named, nothing else will do.
func chooseCluster(addrs []string, password string) backend {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: password, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.ClusterInfo(ctx).Result()
	if err == nil && !strings.Contains(info, "cluster_state:ok") {
		err = errors.New("cluster_state is not ok")
	}
	if err != nil {
		why := fmt.Sprintf("the Redis Cluster at TEST_REDIS_CLUSTER_ADDRS does not answer (%s)", redacted(err))
		return backend{kind: Unavailable, why: why, err: errors.New(why)}
	}
	return backend{kind: ClusterConfigured, clusterAddrs: addrs, password: password, why: "Redis Cluster at TEST_REDIS_CLUSTER_ADDRS"}
}

// ping checks that u answers PING within a couple of seconds.
func ping(u string) error {
	o, err := redis.ParseURL(u)
	if err != nil {
		return errors.New("not a valid redis:// URL")
	}
	o.DisableIdentity = true
	o.DialTimeout, o.MaxRetries, o.DialerRetries = 2*time.Second, -1, 1
	c := redis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// redacted keeps a dial error's gist without any URL it might quote.
func redacted(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op + " " + op.Addr.String() + ": " + op.Err.Error()
	}
	return "no answer"
}

// startServer runs redis-server from PATH on a random loopback port, with a
// random password and no persistence, for the rest of the test binary. The
// server is tied to this process (see dieWithParent), so it stops when the
// test binary exits, however it exits.
func startServer() (string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("no redis-server on PATH")
	}
	if !canTieToParent {
		return "", errors.New("redis-server found, but this OS cannot stop it with the test binary")
	}
	var last error
	for range 3 { // the free port may be taken between probe and start
		port, err := freePort()
		if err != nil {
			return "", err
		}
		pw := rand.Text()
		cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--requirepass", pw, "--save", "", "--appendonly", "no", "--dir", os.TempDir())
		dieWithParent(cmd)
		// Started from a fresh goroutine: the parent-death signal follows
		// the OS thread that started the child, and a goroutine's thread is
		// not kept if that goroutine locked it and exits.
		started := make(chan error, 1)
		go func() { started <- cmd.Start() }()
		if err := <-started; err != nil {
			return "", fmt.Errorf("redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		url := "redis://:" + pw + "@127.0.0.1:" + strconv.Itoa(port)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if last = ping(url); last == nil {
				return url, nil
			}
			select {
			case <-exited:
			case <-time.After(50 * time.Millisecond):
				if time.Now().Before(deadline) {
					continue
				}
				cmd.Process.Kill()
			}
			break
		}
	}
	return "", fmt.Errorf("redis-server did not start: %s", redacted(last))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
