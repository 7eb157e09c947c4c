// Package config owns the service's configuration and `deskbot check`:
// the variables (and the .env file) read into a Config, every mistake in
// them named by its variable and never its value, the guard that no
// setting unguards a tool or hands a desk a secret, and the probes of
// Redis, Telegram, the models, Kite and the sandbox. The probes' words are
// one source: check prints them, and the start logs them (ProbeAtStart,
// TelegramTrouble). Nothing here starts a part of the service or keeps
// state; every function is safe to call from any goroutine.
package config

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/caarlos0/env/v11"
	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/risk"
	"github.com/deskbot/deskbot/store"
)

// Config is the whole service configuration, read from the environment.
// Every variable is listed with its default and meaning in .env.example.
type Config struct {
	// Telegram: the bot, its group, and who may decide held calls.
	TelegramToken     string        `env:"TELEGRAM_TOKEN,required,notEmpty"`
	TelegramAPIURL    string        `env:"TELEGRAM_API_URL" envDefault:"https://api.telegram.org"`
	TelegramChatID    int64         `env:"TELEGRAM_CHAT_ID,required,notEmpty"`
	TelegramApprovers []int64       `env:"TELEGRAM_APPROVERS,required,notEmpty" envSeparator:","`
	DenyReasonWait    time.Duration `env:"DENY_REASON_WAIT" envDefault:"2m"`
	// TelegramTopics gives each desk a forum topic of its own.
	TelegramTopics bool `env:"TELEGRAM_TOPICS" envDefault:"false"`
	// TelegramPin pins a held call's message while its request is open.
	TelegramPin bool `env:"TELEGRAM_PIN" envDefault:"false"`
	// TelegramQuiet lists what the group receives without a notification
	// sound (bot.QuietNames); validate refuses a name it does not know.
	TelegramQuiet []string `env:"TELEGRAM_QUIET" envSeparator:","`

	// The gate and the store: which tools wait for a person, and where
	// requests, grants and events are kept.
	// One Redis: REDIS_URL for a single server, or REDIS_SENTINELS with
	// REDIS_MASTER_NAME for a primary Sentinel watches, or
	// REDIS_CLUSTER_ADDRS for a Cluster (see storeOptions).
	RedisURL              string        `env:"REDIS_URL"`
	RedisSentinels        []string      `env:"REDIS_SENTINELS" envSeparator:","`
	RedisMasterName       string        `env:"REDIS_MASTER_NAME"`
	RedisClusterAddrs     []string      `env:"REDIS_CLUSTER_ADDRS" envSeparator:","`
	RedisUsername         string        `env:"REDIS_USERNAME"`
	RedisPassword         string        `env:"REDIS_PASSWORD"`
	RedisSentinelPassword string        `env:"REDIS_SENTINEL_PASSWORD"`
	RedisPrefix           string        `env:"REDIS_PREFIX" envDefault:"deskbot:"`
	GrantTTL              time.Duration `env:"GRANT_TTL" envDefault:"0s"`
	// GrantMaxNotional caps, in rupees of exposure, the orders a
	// place_order grant covers; 0: the exposure of the order it was given on.
	GrantMaxNotional float64 `env:"GRANT_MAX_NOTIONAL" envDefault:"0"`
	// AuditKeep is how many days the audit trail keeps an entry.
	AuditKeep      int           `env:"AUDIT_KEEP" envDefault:"1825"`
	ApprovalTools  []string      `env:"APPROVAL_TOOLS" envDefault:"flatten_desk,place_order,modify_order,place_gtt" envSeparator:","`
	ApprovalExpiry time.Duration `env:"APPROVAL_EXPIRY" envDefault:"5m"`
	PriceMaxAge    time.Duration `env:"PRICE_MAX_AGE" envDefault:"60s"`
	MaxWatches     int           `env:"MAX_WATCHES" envDefault:"50"`
	SweepSchedule  string        `env:"SWEEP_SCHEDULE" envDefault:"@every 1m"`
	RiskCheckEvery time.Duration `env:"RISK_CHECK_EVERY" envDefault:"30s"`
	DataDir        string        `env:"DATA_DIR" envDefault:"./data"`
	LogLevel       string        `env:"LOG_LEVEL" envDefault:"info"`
	LogFormat      string        `env:"LOG_FORMAT" envDefault:"text"`

	// ApprovalRemind is how long before a request lapses its unanswered
	// approvers are reminded; unset or empty: a third of ApprovalExpiry
	// (Load fills it in), 0s: no reminders.
	ApprovalRemind time.Duration `env:"APPROVAL_REMIND"`

	// The sandbox: where and how desks' commands run. SANDBOX_ENV may name
	// no secret of the service (see Guard).
	Sandbox        string        `env:"SANDBOX" envDefault:"auto"`
	SandboxNetwork bool          `env:"SANDBOX_NETWORK" envDefault:"true"`
	SandboxEnv     []string      `env:"SANDBOX_ENV" envSeparator:","`
	SandboxTimeout time.Duration `env:"SANDBOX_TIMEOUT" envDefault:"120s"`
	// A background job's lifetime: a trading day.
	SandboxJobTimeout time.Duration `env:"SANDBOX_JOB_TIMEOUT" envDefault:"8h"`

	// Desks and models. Per-desk keys stay in the environment, named by
	// api_key_env in DESKS_FILE.
	Desks           []string      `env:"DESKS" envDefault:"main" envSeparator:","`
	DesksFile       string        `env:"DESKS_FILE"`
	ModelProvider   string        `env:"MODEL_PROVIDER" envDefault:"openai"`
	ModelBaseURL    string        `env:"MODEL_BASE_URL" envDefault:"http://localhost:11434/v1"`
	ModelAPIKey     string        `env:"MODEL_API_KEY"`
	ModelName       string        `env:"MODEL_NAME" envDefault:"qwen3"`
	ModelTimeout    time.Duration `env:"MODEL_TIMEOUT" envDefault:"120s"`
	AnthropicAPIKey string        `env:"ANTHROPIC_API_KEY"`
	// The Claude Code CLI run by desks whose chain names provider
	// "claude-code".
	ClaudeBin string `env:"CLAUDE_BIN" envDefault:"claude"`

	// Operations: /healthz and /metrics.
	HTTPAddr string `env:"HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	// LeaderLease is the leader lease's lifetime when several instances
	// share one Redis: a standby takes over within it of the leader's
	// death (package leader).
	LeaderLease time.Duration `env:"LEADER_LEASE" envDefault:"10s"`

	// The desks page, a Telegram Mini App served on HTTP_ADDR at
	// WEBAPP_URL's path (cmd/deskbot/webapp.go); off while WEBAPP_URL is empty.
	WebAppURL    string        `env:"WEBAPP_URL"`
	WebAppName   string        `env:"WEBAPP_NAME"`
	WebAppMaxAge time.Duration `env:"WEBAPP_MAX_AGE" envDefault:"1h"`

	// The broker: paper (its own prices), paper-kite (paper trading on
	// Kite's live prices, orders checked against Kite's instrument list
	// and MARKET_HOURS / MARKET_HOLIDAYS), or kite (orders placed at Kite,
	// checked the same way). kite.go checks them.
	Broker         string   `env:"BROKER" envDefault:"paper"`
	MarketHours    string   `env:"MARKET_HOURS" envDefault:"Mon-Fri 09:15-15:30"`
	MarketHolidays string   `env:"MARKET_HOLIDAYS"`
	KiteExchanges  []string `env:"KITE_EXCHANGES" envDefault:"NSE,NFO" envSeparator:","`

	// Kite Connect (package trading): the daily login is on while KITE_API_KEY is
	// set. KITE_API_SECRET is a secret.
	KiteAPIKey        string `env:"KITE_API_KEY"`
	KiteAPISecret     string `env:"KITE_API_SECRET"`
	KiteUserID        string `env:"KITE_USER_ID"`
	KiteAPIURL        string `env:"KITE_API_URL" envDefault:"https://api.kite.trade"`
	KiteTickerURL     string `env:"KITE_TICKER_URL" envDefault:"wss://ws.kite.trade"`
	BrokerCallbackURL string `env:"BROKER_CALLBACK_URL"`
	// KiteLoginReminder is when, on trading days without a session, the
	// group is asked to log in: HH:MM India time.
	KiteLoginReminder string `env:"KITE_LOGIN_REMINDER" envDefault:"08:45"`
	// KiteAlgoID is the exchange's algo id every order and modification at
	// Kite carries (a desk's algo_id in DESKS_FILE overrides it); "" sends
	// none. KiteSourceIP is the local address order requests leave from:
	// the one registered in the Kite app's IP whitelist ("" leaves it to
	// the host's routing).
	KiteAlgoID   string `env:"KITE_ALGO_ID"`
	KiteSourceIP string `env:"KITE_SOURCE_IP"`

	// ReportAt is when the day's report goes to the group's General topic:
	// HH:MM India time, Monday to Friday (package report).
	ReportAt string `env:"REPORT_AT" envDefault:"15:45"`

	// deskKeys are the values of the variables DESKS_FILE names as
	// api_key_env: secrets the log scrubber must know.
	deskKeys []string
}

// Load reads the configuration from environ (os.Environ() form or a
// map). Each problem is one line naming its variable, never its value (a
// value may be a secret).
func Load(environ map[string]string) (Config, error) {
	environ = trimLists(environ)
	cfg, err := env.ParseAsWithOptions[Config](env.Options{Environment: environ})
	// A reminder by default comes when a third of the wait is left: the
	// default depends on APPROVAL_EXPIRY, so no envDefault can say it.
	if strings.TrimSpace(environ["APPROVAL_REMIND"]) == "" {
		cfg.ApprovalRemind = cfg.ApprovalExpiry / 3
	}
	var problems []string
	if err != nil {
		problems = append(problems, envProblems(err)...)
	}
	problems = append(problems, cfg.validate()...)
	if _, set := environ["AUDIT_RETENTION"]; set {
		// Ignored, it would keep the trail for five years where its
		// setter meant something else.
		problems = append(problems, "AUDIT_RETENTION: is now AUDIT_KEEP, a number of days (default 1825); set that instead")
	}
	problems = append(problems, cfg.Guard(environ)...)
	for _, name := range deskKeyEnvs(cfg.DesksFile) {
		if v := environ[name]; v != "" {
			cfg.deskKeys = append(cfg.deskKeys, v)
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return cfg, errors.New(strings.Join(problems, "\n"))
	}
	return cfg, nil
}

func (c Config) validate() []string {
	var p []string
	bad := func(name, why string) { p = append(p, name+": "+why) }
	for i, id := range c.TelegramApprovers {
		if id <= 0 {
			bad("TELEGRAM_APPROVERS", "user ids are positive numbers")
			break
		}
		if why, ok := deskbot.SharedAccount(id); ok {
			bad("TELEGRAM_APPROVERS", fmt.Sprintf("%d is %s, shared by people who are not approvers; name the approvers' own user ids", id, why))
		}
		if slices.Contains(c.TelegramApprovers[:i], id) {
			bad("TELEGRAM_APPROVERS", fmt.Sprintf("%d is named twice; each approver counts once", id))
		}
	}
	p = append(p, c.webAppProblems()...)
	p = append(p, c.kiteProblems()...)
	if u, err := url.Parse(c.TelegramAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("TELEGRAM_API_URL", "must be an http(s) URL")
	}
	p = append(p, c.validateRedis()...)
	if c.PriceMaxAge <= 0 {
		bad("PRICE_MAX_AGE", "must be a positive duration such as 60s: how old a last price may be, while the market is open, and still size an order")
	}
	if c.MaxWatches < 1 || c.MaxWatches > 1000 {
		bad("MAX_WATCHES", "must be a whole number from 1 to 1000: how many price watches one desk may have at once")
	}
	if c.ApprovalExpiry <= 0 {
		bad("APPROVAL_EXPIRY", "must be a positive duration such as 5m")
	} else if c.ApprovalRemind < 0 || c.ApprovalRemind >= c.ApprovalExpiry {
		bad("APPROVAL_REMIND", fmt.Sprintf("must be 0s (no reminders) or a positive duration shorter than APPROVAL_EXPIRY (%s), such as %s (the default, a third of it)", c.ApprovalExpiry, c.ApprovalExpiry/3))
	}
	if _, err := bot.ParseQuiet(c.TelegramQuiet); err != nil {
		p = append(p, deskbot.ErrorMessage(err))
	}
	if c.GrantMaxNotional < 0 || math.IsNaN(c.GrantMaxNotional) || math.IsInf(c.GrantMaxNotional, 0) {
		bad("GRANT_MAX_NOTIONAL", "must be 0 (the order's own exposure) or a positive number of rupees")
	}
	if c.GrantTTL < 0 {
		bad("GRANT_TTL", "must be 0 (until revoked) or a positive duration")
	}
	if c.AuditKeep < 1 || c.AuditKeep > 36500 {
		bad("AUDIT_KEEP", "must be a whole number of days from 1 to 36500, such as 1825 (five years): how long the audit trail keeps an entry")
	}
	if c.DenyReasonWait < 0 {
		bad("DENY_REASON_WAIT", "must be 0 or a positive duration")
	}
	if c.RiskCheckEvery <= 0 || c.RiskCheckEvery > risk.MaxEvery {
		bad("RISK_CHECK_EVERY", "must be a positive duration of at most 30s (the risk rules are checked at least every 30 seconds)")
	}
	if c.SandboxTimeout <= 0 {
		bad("SANDBOX_TIMEOUT", "must be a positive duration")
	}
	if c.SandboxJobTimeout <= 0 {
		bad("SANDBOX_JOB_TIMEOUT", "must be a positive duration such as 8h")
	}
	if c.ModelTimeout <= 0 {
		bad("MODEL_TIMEOUT", "must be a positive duration")
	}
	if c.LeaderLease < time.Second {
		bad("LEADER_LEASE", "must be at least 1s (the leader renews it every quarter of it)")
	}
	switch c.Sandbox {
	case "auto", "bwrap", "none":
	default:
		bad("SANDBOX", "must be auto, bwrap or none")
	}
	switch c.ModelProvider {
	case "openai", "anthropic":
	default:
		bad("MODEL_PROVIDER", "must be openai or anthropic")
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("LOG_LEVEL", "must be debug, info, warn or error")
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad("LOG_FORMAT", "must be text or json")
	}
	if c.DataDir == "" {
		bad("DATA_DIR", "must not be empty")
	}
	if _, err := report.Schedule(c.ReportAt); err != nil {
		bad("REPORT_AT", deskbot.ErrorMessage(err)+", such as 15:45")
	}
	return p
}

// Quiet is TELEGRAM_QUIET as the bot takes it (validate checked it).
func (c Config) Quiet() bot.Quiet {
	q, _ := bot.ParseQuiet(c.TelegramQuiet)
	return q
}

// validateRedis checks that the Redis variables name exactly one Redis (or
// none: the embedded one) and that nothing set goes unused or contradicts
// another setting. No message carries a value: a URL or a password is a
// secret.
func (c Config) validateRedis() []string {
	var p []string
	bad := func(name, why string) { p = append(p, name+": "+why) }
	named := 0
	for _, set := range []bool{c.RedisURL != "", len(c.RedisSentinels) > 0, len(c.RedisClusterAddrs) > 0} {
		if set {
			named++
		}
	}
	if named > 1 {
		bad("REDIS_URL", "set only one of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_ADDRS (they name different kinds of Redis)")
	}
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
			bad("REDIS_URL", "must be a redis://, rediss:// or unix:// URL")
		} else if pw, ok := u.User.Password(); ok && pw != "" && c.RedisPassword != "" && pw != c.RedisPassword {
			bad("REDIS_PASSWORD", "differs from the password in REDIS_URL; set one of them")
		}
	}
	for _, v := range []struct {
		name  string
		addrs []string
	}{{"REDIS_SENTINELS", c.RedisSentinels}, {"REDIS_CLUSTER_ADDRS", c.RedisClusterAddrs}} {
		for _, a := range v.addrs {
			if _, port, err := net.SplitHostPort(strings.TrimSpace(a)); err != nil || port == "" {
				bad(v.name, "must be a comma-separated list of host:port")
				break
			}
		}
	}
	switch {
	case len(c.RedisSentinels) > 0 && c.RedisMasterName == "":
		bad("REDIS_MASTER_NAME", "required with REDIS_SENTINELS: the name the sentinels know the primary by (sentinel monitor <name> ...)")
	case len(c.RedisSentinels) == 0 && c.RedisMasterName != "":
		bad("REDIS_MASTER_NAME", "set without REDIS_SENTINELS: name the sentinels too")
	}
	if c.RedisSentinelPassword != "" && len(c.RedisSentinels) == 0 {
		bad("REDIS_SENTINEL_PASSWORD", "set without REDIS_SENTINELS")
	}
	if tag := strings.TrimSuffix(c.RedisPrefix, ":"); tag == "" || strings.ContainsAny(tag, "{}") {
		bad("REDIS_PREFIX", "must have some text before its last \":\" and no braces (it becomes the keys' Cluster hash tag)")
	}
	return p
}

// StoreOptions is the store's configuration: which Redis, its credentials,
// the key prefix and the audit trail's retention.
func (c Config) StoreOptions() store.Options {
	trim := func(addrs []string) []string {
		var out []string
		for _, a := range addrs {
			if a = strings.TrimSpace(a); a != "" {
				out = append(out, a)
			}
		}
		return out
	}
	return store.Options{
		URL: c.RedisURL, SentinelAddrs: trim(c.RedisSentinels), MasterName: c.RedisMasterName,
		ClusterAddrs: trim(c.RedisClusterAddrs), Username: c.RedisUsername, Password: c.RedisPassword,
		SentinelPassword: c.RedisSentinelPassword, Prefix: c.RedisPrefix,
		AuditRetention: time.Duration(c.AuditKeep) * 24 * time.Hour,
	}
}

// redisNamed reports whether a Redis is configured (else the embedded one
// runs).
func (c Config) redisNamed() bool {
	return c.RedisURL != "" || len(c.RedisSentinels) > 0 || len(c.RedisClusterAddrs) > 0
}

// envProblems turns the env library's errors into one line per variable.
func envProblems(err error) []string {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return []string{err.Error()}
	}
	names := fieldEnvNames()
	var out []string
	for _, e := range agg.Errors {
		var notSet env.VarIsNotSetError
		var empty env.EmptyVarError
		var parse env.ParseError
		switch {
		case errors.As(e, &notSet):
			out = append(out, notSet.Key+": required, not set")
		case errors.As(e, &empty):
			out = append(out, empty.Key+": required, empty")
		case errors.As(e, &parse):
			out = append(out, fmt.Sprintf("%s: not a valid %s", names[parse.Name], typeWord(parse.Type)))
		default:
			out = append(out, e.Error())
		}
	}
	return out
}

// trimLists returns environ with the spaces around each item of a list
// variable (a field with an envSeparator) taken away, so that
// TELEGRAM_APPROVERS='111, 222' means what it says, as every list does.
// environ itself is not changed.
func trimLists(environ map[string]string) map[string]string {
	out := maps.Clone(environ)
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		sep := f.Tag.Get("envSeparator")
		name := strings.Split(f.Tag.Get("env"), ",")[0]
		v, ok := out[name]
		if sep == "" || !ok {
			continue
		}
		items := strings.Split(v, sep)
		for j := range items {
			items[j] = strings.TrimSpace(items[j])
		}
		out[name] = strings.Join(items, sep)
	}
	return out
}

func fieldEnvNames() map[string]string {
	m := map[string]string{}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		m[f.Name] = strings.Split(f.Tag.Get("env"), ",")[0]
	}
	return m
}

func typeWord(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "duration (such as 90s, 5m or 2h)"
	case reflect.TypeFor[int64]():
		return "whole number"
	case reflect.TypeFor[[]int64]():
		return "comma-separated list of numeric ids"
	case reflect.TypeFor[bool]():
		return "boolean (true or false)"
	}
	return t.String()
}

// Secrets are the values no log line may carry.
func (c Config) Secrets() []string {
	s := []string{c.TelegramToken, TokenSecret(c.TelegramToken), c.ModelAPIKey, c.AnthropicAPIKey, c.RedisPassword, c.RedisSentinelPassword, c.KiteAPISecret}
	s = append(s, c.deskKeys...)
	return append(s, redisPasswords(c.RedisURL)...)
}

// TokenSecret is the part of a bot token after its colon. The part before
// is the bot's user id, which anyone in the group can see, so the rest
// alone is as good as the whole token: a secret on its own.
func TokenSecret(token string) string {
	_, secret, _ := strings.Cut(token, ":")
	return secret
}

// redisPasswords is the password of a Redis URL in both forms a secret may
// be found in: as Redis takes it, and as written in the URL (escaped where
// the URL needs it, "p%40ss" for "p@ss").
func redisPasswords(rawURL string) []string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return nil
	}
	pw, ok := u.User.Password()
	if !ok {
		return nil
	}
	forms := []string{pw}
	_, rest, _ := strings.Cut(rawURL, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, raw, ok := strings.Cut(rest[:at], ":"); ok && raw != pw {
			forms = append(forms, raw)
		}
	}
	return forms
}

// Guard checks the settings where a mistake would quietly weaken the
// service, and puts APPROVAL_TOOLS in the form the gate needs:
//
//   - APPROVAL_TOOLS: each entry is trimmed and empty entries are dropped,
//     and every entry must name a tool the service has. The gate compares
//     names exactly, so " place_order" or "flatten-desk" would guard
//     nothing.
//   - SANDBOX_ENV: a desk must never be handed a secret, so no entry may name
//     a variable of the service's secrets (secretEnv), nor one whose value
//     carries a secret's value in any form (carriesSecret), whatever the
//     secret's length.
//   - TELEGRAM_API_URL, MODEL_BASE_URL and the base_url of DESKS_FILE's
//     models: plain http only to this machine (cleartextURL) where a
//     secret travels with every request (the bot token in the path, a
//     model's key in a header).
//
// environ is the environment the service runs with.
func (c *Config) Guard(environ map[string]string) []string {
	var p []string
	tools, err := approvalTools(c.ApprovalTools)
	if err != nil {
		p = append(p, "APPROVAL_TOOLS: "+err.Error())
	}
	c.ApprovalTools = tools
	p = append(p, c.cleartextProblems(environ)...)

	secretNames := append(secretEnv(), deskKeyEnvs(c.DesksFile)...)
	var secrets []secret
	for _, name := range secretNames {
		secrets = append(secrets, secret{name, environ[name]})
	}
	for _, v := range redisPasswords(environ["REDIS_URL"]) {
		secrets = append(secrets, secret{"the password in REDIS_URL", v})
	}
	secrets = append(secrets, secret{"TELEGRAM_TOKEN after its colon", TokenSecret(environ["TELEGRAM_TOKEN"])})
	var pass []string
	for _, name := range c.SandboxEnv {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		pass = append(pass, name)
		switch {
		case slices.Contains(secretNames, name) || strings.HasPrefix(name, "REDIS_"):
			p = append(p, fmt.Sprintf("SANDBOX_ENV: %s holds a secret of the service (the bot token, Redis, a model key or the broker's secret); a desk must never see it", name))
		default:
			if from, ok := carriesSecret(environ[name], secrets); ok {
				p = append(p, fmt.Sprintf("SANDBOX_ENV: %s carries the value of a secret of the service (%s), plain or encoded (URL-escaped, base64, hex, inside a URL); a desk must never see it", name, from))
			}
		}
	}
	c.SandboxEnv = pass
	return p
}

// secret is a value a desk must never get, and where it comes from (for
// messages: never the value).
type secret struct{ from, value string }

// carriesSecret reports whether value holds any of secrets, as it is or
// in a form a program would turn back into it: URL-escaped (once or more,
// "+" for a space or not), base64 (standard or URL alphabet, padded or not,
// anywhere in the value, alone or with other text encoded along, as in an
// Authorization header's "user:password") or hex; and which one. Every
// secret counts, however short: a short one is still the key (a local
// server's dummy key is better left out of what desks get than guessed
// harmless), and the message names where it comes from.
func carriesSecret(value string, secrets []secret) (from string, ok bool) {
	if value == "" {
		return "", false
	}
	forms := decodedForms(value)
	lower := strings.ToLower(value)
	for _, s := range secrets {
		if s.value == "" {
			continue
		}
		for _, f := range forms {
			if strings.Contains(f, s.value) {
				return s.from, true
			}
		}
		if strings.Contains(lower, hex.EncodeToString([]byte(s.value))) {
			return s.from, true
		}
	}
	return "", false
}

// decodedForms is value and what URL-unescaping and base64-decoding its
// parts make of it, over a few rounds (a base64 credential inside an
// escaped URL), bounded so that no value makes it slow.
func decodedForms(value string) []string {
	const maxForms = 256
	seen := map[string]bool{value: true}
	forms := []string{value}
	add := func(f string) {
		if f != "" && !seen[f] && len(forms) < maxForms {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for start, round := 0, 0; round < 3 && start < len(forms); round++ {
		end := len(forms)
		for _, f := range forms[start:end] {
			add(unescapeURL(f, false))
			add(unescapeURL(f, true))
			for _, d := range base64Runs(f) {
				add(d)
			}
		}
		start = end
	}
	return forms
}

// unescapeURL decodes every valid %XX of s and, with plus, "+" as a space;
// a stray "%" stays, where url.PathUnescape would give up on the whole.
func unescapeURL(s string, plus bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(v))
			i += 2
		case plus && s[i] == '+':
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// base64Runs decodes each run of base64 characters in s, from each of the
// four offsets a base64 text may begin at within the run (text before it
// may be letters too), in either alphabet, padded or not.
func base64Runs(s string) []string {
	isB64 := func(c byte) bool {
		return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
	}
	var out []string
	for i := 0; i < len(s); {
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isB64(s[j]) {
			j++
		}
		run := strings.NewReplacer("-", "+", "_", "/").Replace(s[i:j])
		for off := 0; off < 4 && off < len(run); off++ {
			r := run[off:]
			if len(r)%4 == 1 {
				r = r[:len(r)-1]
			}
			if d, err := base64.RawStdEncoding.DecodeString(r); err == nil && len(d) > 0 {
				out = append(out, string(d))
			}
		}
		i = j
	}
	return out
}

// cleartextProblems refuses plain http to another machine where a secret
// rides on every request: the Bot API's URL carries the token in its path,
// and a model's key is sent in a header. Anyone on the way (a shared
// network, a proxy, a cloud's other tenants) would read it. No message
// carries the URL: it may hold a secret of its own.
func (c Config) cleartextProblems(environ map[string]string) []string {
	var p []string
	const fix = "use https, or plain http only to this machine (localhost, 127.0.0.1 or ::1)"
	if cleartextURL(c.TelegramAPIURL) {
		p = append(p, "TELEGRAM_API_URL: plain http to another machine would send the bot token, which is in every request's path, unencrypted; "+fix)
	}
	if key := c.ModelAPIKey; (key != "" || c.ModelProvider == model.Anthropic && c.AnthropicAPIKey != "") && cleartextURL(c.ModelBaseURL) {
		p = append(p, "MODEL_BASE_URL: plain http to another machine would send the model's API key (MODEL_API_KEY or ANTHROPIC_API_KEY) unencrypted with every request; "+fix)
	}
	for _, m := range deskModels(c.DesksFile) {
		keyEnv := m.APIKeyEnv
		if keyEnv == "" && (m.Provider == model.Anthropic || m.Provider == agent.ClaudeCode) {
			keyEnv = "ANTHROPIC_API_KEY"
		}
		if keyEnv != "" && cleartextURL(m.BaseURL) {
			p = append(p, fmt.Sprintf("DESKS_FILE: desk %q model %d: base_url is plain http to another machine and would send the key in %s unencrypted with every request; %s", m.desk, m.index, keyEnv, fix))
		}
	}
	return p
}

// cleartextURL reports whether raw is a plain http URL to a host other than
// the loopback. A URL that does not parse is validate's to report.
func cleartextURL(raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// approvalTools trims each entry and drops empty ones; an entry that names
// no tool of knownTools is an error naming it and the known tools. A list
// left with no tool at all is an error too: it can only be a mistake, since
// the variable unset means the default. Either terminal tool brings the
// other.
func approvalTools(entries []string) ([]string, error) {
	known := KnownTools()
	var tools, unknown []string
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "" || slices.Contains(tools, e):
		case slices.Contains(known, e):
			tools = append(tools, e)
		default:
			unknown = append(unknown, strconv.Quote(e))
		}
	}
	switch {
	case len(unknown) == 1:
		return tools, fmt.Errorf("%s is not a tool (tools are %s)", unknown[0], strings.Join(known, ", "))
	case len(unknown) > 1:
		return tools, fmt.Errorf("%s are not tools (tools are %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	case len(tools) == 0 && len(entries) > 0:
		return tools, fmt.Errorf("names no tool (tools are %s)", strings.Join(known, ", "))
	}
	// bash and bash_background run commands in the same terminal: holding
	// one and not the other would let a desk run any command unheld
	// through the other, so naming either holds both. modify_order turns
	// an open order into another order: holding place_order and not it
	// would let a desk grow any order unheld, so naming place_order holds
	// it too (never the other way round: a modification is no new order).
	// A GTT places an order when it fires: a list that holds orders (one
	// written before place_gtt existed among them) holds GTTs too.
	for _, pair := range [][2]string{{deskbot.ToolBash, deskbot.ToolBashBackground}, {deskbot.ToolBashBackground, deskbot.ToolBash}, {deskbot.ToolPlaceOrder, deskbot.ToolModifyOrder}, {deskbot.ToolPlaceOrder, deskbot.ToolPlaceGTT}} {
		if slices.Contains(tools, pair[0]) && !slices.Contains(tools, pair[1]) {
			tools = append(tools, pair[1])
		}
	}
	return tools, nil
}

// secretEnv are the variables holding the service's own secrets. Names
// starting with REDIS_ are refused too, whatever they hold.
func secretEnv() []string {
	return []string{"TELEGRAM_TOKEN", "REDIS_URL", "REDIS_PASSWORD", "REDIS_SENTINEL_PASSWORD", "MODEL_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KITE_API_SECRET"}
}

// deskKeyEnvs returns the variables DESKS_FILE names as api_key_env.
func deskKeyEnvs(file string) []string {
	var names []string
	for _, m := range deskModels(file) {
		if m.APIKeyEnv != "" && !slices.Contains(names, m.APIKeyEnv) {
			names = append(names, m.APIKeyEnv)
		}
	}
	return names
}

// deskModel is what the guard needs of a [[desk.model]] of DESKS_FILE.
type deskModel struct {
	desk                         string
	index                        int // 1-based, as LoadDesks counts them
	Provider, BaseURL, APIKeyEnv string
}

// deskModels reads DESKS_FILE's models. A file that cannot be read has
// none here: loading the desks reports it.
func deskModels(file string) []deskModel {
	if file == "" {
		return nil
	}
	var f struct {
		Desk []struct {
			Name  string
			Model []struct {
				Provider  string
				BaseURL   string `toml:"base_url"`
				APIKeyEnv string `toml:"api_key_env"`
			}
		}
	}
	if _, err := toml.DecodeFile(file, &f); err != nil {
		return nil
	}
	var out []deskModel
	for _, d := range f.Desk {
		for i, m := range d.Model {
			out = append(out, deskModel{desk: d.Name, index: i + 1, Provider: cmp.Or(m.Provider, model.OpenAI), BaseURL: m.BaseURL, APIKeyEnv: m.APIKeyEnv})
		}
	}
	return out
}

// CheckPolicies checks the desks' policies as deskbot.Policies.Check does,
// and that a desk offered both terminal tools asks as many approvers for
// each: a count on one only would let the desk run the same command
// through the other on fewer people's yes. The start and deskbot check
// both call it.
func CheckPolicies(desks []agent.DeskConfig, guarded []string, approvers []int64) error {
	if err := agent.Policies(desks).Check(guarded, len(approvers)); err != nil {
		return err
	}
	if err := agent.Policies(desks).CheckRoles(approvers); err != nil {
		return err
	}
	for _, d := range desks {
		offered := func(tool string) bool { return len(d.Tools) == 0 || slices.Contains(d.Tools, tool) }
		if !offered(deskbot.ToolBash) || !offered(deskbot.ToolBashBackground) {
			continue
		}
		a, b := max(d.Policy[deskbot.ToolBash].Approvals, 1), max(d.Policy[deskbot.ToolBashBackground].Approvals, 1)
		if a != b {
			return deskbot.Errorf(deskbot.EINVALID, "desk %q policy: %s needs %d approvers and %s %d, but bash and bash_background run commands in the same terminal; give both the same approvals",
				d.Name, deskbot.ToolBash, a, deskbot.ToolBashBackground, b)
		}
	}
	return nil
}
