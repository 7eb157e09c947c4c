package words

import "github.com/deskbot/deskbot"

// ShownState is how a desk's state reads to people, in the chat's /desks
// and on the desks page alike: a paused desk reads "paused", with the turn
// still in flight after a pause named beside it.
func ShownState(st deskbot.DeskStatus) string {
	state := string(st.State)
	if state == "" {
		state = string(deskbot.DeskIdle)
	}
	if st.Paused {
		state = string(deskbot.DeskPaused)
		if st.State != "" && st.State != deskbot.DeskIdle && st.State != deskbot.DeskPaused {
			state += ", " + string(st.State) // a turn in flight finishes after a pause
		}
	}
	return state
}
