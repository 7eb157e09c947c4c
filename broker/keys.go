package broker

import "github.com/redis/go-redis/v9"

// Every key the broker package uses is named here, under the "broker:"
// namespace of the service's prefix (the store leaves it alone):
//
//	broker:book:<desk>          hash: symbol -> "quantity avg last realised"
//	broker:trades:<desk>        list: the desk's capped trade journal
//	broker:orders:<day>:<desk>  hash: the desk's orders of a trading day
//	                            (an India date: the day an order is
//	                            placed, or for an after-market order the
//	                            day it executes on; tag -> JSON, and per
//	                            tag its version, what of it is booked,
//	                            what was told and whether it was sent)
//	broker:open                 hash: tag -> "day desk" of every order
//	                            not yet final, whatever its day
//
// All are built with the store's Key, so all carry the deployment's hash
// tag ("{deskbot}:broker:book:main"): each script (script.go) touches a
// desk's orders, book and journal and the open index together, which on a
// Redis Cluster must hash to one slot.
//
// The desk name is last in every key that has one so that no desk name can
// make one desk's keys collide with another's (and deskbot.ValidDeskName
// allows no ":" anyway).

func (l *OrderLog) bookKey(desk string) string    { return l.key("broker", "book", desk) }
func (l *OrderLog) journalKey(desk string) string { return l.key("broker", "trades", desk) }
func (l *OrderLog) ordersKey(day, desk string) string {
	return l.key("broker", "orders", day, desk)
}
func (l *OrderLog) openKey() string { return l.key("broker", "open") }

func isNil(err error) bool { return err == redis.Nil }
