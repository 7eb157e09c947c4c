// Package model owns the model backends a desk talks to: any
// OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
// llama.cpp) through the official openai-go SDK, and Anthropic's Messages
// API through its official SDK. Each is a deskbot.Model.
//
// A backend makes one request per Complete (two when the model's tool
// arguments are malformed: it asks once more) and never retries on its own
// otherwise: the SDKs' retries are off, because the desk's chain of backends
// is what handles a failing provider. Failures where the next backend should
// take over come back with code EUNAVAILABLE (connection errors, 5xx, 429,
// timeouts, broken responses, replies past MaxReplyBytes or MaxToolCalls,
// arguments still malformed after the retry);
// requests the provider refused (other 4xx) come back EINVALID. Error texts
// name the backend and the status and never carry the API key. When the
// caller's own context ends, its error is returned as it is (wrapped), since
// no other backend could do better.
//
// Tool arguments reach the rest of the system byte for byte as the model
// gave them, once checked to be one JSON object; empty arguments become {}.
// Calls without ids (some local models omit them) get stable made-up ones.
// A reply is input from outside: its body is read up to MaxReplyBytes and
// it may carry at most MaxToolCalls calls (see limit.go). Warnings go to the
// Config's logger, never the process-wide one.
//
// Backends hold no per-call state and are safe for concurrent use. The
// OpenAI-compatible backends keep the JSON of the messages and tools they
// sent, in one cache for the process (256 KiB at most, see pieces.go): a desk
// sends its history again with every step.
package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// Providers.
const (
	OpenAI    = "openai" // any OpenAI-compatible chat-completions endpoint
	Anthropic = "anthropic"
)

// Defaults applied by New to zero fields.
const (
	DefaultOpenAIBaseURL    = "http://localhost:11434/v1" // Ollama
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultTimeout          = 2 * time.Minute
	DefaultAnthropicTokens  = 4096 // Anthropic requires max_tokens
)

// Config describes one backend.
type Config struct {
	Name      string        // label shown in chat/metrics, e.g. "ollama:qwen3"; default provider:model
	Provider  string        // OpenAI or Anthropic; default OpenAI
	BaseURL   string        // e.g. http://localhost:11434/v1
	APIKey    string        // may be empty for local servers
	Model     string        // required
	Timeout   time.Duration // per request to the provider; default DefaultTimeout
	Stream    bool          // use streaming responses
	MaxTokens int           // 0: the server's default (Anthropic: DefaultAnthropicTokens)
	// HTTPClient, if set, makes the requests (tests, proxies). Its own
	// timeout, if any, adds to Timeout.
	HTTPClient *http.Client
	// MaxReplyBytes bounds the bytes read of one response body (default
	// DefaultMaxReplyBytes); MaxToolCalls the tool calls of one reply
	// (default DefaultMaxToolCalls). Past either the reply is broken.
	MaxReplyBytes int64
	MaxToolCalls  int
	// Log receives the backend's warnings; nil discards them.
	Log *slog.Logger
}

// New returns the backend c describes. It reads no environment: every
// setting, the key included, comes from c.
func New(c Config) (deskbot.Model, error) {
	c.Provider = cmp.Or(strings.ToLower(strings.TrimSpace(c.Provider)), OpenAI)
	if strings.TrimSpace(c.Model) == "" {
		return nil, deskbot.Errorf(deskbot.EINVALID, "Model backend %q needs a model name", c.Name)
	}
	c.Name = cmp.Or(c.Name, c.Provider+":"+c.Model)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.MaxReplyBytes = cmp.Or(c.MaxReplyBytes, DefaultMaxReplyBytes)
	c.MaxToolCalls = cmp.Or(c.MaxToolCalls, DefaultMaxToolCalls)
	if c.Timeout < 0 || c.MaxTokens < 0 || c.MaxReplyBytes < 0 || c.MaxToolCalls < 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "Model backend %s: timeout, max tokens, max reply bytes and max tool calls cannot be negative", c.Name)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	c.HTTPClient = cappedClient(c.HTTPClient, c.MaxReplyBytes)
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	switch c.Provider {
	case OpenAI:
		c.BaseURL = cmp.Or(c.BaseURL, DefaultOpenAIBaseURL)
		m, err := newOpenAI(c)
		if err != nil {
			return nil, err
		}
		return m, nil
	case Anthropic:
		c.BaseURL = cmp.Or(c.BaseURL, DefaultAnthropicBaseURL)
		c.MaxTokens = cmp.Or(c.MaxTokens, DefaultAnthropicTokens)
		return newAnthropic(c), nil
	}
	return nil, deskbot.Errorf(deskbot.EINVALID, "Model backend %s: provider is %q or %q, not %q", c.Name, OpenAI, Anthropic, c.Provider)
}

// attempt is one request's answer before its tool calls are checked.
type attempt struct {
	text  string
	calls []rawCall
	used  deskbot.Usage // what the provider said the answer cost
}

// complete runs one request, and once more if the model's tool arguments
// were malformed: a model usually gets them right on a second try, and
// another backend would have to start the step over anyway.
func complete(ctx context.Context, c *Config, req deskbot.ModelRequest, once func(context.Context) (attempt, error)) (deskbot.ModelReply, error) {
	var bad error
	var used deskbot.Usage // a malformed answer was paid for too
	for range 2 {
		actx, cancel := context.WithTimeout(ctx, c.Timeout)
		actx, hit := withCapTrace(actx)
		a, err := once(actx)
		if over := c.overCap(err, hit, a); over != nil {
			err = over
		} else if err != nil && actx.Err() != nil && ctx.Err() == nil {
			err = context.DeadlineExceeded // our Timeout, whatever the SDK made of it
		}
		cancel()
		used = used.Add(a.used)
		if err != nil {
			return deskbot.ModelReply{}, c.failure(ctx, err)
		}
		calls, err := checkCalls(req, a.calls)
		if err == nil {
			return deskbot.ModelReply{Text: a.text, ToolCalls: calls, Usage: used}, nil
		}
		bad = err
		c.Log.WarnContext(ctx, "model gave malformed tool arguments", "backend", c.Name, "problem", deskbot.ErrorMessage(err))
	}
	return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %s, twice", c.Name, deskbot.ErrorMessage(bad))
}

// statusError is a provider's refusal, with its own message.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.msg) }

// brokenError is a response that could not be understood.
type brokenError struct{ what string }

func (e *brokenError) Error() string { return e.what }

// failure turns a request's error into one a person may read: coded, naming
// the backend, with no URL, body or key from the SDK's own error text.
func (c *Config) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("model %s: %w", c.Name, ctx.Err())
	}
	var se *statusError
	var be *brokenError
	switch {
	case errors.As(err, &se):
		msg := c.redact(se.msg)
		if se.code == http.StatusTooManyRequests || se.code == http.StatusRequestTimeout || se.code >= 500 {
			return deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: HTTP %d (%s)", c.Name, se.code, msg)
		}
		return deskbot.Errorf(deskbot.EINVALID, "%s: HTTP %d: %s", c.Name, se.code, msg)
	case errors.Is(err, context.DeadlineExceeded):
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: no answer within %s", c.Name, c.Timeout)
	case errors.As(err, &be):
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %s", c.Name, be.what)
	}
	return deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %s", c.Name, netReason(err))
}

// redact shortens a provider's message and removes the key, which some
// providers echo back when refusing it.
func (c *Config) redact(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if c.APIKey != "" {
		msg = strings.ReplaceAll(msg, c.APIKey, "[key]")
	}
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	if msg == "" {
		msg = "no message"
	}
	return msg
}
