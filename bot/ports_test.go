package bot_test

import (
	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/words"
)

// The store is the bot's notes port whole, fenced write included: a leader
// keeps its update offset through Deps.Notes with no assertion to fail.
var _ deskbot.FencedNotes = (*store.Store)(nil)

// shortID is how the chat names a request (words.ShortID).
func shortID(id string) string { return words.ShortID(id) }
