package bot

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

func TestRemindDue(t *testing.T) {
	t.Parallel()
	exp := time.Date(2026, 11, 30, 8, 35, 0, 0, time.UTC)
	open := &deskbot.Request{State: deskbot.StateOpen, ExpiresAt: exp}
	denied := &deskbot.Request{State: deskbot.StateDenied, ExpiresAt: exp}
	tests := []struct {
		name string
		r    *deskbot.Request
		now  time.Time
		want bool
	}{
		{"before the window", open, exp.Add(-101 * time.Second), false},
		{"at the window's start", open, exp.Add(-100 * time.Second), true},
		{"inside it", open, exp.Add(-time.Second), true},
		{"at the expiry", open, exp, false},
		{"past it, unswept", open, exp.Add(time.Minute), false},
		{"decided", denied, exp.Add(-time.Second), false},
	}
	for _, tt := range tests {
		if got := remindDue(tt.r, tt.now, 100*time.Second); got != tt.want {
			t.Errorf("%s: remindDue = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUnanswered(t *testing.T) {
	t.Parallel()
	b := &Bot{cfg: Config{Approvers: []int64{101, 102, 103}}}
	tests := []struct {
		name string
		r    *deskbot.Request
		want []int64
	}{
		{"nobody answered", &deskbot.Request{}, []int64{101, 102, 103}},
		{"one approved", &deskbot.Request{Required: 2, Approvals: []deskbot.Approval{{ByID: 102}}}, []int64{101, 103}},
		{"one decided", &deskbot.Request{DecidedByID: 103}, []int64{101, 102}},
		{"an approval by someone no longer an approver", &deskbot.Request{Approvals: []deskbot.Approval{{ByID: 999}}}, []int64{101, 102, 103}},
	}
	for _, tt := range tests {
		got := b.unanswered(tt.r)
		if len(got) != len(tt.want) {
			t.Errorf("%s: unanswered = %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: unanswered = %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

// A name is a person's to choose: it is shown as text, never markup.
func TestRenderReminderEscapesNames(t *testing.T) {
	t.Parallel()
	r := &deskbot.Request{ID: "abcdef0123456789", Desk: "alpha", Content: deskbot.PermissionContent{ToolName: "place_order"},
		ExpiresAt: time.Date(2026, 11, 30, 8, 35, 0, 0, time.UTC)}
	got := RenderReminder(r, []deskbot.Person{{ID: 101, Name: `<b>Asha</b> & "co"`}})
	want := `⏰ <a href="tg://user?id=101">&lt;b&gt;Asha&lt;/b&gt; &amp; &#34;co&#34;</a>: <b>alpha</b>'s call to <b>place_order</b> (request <code>abcdef01</code>) lapses at 14:05 IST unless it is decided.`
	if got != want {
		t.Errorf("RenderReminder = %q\nwant %q", got, want)
	}
}

// The reminders' scan runs at least four times in Remind, never more often
// than every 250 ms unless RemindEvery itself was set shorter, and never
// less often than RemindEvery.
func TestRemindEveryKeepsUpWithTheWindow(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		remind, every, want time.Duration
	}{
		{0, 0, 5 * time.Second},                 // no reminders: the default
		{100 * time.Second, 0, 5 * time.Second}, // APPROVAL_EXPIRY 5m: the default is often enough
		{5 * time.Second, 0, 1250 * ms},         // APPROVAL_EXPIRY 15s
		{500 * ms, 0, 250 * ms},                 // floored
		{2 * time.Second, time.Hour, 500 * ms},  // a seldom scan asked for: kept up
		{2 * time.Second, 10 * ms, 10 * ms},     // a faster scan asked for: kept
		{20 * ms, 10 * ms, 10 * ms},             // the floor never slows a faster one
	} {
		got := Config{Remind: tc.remind, RemindEvery: tc.every}.withDefaults().RemindEvery
		if got != tc.want {
			t.Errorf("Remind %v, RemindEvery %v: scans every %v, want %v", tc.remind, tc.every, got, tc.want)
		}
	}
}
