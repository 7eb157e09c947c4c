package bot_test

import (
	"net"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// A command no handler takes gets one line pointing to /help, when it is
// addressed to this bot; one addressed to another bot in the group is
// left alone.
func TestUnknownCommandPointsToHelp(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	other := h.say(asha, "/foo@some_other_bot", 0)
	for _, tc := range []struct{ text, want string }{
		{"/foo", "Unknown command /foo. /help lists the commands."},
		{"/bar@" + telegramtest.BotUser.Username + " now", "Unknown command /bar. /help lists the commands."},
		{"/desks_x", "Unknown command /desks_x. /help lists the commands."},
	} {
		t.Run(tc.text, func(t *testing.T) {
			got := h.replyTo(groupID, h.say(ravi, tc.text, 0))
			if got.Plain != tc.want {
				t.Errorf("reply to %q = %q, want %q", tc.text, got.Plain, tc.want)
			}
		})
	}
	for _, m := range h.tg.BotMessages(groupID) {
		if m.ReplyTo == other {
			t.Errorf("a command for another bot was answered: %q", m.Plain)
		}
	}
	// Plain words in the group stay unanswered, as before.
	plain := h.say(ravi, "lunch at 1?", 0)
	h.replyTo(groupID, h.say(ravi, "/foo", 0))
	for _, m := range h.tg.BotMessages(groupID) {
		if m.ReplyTo == plain {
			t.Errorf("plain words were answered: %q", m.Plain)
		}
	}
}

// /tell to a paused desk says the words wait for /resume, instead of a
// thumbs-up that reads as heard; a running desk still gets the reaction.
func TestTellToAPausedDeskSaysItIsQueued(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	if err := h.st.SetPaused(t.Context(), "alpha", true, deskbot.AuditEntry{Action: "pause", Desk: "alpha", By: "test", At: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	got := h.replyTo(groupID, h.say(asha, "/tell alpha hold off till 3", 0))
	want := "Queued for alpha, which is paused: it reads this after /resume alpha."
	if got.Plain != want {
		t.Errorf("reply = %q, want %q", got.Plain, want)
	}
	if trs := h.waitTriggers("alpha", 1); trs[0].Text != "hold off till 3" {
		t.Errorf("queued %q, want the words", trs[0].Text)
	}
	h.waitReaction(groupID, h.say(asha, "/tell beta carry on", 0))
}

// closedURL is the address of a port nothing listens on any more.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// A start that never reached Telegram says so, apart from one Telegram
// refused: the operator fixes the network in one case, the token in the
// other. Neither quotes the token.
func TestStartTellsNetworkFailureFromRefusal(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t, testToken)
	for _, tc := range []struct {
		name, url, token, want string
	}{
		{"nothing listens", closedURL(t), testToken, "Could not reach Telegram to start the bot (a network failure, not a refusal): "},
		{"no such host", "http://deskbot-test.invalid", testToken, "Could not reach Telegram to start the bot (a network failure, not a refusal): "},
		{"wrong token", tg.URL, "999:wrong-token-kept-secret", "Telegram refused to start the bot: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bot.New(bot.Config{Token: tc.token, APIURL: tc.url, ChatID: groupID, Approvers: []int64{asha.ID}}, bot.Deps{}, quiet())
			got := deskbot.ErrorMessage(err)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("New: %q, want it to start %q", got, tc.want)
			}
			if strings.Contains(got, tc.token) {
				t.Errorf("New: %q quotes the token", got)
			}
		})
	}
}
