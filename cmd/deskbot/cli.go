package main

import (
	"context"
	"fmt"
	"github.com/deskbot/deskbot/config"
	"io"

	"github.com/deskbot/deskbot/ops"
)

// The commands beside the service (check, demo, audit, version, help), and the
// .env file every one of them reads first.

// usage is what `deskbot --help` prints: the commands, and where the
// variables are told.
const usage = `deskbot runs desks (LLM trading agents) that a team supervises in a
Telegram group: guarded tool calls wait for an approver's tap.

Usage:
  deskbot           run the service (configured by environment variables)
  deskbot check     check the configuration and probe Redis, Telegram, the
                    models, the broker and the sandbox, without starting
  deskbot demo      try it on this machine: a local page plays the group
  deskbot audit verify
                    check the audit trail's chain; exit 1 if it breaks
  deskbot audit export --day YYYY-MM-DD
                    write that India day of the audit trail as CSV
  deskbot version   print the version and the source revision
  deskbot help      print this

Configuration: environment variables, and a .env file in the working
directory when there is one (a variable set in the environment wins over
the file). Every variable, its default and its meaning: .env.example and
README.md's "Configuration" section (https://github.com/deskbot/deskbot).
`

// command runs `deskbot <args...>` other than the service itself and
// returns the exit status.
func command(ctx context.Context, args []string, envFile string, environ map[string]string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "check":
		return config.RunCheck(ctx, envFile, environ, stdout)
	case "demo":
		return runDemo(ctx, environ, stdout, stderr)
	case "audit":
		return runAudit(ctx, args[1:], environ, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, ops.Version())
		return 0
	case "help", "--help", "-help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "deskbot: unknown command %q\n\n%s", args[0], usage)
	return 2
}
