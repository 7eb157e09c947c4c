package store

import (
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// newClient builds the client Options ask for: a single server's from the
// URL, else Sentinel's (a client of the primary that asks the sentinels
// where it is, again after a failover), else a Cluster's. anon leaves every
// credential out (RequiresAuth asks whether Redis lets such a client in).
// No error text carries a URL or a password. b is the pool's budget
// (pools.go).
func newClient(o Options, url string, anon bool, b budget) (redis.UniversalClient, error) {
	var u *redis.UniversalOptions
	switch {
	case len(o.SentinelAddrs) > 0 && len(o.ClusterAddrs) > 0,
		url != "" && (len(o.SentinelAddrs) > 0 || len(o.ClusterAddrs) > 0):
		return nil, deskbot.Errorf(deskbot.EINVALID, "Name one Redis: a URL, sentinels or Cluster nodes, not several")
	case len(o.SentinelAddrs) > 0:
		if o.MasterName == "" {
			return nil, deskbot.Errorf(deskbot.EINVALID, "Sentinel needs the primary's name (REDIS_MASTER_NAME)")
		}
		u = &redis.UniversalOptions{Addrs: o.SentinelAddrs, MasterName: o.MasterName,
			Username: o.Username, Password: o.Password, SentinelPassword: o.SentinelPassword}
	case len(o.ClusterAddrs) > 0:
		u = &redis.UniversalOptions{Addrs: o.ClusterAddrs, IsClusterMode: true,
			Username: o.Username, Password: o.Password}
	default:
		ro, err := redis.ParseURL(url)
		if err != nil {
			// The parse error may quote the URL, password and all.
			return nil, deskbot.Errorf(deskbot.EINVALID, "REDIS_URL is not a valid redis:// URL")
		}
		if ro.Password == "" && ro.Username == "" {
			ro.Username, ro.Password = o.Username, o.Password
		}
		if anon {
			ro.Username, ro.Password = "", ""
		}
		tune(tuning{&ro.DisableIdentity, &ro.DialerRetries, &ro.DialerRetryTimeout, &ro.ReadBufferSize, &ro.WriteBufferSize, &ro.PipelinePoolSize,
			&ro.PoolSize, &ro.MaxIdleConns, &ro.PoolTimeout}, b)
		return redis.NewClient(ro), nil
	}
	if anon {
		u.Username, u.Password, u.SentinelPassword = "", "", ""
	}
	tune(tuning{&u.DisableIdentity, &u.DialerRetries, &u.DialerRetryTimeout, &u.ReadBufferSize, &u.WriteBufferSize, &u.PipelinePoolSize,
		&u.PoolSize, &u.MaxIdleConns, &u.PoolTimeout}, b)
	return redis.NewUniversalClient(u), nil
}

// tuning points at the options tune sets, in whichever options type the
// client is built from.
type tuning struct {
	disableIdentity         *bool
	dialerRetries           *int
	dialerRetryTimeout      *time.Duration
	readBuffer, writeBuffer *int
	pipelinePool            *int
	poolSize, maxIdle       *int
	poolTimeout             *time.Duration
}

// connBuffer is each connection's read and write buffer: every reply and
// command of the store is far smaller (a request hash, a page of 100
// events), and a longer one is read in several pieces, not refused.
// go-redis's default is 32 KiB each, per connection.
const connBuffer = 16 << 10

// tune sets what every client of the store has. CLIENT SETINFO is one more
// round trip per connection, and 7.0 rejects it. One quick redial, not
// go-redis's default ~2 s of them: a failed dial is the store's to retry
// (retry.go), where the rule for how long lives. Buffers of connBuffer. And
// no dedicated pipeline pool: by default go-redis keeps up to 10 more
// connections for pipelines and MULTI, on top of the pool, each with 128 KiB
// buffers; a hold's burst filled them (each one also costs Redis some 20 KB
// of client buffers), while the store's pipelines are short and run as well
// on the main pool, as they did before go-redis added that pool. The pool's
// size, idle connections kept and wait for a connection are b's.
func tune(t tuning, b budget) {
	*t.poolSize, *t.maxIdle, *t.poolTimeout = b.size, b.idle, b.timeout
	*t.disableIdentity = true
	if *t.dialerRetries == 0 {
		*t.dialerRetries, *t.dialerRetryTimeout = 1, 50*time.Millisecond
	}
	*t.readBuffer, *t.writeBuffer = connBuffer, connBuffer
	*t.pipelinePool = -1
}
