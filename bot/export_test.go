package bot

import tele "gopkg.in/telebot.v3"

// Deliver hands the bot an update as if Telegram delivered it (again), so a
// test can show that a redelivered update has no second effect.
func (b *Bot) Deliver(u tele.Update) { b.tb.ProcessUpdate(u) }

// The note keys tests read, as the bot writes them.
var (
	RequestMessageKey = requestMessageKey
	DeskMessageKey    = deskMessageKey
	RemindKey         = remindKey
	DigestKey         = digestKey
	ReasonPromptKey   = reasonPromptKey
)
