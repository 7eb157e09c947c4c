package store

import "github.com/deskbot/deskbot"

// *Store is every storage the domain asks for.
var (
	_ deskbot.RequestStore = (*Store)(nil)
	_ deskbot.GrantStore   = (*Store)(nil)
	_ deskbot.Auditor      = (*Store)(nil)
	_ deskbot.EventLog     = (*Store)(nil)
	_ deskbot.Inbox        = (*Store)(nil)
	_ deskbot.DeskStore    = (*Store)(nil)
	_ deskbot.CallMemory   = (*Store)(nil)
	_ deskbot.Notes        = (*Store)(nil)
	_ deskbot.TurnStore    = (*Store)(nil)
	_ deskbot.Teller       = (*Store)(nil)
)
