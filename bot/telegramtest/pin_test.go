package telegramtest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"gopkg.in/telebot.v3"
)

// Pinning takes an administrator with can_pin_messages, posts a service
// message, and unpinning takes the same right; disable_notification is
// recorded on every send.
func TestPinsAndRights(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	chat := &telebot.Chat{ID: group}
	m, err := b.Send(chat, "held call", telebot.Silent)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.BotMessages(group)[0]; !got.Silent {
		t.Errorf("a message sent with disable_notification is not silent: %+v", got)
	}
	if c := srv.Sent("sendMessage")[0]; !c.Silent {
		t.Errorf("the call does not record disable_notification")
	}

	if err := b.Pin(m); err == nil || !strings.Contains(err.Error(), "not enough rights to manage pinned messages") {
		t.Errorf("pin as a plain member: err = %v, want not enough rights", err)
	}
	if cm, err := b.ChatMemberOf(chat, &telebot.User{ID: telegramtest.BotUser.ID}); err != nil || cm.Role != telebot.Member {
		t.Errorf("bot's membership = %+v, %v; want a member", cm, err)
	}
	srv.SetBotRights(group, false)
	if cm, err := b.ChatMemberOf(chat, &telebot.User{ID: telegramtest.BotUser.ID}); err != nil || cm.Role != telebot.Administrator || cm.CanPinMessages {
		t.Errorf("bot's membership = %+v, %v; want an administrator without can_pin_messages", cm, err)
	}
	if err := b.Pin(m); err == nil || !strings.Contains(err.Error(), "not enough rights") {
		t.Errorf("pin without the right: err = %v, want not enough rights", err)
	}

	srv.SetBotRights(group, true)
	if cm, err := b.ChatMemberOf(chat, &telebot.User{ID: telegramtest.BotUser.ID}); err != nil || !cm.CanPinMessages {
		t.Errorf("bot's membership = %+v, %v; want can_pin_messages", cm, err)
	}
	if err := b.Pin(m, telebot.Silent); err != nil {
		t.Fatalf("pin: %v", err)
	}
	if got := srv.Pinned(group); !slices.Equal(got, []int{m.ID}) {
		t.Errorf("pinned = %v, want [%d]", got, m.ID)
	}
	msgs := srv.BotMessages(group)
	if last := msgs[len(msgs)-1]; last.Service != "pinned_message" || last.ReplyTo != m.ID || !last.Silent {
		t.Errorf("after a silent pin the chat's last message is %+v; want a silent pinned_message service message", last)
	}
	if err := b.Pin(&telebot.Message{ID: 999, Chat: chat}); err == nil || !strings.Contains(err.Error(), "message to pin not found") {
		t.Errorf("pin of a missing message: err = %v", err)
	}
	if err := b.Unpin(chat, m.ID); err != nil {
		t.Fatalf("unpin: %v", err)
	}
	if got := srv.Pinned(group); len(got) != 0 {
		t.Errorf("pinned after unpin = %v", got)
	}
	if err := b.Unpin(chat, 999); err == nil || !strings.Contains(err.Error(), "message to unpin not found") {
		t.Errorf("unpin of a missing message: err = %v", err)
	}
}

// getChatMember names a person AddUser made known, as Telegram does.
func TestChatMemberNamesKnownPeople(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	srv.AddUser(telegramtest.User{ID: 101, FirstName: "Asha", Username: "asha_k"})
	cm, err := b.ChatMemberOf(&telebot.Chat{ID: group}, &telebot.User{ID: 101})
	if err != nil || cm.User == nil || cm.User.FirstName != "Asha" || cm.User.Username != "asha_k" {
		t.Errorf("getChatMember = %+v, %v; want Asha", cm, err)
	}
}
