package bot_test

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
)

// An anonymous admin of the group following the set-up steps sends
// /whoami: Telegram sends their message from GroupAnonymousBot
// (1087968824), an account every anonymous admin shares. The answer must
// not hand them that id as theirs to put in TELEGRAM_APPROVERS.
func TestHostileWhoamiOfAnAnonymousAdmin(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	anon := telegramtest.User{ID: 1087968824, FirstName: "Group", Username: "GroupAnonymousBot"}
	got := h.replyTo(groupID, h.tg.InjectText(anon, groupID, "/whoami", 0)).Plain
	if strings.Contains(got, "Your user id: 1087968824") || !strings.Contains(got, "anonymous") {
		t.Errorf("/whoami of an anonymous admin answered %q; want it to say they post anonymously and must ask without it", got)
	}
}
