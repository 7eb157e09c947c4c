package agent

import (
	"fmt"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// LoopGuard refuses a call identical (in name and canonical arguments) to
// ones already made too often in the same turn: small models get stuck
// repeating a call, and every repeat of a side-effecting call costs money.
// It is per turn and not safe for concurrent use.
type LoopGuard struct {
	max    int
	counts map[string]int
}

// NewLoopGuard allows each distinct call max times per turn.
func NewLoopGuard(max int) *LoopGuard {
	return &LoopGuard{max: max, counts: map[string]int{}}
}

// Check counts call and returns a tool error result when it is one repeat
// too many.
func (g *LoopGuard) Check(call deskbot.ToolCall) (deskbot.ToolResult, bool) {
	k := callKey(call)
	g.counts[k]++
	if n := g.counts[k]; g.max > 0 && n > g.max {
		return deskbot.ToolResult{IsError: true, Text: fmt.Sprintf(
			"Refused: you already called %s with these same arguments %d times in this turn, and repeating it will not change the result. Use what you have, try something different, or end the turn.",
			call.Name, n-1)}, false
	}
	return deskbot.ToolResult{}, true
}

func callKey(c deskbot.ToolCall) string {
	return c.Name + "\x00" + argtext.Canonical(c.Arguments)
}
