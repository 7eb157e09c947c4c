package broker

// Every key the paper broker uses is named here, under the "broker:"
// namespace of the service's prefix (the store leaves it alone):
//
//	broker:book:<desk>     hash: symbol -> "quantity avg last realised"
//	broker:trades:<desk>   list: the desk's capped trade journal
//
// Both are built with the store's Key, so both carry the deployment's hash
// tag ("{deskbot}:broker:book:main"): each script (script.go) touches a
// desk's book and journal together, which on a Redis Cluster must hash to
// one slot.
//
// The desk name is last in both keys so that no desk name can make one
// desk's book collide with another's journal (and deskbot.ValidDeskName
// allows no ":" anyway).

func (p *Paper) bookKey(desk string) string    { return p.key("broker", "book", desk) }
func (p *Paper) journalKey(desk string) string { return p.key("broker", "trades", desk) }
