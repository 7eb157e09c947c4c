// Package deskbottest holds the test helpers every package's tests share.
// It is imported only from _test files.
package deskbottest

import (
	"testing"
	"time"
)

// DefaultWait bounds Eventually: long enough for a loaded 2-core CI machine,
// short enough that a broken test fails within the run.
const DefaultWait = 20 * time.Second

// Eventually fails the test unless cond becomes true within DefaultWait. It
// is the one way tests wait for something to happen; to show that something
// did not happen, wait for a later event that must follow it instead of
// sleeping.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, DefaultWait, what, cond)
}

// EventuallyWithin is Eventually with its own bound.
func EventuallyWithin(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(wait)
	}
}
