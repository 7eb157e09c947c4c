package bot

import (
	"context"
	"testing"
)

func TestParseQuiet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      []string
		want    Quiet
		wantErr bool
	}{
		{nil, Quiet{}, false},
		{[]string{""}, Quiet{}, false},
		{[]string{"desk_messages"}, Quiet{DeskMessages: true}, false},
		{[]string{" fills ", "reports"}, Quiet{Fills: true, Reports: true}, false},
		{[]string{"desk_messages", "fills", "reports"}, Quiet{DeskMessages: true, Fills: true, Reports: true}, false},
		{[]string{"held_calls"}, Quiet{}, true},
		{[]string{"halts"}, Quiet{}, true},
		{[]string{"Desk_Messages"}, Quiet{}, true},
	}
	for _, tt := range tests {
		got, err := ParseQuiet(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseQuiet(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// A held call or a reminder (the request lane) sounds whatever the
// context says; the other lanes go quiet when told.
func TestSilentNeverInTheRequestLane(t *testing.T) {
	t.Parallel()
	ctx := withSilent(context.Background(), true)
	tests := []struct {
		lane Lane
		want bool
	}{
		{LaneRequest, false},
		{LaneRemind, false},
		{LaneClose, true},
		{LaneReply, true},
		{LaneChatter, true},
	}
	for _, tt := range tests {
		if got := silentOf(WithLane(ctx, tt.lane)); got != tt.want {
			t.Errorf("silent in lane %d = %v, want %v", tt.lane, got, tt.want)
		}
	}
	if silentOf(withSilent(context.Background(), false)) {
		t.Errorf("silent without being asked")
	}
}
