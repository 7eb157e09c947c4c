package claudecode

import (
	"log/slog"
	"path/filepath"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/deskfs"
	"github.com/deskbot/deskbot/mcpserve"
	"github.com/deskbot/deskbot/model"
)

// Desks builds the service's Claude Code desks (Backend is agent.Backends'
// agent.ClaudeCode), all on one MCP server, started with the first. The
// desks are built once, at the start, one after another: not safe for
// concurrent use until then.
type Desks struct {
	Bin      string        // the CLI (CLAUDE_BIN); default DefaultBin
	DataDir  string        // the desks' folders, and each backend's state under claude-code/<desk>
	Sessions deskbot.Notes // where each desk's Claude session id is kept
	Log      *slog.Logger  // the MCP server's
	// MCP is the desks' tools for Claude Code; nil while no desk uses it.
	MCP *mcpserve.Server
}

// Backend builds desk d's Claude Code backend c, starting the MCP server
// its turns use on the first call.
func (ds *Desks) Backend(d agent.DeskConfig, c model.Config) (agent.TurnBackend, error) {
	if ds.MCP == nil {
		var err error
		if ds.MCP, err = mcpserve.Listen(ds.Log); err != nil {
			return nil, err
		}
	}
	return New(Config{
		Name: c.Name, Bin: ds.Bin, Model: c.Model, APIKey: c.APIKey, BaseURL: c.BaseURL, Timeout: c.Timeout,
		Desk: d.Name, Dir: deskfs.Dir(ds.DataDir, d.Name),
		StateDir: filepath.Join(ds.DataDir, "claude-code", d.Name),
		MCP:      ds.MCP, Sessions: ds.Sessions, Log: c.Log,
	})
}

// Close stops the MCP server, if one started.
func (ds *Desks) Close() error {
	if ds.MCP == nil {
		return nil
	}
	return ds.MCP.Close()
}
