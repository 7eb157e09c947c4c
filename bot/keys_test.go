package bot

import "testing"

// Notes outlive restarts and upgrades: a key whose text changed would
// forget what was sent (and send it again) or where a reply belongs. These
// are the keys as they are stored.
func TestKeysKeepTheirText(t *testing.T) {
	t.Parallel()
	const chat, msg = int64(-1001234567890), 42
	tests := []struct{ got, want string }{
		{OutboxGroup, "telegram"},
		{requestMessageKey("5f0c2d1e"), "tg:reqmsg:5f0c2d1e"},
		{remindKey("5f0c2d1e"), "tg:remind:5f0c2d1e"},
		{deskMessageKey(chat, msg), "tg:deskmsg:-1001234567890:42"},
		{sentKey("1700000000000-0"), "tg:sent:1700000000000-0"},
		{sentPartKey("1700000000000-0", 0), "tg:sent:1700000000000-0:0"},
		{sentPartKey("1700000000000-0", 2), "tg:sent:1700000000000-0:2"},
		{reasonPromptKey(chat, msg), "tg:reason:-1001234567890:42"},
		{messageOnceKey(chat, msg), "tg:msg:-1001234567890:42"},
		{flattenOnceKey(chat, msg), "tg:flatten:-1001234567890:42"},
		{messageRef(chat, msg), "-1001234567890:42"},
		{topicKey(chat, "alpha"), "tg:topic:-1001234567890:alpha"},
		{topicDeskKey(chat, msg), "tg:topicdesk:-1001234567890:42"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("key %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseMessageRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		chat   int64
		msg    int
		wantOK bool
	}{
		{messageRef(-100200300, 7), -100200300, 7, true},
		{"5:1", 5, 1, true},
		{"", 0, 0, false},
		{"-100200300", 0, 0, false},
		{"-100200300:0", 0, 0, false},
		{"x:7", 0, 0, false},
		{"1:2:3", 0, 0, false},
	}
	for _, tt := range tests {
		chat, msg, ok := parseMessageRef(tt.in)
		if ok != tt.wantOK || ok && (chat != tt.chat || msg != tt.msg) {
			t.Errorf("parseMessageRef(%q) = %d, %d, %v; want %d, %d, %v", tt.in, chat, msg, ok, tt.chat, tt.msg, tt.wantOK)
		}
	}
}
