package bot_test

import (
	"testing"
)

// Stopping a desk is always safe: a member of the group who sees a runaway
// desk may pause it, but only an approver may start it again.
func TestAMemberMayPauseADeskButNotResumeIt(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	if got, want := h.replyTo(groupID, h.say(stranger, "/pause alpha", 0)).Plain, "Paused alpha."; got != want {
		t.Errorf("a member's /pause answered %q, want %q", got, want)
	}
	if st, _ := h.st.DeskStatus(ctx, "alpha"); !st.Paused {
		t.Fatalf("a member's /pause left alpha running")
	}
	if st, _ := h.st.DeskStatus(ctx, "beta"); st.Paused {
		t.Errorf("a member's /pause alpha paused beta too")
	}
	if got, want := h.replyTo(groupID, h.say(stranger, "/resume alpha", 0)).Plain, "Only approvers can resume a desk."; got != want {
		t.Errorf("a member's /resume answered %q, want %q", got, want)
	}
	if st, _ := h.st.DeskStatus(ctx, "alpha"); !st.Paused {
		t.Errorf("a member resumed alpha")
	}
	if got, want := h.replyTo(groupID, h.say(asha, "/resume alpha", 0)).Plain, "Resumed alpha."; got != want {
		t.Errorf("an approver's /resume answered %q, want %q", got, want)
	}
}
