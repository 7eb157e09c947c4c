package config

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/ops"
)

// What the start needs of the configuration beyond its values: the
// logger that scrubs its secrets, the desks' default model, the tools
// APPROVAL_TOOLS may name, and the start's probes in check's words.

// NewLogger writes LOG_FORMAT at LOG_LEVEL, scrubbing every secret of the
// configuration from what it writes, and what is added to its Redactor
// later.
func NewLogger(cfg Config, w io.Writer) (*slog.Logger, *ops.Redactor) {
	r := ops.NewRedactor(cfg.Secrets()...)
	return ops.NewLogger(w, cfg.LogFormat, cfg.LogLevel, r), r
}

// DefaultModel is the model of a desk DESKS_FILE gives none: MODEL_*.
func (c Config) DefaultModel() model.Config {
	key := c.ModelAPIKey
	if c.ModelProvider == model.Anthropic && key == "" {
		key = c.AnthropicAPIKey
	}
	return model.Config{
		Provider: c.ModelProvider, BaseURL: c.ModelBaseURL, APIKey: key,
		Model: c.ModelName, Timeout: c.ModelTimeout,
	}
}

// KnownTools names every tool the sources the service passes to
// agent.BuildRegistries can give a desk: what APPROVAL_TOOLS may name. It
// is known without starting anything, so `deskbot check` applies the same
// rule.
func KnownTools() []string {
	return []string{
		deskbot.ToolBash, deskbot.ToolBashBackground, deskbot.ToolCheckBackground,
		deskbot.ToolGetPositions, deskbot.ToolPlaceOrder, deskbot.ToolGetOrders, deskbot.ToolCancelOrder, deskbot.ToolFlattenDesk, deskbot.ToolModifyOrder,
		deskbot.ToolPlaceGTT, deskbot.ToolCancelGTT,
		deskbot.ToolSendMessage,
		deskbot.ToolGetQuote, deskbot.ToolGetCandles, deskbot.ToolSearchInstruments, deskbot.ToolGetOptionChain, deskbot.ToolGetFunds,
		deskbot.ToolWatchPrice, deskbot.ToolCancelWatch,
	}
}

// CheckClaudeCode refuses to start desks on a Claude Code CLI older than
// the oldest deskbot runs (or one that does not run): every turn would
// fail over, or worse, lose the conversation's start.
func CheckClaudeCode(ctx context.Context, bin string, desks []agent.DeskConfig) error {
	for _, d := range desks {
		for _, mc := range d.Models {
			if mc.Provider != agent.ClaudeCode {
				continue
			}
			if _, err := claudecode.CheckVersion(ctx, bin); err != nil {
				return fmt.Errorf("desk %s's model %s: CLAUDE_BIN=%s: %s", d.Name, modelLabel(mc), bin, deskbot.ErrorMessage(err))
			}
			return nil // one CLI for every desk
		}
	}
	return nil
}

// The run explains itself in check's words: what `deskbot check` probes
// quickly (Telegram's chat, the desks' models) the start probes too, and
// each failure is logged as check prints it, with its fix. There is one
// source of these words, the checker.

// startProbeTimeout bounds the start's probes: a model host that does not
// answer delays the start by this much at most.
const startProbeTimeout = 10 * time.Second

// Line is one line of check: what was checked, its status (ok, warn or
// FAIL) and why, in check's words.
type Line struct{ What, Status, Detail string }

// Unreachable is a desk none of whose models answers, and each one's
// failure in check's words.
type Unreachable struct {
	Desk     string
	Failures []string
}

// ProbeAtStart runs check's quick probes (Telegram's chat, the desks'
// models) and returns each line that is not ok, and the desks none of
// whose models answers, in the order of desks.
func ProbeAtStart(ctx context.Context, cfg Config, desks []agent.DeskConfig) (warnings []Line, down []Unreachable) {
	ctx, cancel := context.WithTimeout(ctx, startProbeTimeout)
	defer cancel()
	c := &checker{}
	c.telegram(ctx, cfg)
	type probed struct{ status, detail string }
	seen := map[string]probed{}
	for _, d := range desks {
		var failures []string
		answers := false
		for _, mc := range d.Models {
			if mc.Provider == agent.ClaudeCode {
				answers = true // checked at start by its version; its API cannot be probed for free
				continue
			}
			key := mc.Provider + " " + mc.BaseURL + " " + mc.Model
			p, ok := seen[key]
			if !ok {
				p.status, p.detail = probeModel(ctx, mc)
				seen[key] = p
				c.add("model "+modelLabel(mc), p.status, "%s", p.detail)
			}
			if p.status == statusFail {
				failures = append(failures, modelLabel(mc)+": "+p.detail)
			} else {
				answers = true
			}
		}
		if !answers && len(failures) > 0 {
			down = append(down, Unreachable{Desk: d.Name, Failures: failures})
		}
	}
	for _, l := range c.lines {
		if l.status != statusOK {
			warnings = append(warnings, Line{What: l.what, Status: l.status, Detail: l.detail})
		}
	}
	return warnings, down
}

// TelegramTrouble says why the bot could not start in check's words
// (TELEGRAM_TOKEN refused: copy it again from @BotFather), rather than the
// client library's; err's own words when the probe finds nothing wrong.
func TelegramTrouble(ctx context.Context, cfg Config, err error) string {
	ctx, cancel := context.WithTimeout(ctx, startProbeTimeout)
	defer cancel()
	c := &checker{}
	c.telegram(ctx, cfg)
	for _, l := range c.lines {
		if l.status == statusFail {
			return l.detail
		}
	}
	return deskbot.ErrorMessage(err)
}
