package main

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is the whole service configuration, read from the environment.
// Every variable is listed with its default and meaning in .env.example.
type Config struct {
	// Telegram (issue 4)
	TelegramToken     string        `env:"TELEGRAM_TOKEN,required,notEmpty"`
	TelegramAPIURL    string        `env:"TELEGRAM_API_URL" envDefault:"https://api.telegram.org"`
	TelegramChatID    int64         `env:"TELEGRAM_CHAT_ID,required,notEmpty"`
	TelegramApprovers []int64       `env:"TELEGRAM_APPROVERS,required,notEmpty" envSeparator:","`
	DenyReasonWait    time.Duration `env:"DENY_REASON_WAIT" envDefault:"2m"`

	// The gate and the store (issue 2)
	RedisURL       string        `env:"REDIS_URL"`
	RedisPrefix    string        `env:"REDIS_PREFIX" envDefault:"deskbot:"`
	GrantTTL       time.Duration `env:"GRANT_TTL" envDefault:"0s"`
	ApprovalTools  []string      `env:"APPROVAL_TOOLS" envDefault:"flatten_desk" envSeparator:","`
	ApprovalExpiry time.Duration `env:"APPROVAL_EXPIRY" envDefault:"5m"`
	SweepSchedule  string        `env:"SWEEP_SCHEDULE" envDefault:"@every 1m"`
	DataDir        string        `env:"DATA_DIR" envDefault:"./data"`
	LogLevel       string        `env:"LOG_LEVEL" envDefault:"info"`
	LogFormat      string        `env:"LOG_FORMAT" envDefault:"text"`

	// The sandbox (issue 3)
	Sandbox        string        `env:"SANDBOX" envDefault:"auto"`
	SandboxNetwork bool          `env:"SANDBOX_NETWORK" envDefault:"true"`
	SandboxEnv     []string      `env:"SANDBOX_ENV" envSeparator:","`
	SandboxTimeout time.Duration `env:"SANDBOX_TIMEOUT" envDefault:"120s"`
	// A background job's lifetime: a trading day.
	SandboxJobTimeout time.Duration `env:"SANDBOX_JOB_TIMEOUT" envDefault:"8h"`

	// Desks and models (issue 5)
	Desks           []string      `env:"DESKS" envDefault:"main" envSeparator:","`
	DesksFile       string        `env:"DESKS_FILE"`
	ModelProvider   string        `env:"MODEL_PROVIDER" envDefault:"openai"`
	ModelBaseURL    string        `env:"MODEL_BASE_URL" envDefault:"http://localhost:11434/v1"`
	ModelAPIKey     string        `env:"MODEL_API_KEY"`
	ModelName       string        `env:"MODEL_NAME" envDefault:"qwen3"`
	ModelTimeout    time.Duration `env:"MODEL_TIMEOUT" envDefault:"120s"`
	AnthropicAPIKey string        `env:"ANTHROPIC_API_KEY"`

	// Operations (issue 6)
	HTTPAddr string `env:"HTTP_ADDR" envDefault:"127.0.0.1:8080"`
}

// LoadConfig reads the configuration from environ (os.Environ() form or a
// map). Each problem is one line naming its variable, never its value (a
// value may be a secret).
func LoadConfig(environ map[string]string) (Config, error) {
	cfg, err := env.ParseAsWithOptions[Config](env.Options{Environment: environ})
	var problems []string
	if err != nil {
		problems = append(problems, envProblems(err)...)
	}
	problems = append(problems, cfg.validate()...)
	if len(problems) > 0 {
		sort.Strings(problems)
		return cfg, errors.New(strings.Join(problems, "\n"))
	}
	return cfg, nil
}

func (c Config) validate() []string {
	var p []string
	bad := func(name, why string) { p = append(p, name+": "+why) }
	for _, id := range c.TelegramApprovers {
		if id <= 0 {
			bad("TELEGRAM_APPROVERS", "user ids are positive numbers")
			break
		}
	}
	if u, err := url.Parse(c.TelegramAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("TELEGRAM_API_URL", "must be an http(s) URL")
	}
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
			bad("REDIS_URL", "must be a redis://, rediss:// or unix:// URL")
		}
	}
	if c.ApprovalExpiry <= 0 {
		bad("APPROVAL_EXPIRY", "must be a positive duration such as 5m")
	}
	if c.GrantTTL < 0 {
		bad("GRANT_TTL", "must be 0 (until revoked) or a positive duration")
	}
	if c.DenyReasonWait < 0 {
		bad("DENY_REASON_WAIT", "must be 0 or a positive duration")
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
	return p
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

// secrets are the values no log line may carry.
func (c Config) secrets() []string {
	s := []string{c.TelegramToken, c.ModelAPIKey, c.AnthropicAPIKey}
	if u, err := url.Parse(c.RedisURL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			s = append(s, pw)
		}
	}
	return s
}
