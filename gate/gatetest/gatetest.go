// Package gatetest helps tests decide a request the way the service does:
// Decide, then Run when the decision allows the call.
package gatetest

import (
	"context"

	"github.com/deskbot/deskbot"
)

// Resolve decides request id on g and, when the decision allows it, runs
// the held call, in the caller's goroutine.
func Resolve(ctx context.Context, g deskbot.Gate, id string, d deskbot.Decision, reason string, by deskbot.Person) (*deskbot.PermissionResponse, error) {
	resp, err := g.Decide(ctx, id, d, reason, by)
	if err != nil || !resp.Allows() || resp.Counted {
		return resp, err
	}
	return g.Run(ctx, resp)
}
