package leader

// Abandon stops renewing without releasing: what a killed process leaves.
func (t *Term) Abandon() {
	t.cancel(ErrLost)
	<-t.done
}
