package bot_test

import (
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/store"
)

// The store is the bot's notes port whole, fenced write included: a leader
// keeps its update offset through Deps.Notes with no assertion to fail.
var _ bot.Notes = (*store.Store)(nil)
