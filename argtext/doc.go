// Package argtext owns the forms a tool call's arguments and other text a
// desk controls take on their way to people and records: the canonical form
// (Canonical: what grants, the loop guard and the audit compare), the shown
// form (Arguments, Show: what an approver reads, with every invisible or
// direction-changing character made visible), the one rule for a key given
// twice (RepeatedKey), and the one cut of long text (Clip, by characters).
// It imports nothing of the service, so the root package's rules use it.
// Pure functions, safe for concurrent use.
package argtext
