package bot

import (
	"slices"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

func TestLastTurnOf(t *testing.T) {
	t.Parallel()
	user := deskbot.Message{Role: "user", Content: "[09:15 India time] Scheduled task (open):\nCheck the book"}
	tests := []struct {
		name string
		msgs []deskbot.Message
		want lastTurn
	}{
		{"no history", nil, lastTurn{}},
		{"a trigger still in its turn", []deskbot.Message{user}, lastTurn{}},
		{"words only", []deskbot.Message{user, {Role: "assistant", Content: "All flat."}},
			lastTurn{found: true, at: "09:15", trigger: "Scheduled task (open):\nCheck the book", words: "All flat."}},
		{"calls with \"; \" inside", []deskbot.Message{user, {Role: "assistant", Content: `(Tools I used: bash {"command":"a; b"} -> ok; x; get_positions {} -> flat; and 3 more)` + "\n(No reply.)"}},
			lastTurn{found: true, at: "09:15", trigger: "Scheduled task (open):\nCheck the book", words: words.NoReplyWords,
				calls: []string{`bash {"command":"a; b"} -> ok; x`, "get_positions {} -> flat", "and 3 more"}}},
		{"a trigger without its clock", []deskbot.Message{{Role: "user", Content: "The user flattened this desk"}, {Role: "assistant", Content: "Noted."}},
			lastTurn{found: true, trigger: "The user flattened this desk", words: "Noted."}},
	}
	for _, tt := range tests {
		got := lastTurnOf(tt.msgs)
		if got.found != tt.want.found || got.at != tt.want.at || got.trigger != tt.want.trigger || got.words != tt.want.words || !slices.Equal(got.calls, tt.want.calls) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
