package deskbottest

import "github.com/google/uuid"

// NewKey is a fresh call key for a test's order: a broker places at most
// one order per key, so each order a test means to place needs its own.
func NewKey() string { return uuid.NewString() }
