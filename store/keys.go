package store

import (
	"strings"

	"github.com/deskbot/deskbot"
)

// Every key the store uses is named here, and only here: Key(parts...)
// is "{tag}:" followed by the parts joined by ":", where the tag is the
// prefix without its trailing ":" ("deskbot:" gives "{deskbot}:audit").
//
// Why one hash tag for the whole deployment: on Redis Cluster every key a
// Lua script or a MULTI touches must hash to one slot, and only the text in
// the first braces is hashed. A transition's script writes a request, the
// indexes that span every desk (open, running, denials, openby), the audit
// trail, the event stream, a desk's inbox and the grants in one step, and
// the sweep reads the indexes across desks: no narrower tag keeps those
// together. The cost is that one Cluster node holds all of a deployment's
// keys; a deployment is small (requests, streams capped by length and age),
// and another deployment (another prefix) lands on its own slot. The order
// log's scripts touch a desk's orders, book and journal and the open index
// together, which the tag keeps on one slot too.
//
//	audit             stream: the audit trail
//	audit:head        string: the hash of the audit trail's last entry (audit.go)
//	events            stream: events for the chat and for operations
//	req:<id>          hash: one request
//	open              sorted set: open request ids by expiry
//	openby            hash: desk -> how many of its requests are open
//	running           set: requests whose allowed call is running
//	denials           sorted set: denials waiting for a reason, by due time
//	grants            hash: standing grants, field "desk\x1ftool"
//	desk:<desk>       hash: a desk's state, pause switch, last activity, tokens today, halt, run of refusals, best P&L today
//	pnl:<desk>:<day>  sorted set: the desk's P&L samples of that India day, "ms pnl" by ms
//	inbox:<desk>      stream: a desk's triggers (consumer group "desk")
//	calls:<trigger>   list: a trigger's completed calls
//	history:<desk>    list: a desk's conversation
//	note:<key>        string: an adapter's note, with its TTL
//	orders:<desk>:<day> string: orders a desk put forward that India day
//	notional:<desk>:<day> string: their notional in rupees, for four eyes over the day
//	leader            string: the leader lease, the holder's fencing token, with its TTL
//	leader:term       counter: the last term number handed out (a token's leading digits)
//	leader:holder     hash: who holds the lease (token, holder identity), with the lease's TTL
//	wake:<id>         stream: wakes the inbox hub of one process (inboxwait.go), with its TTL
//	told:<key>        string: a key TellOnce told, for 8 days (tell.go)
//	watches:<desk>    hash: a desk's price watches, id -> JSON deskbot.Watch (watches.go)
//	watchdesks        set: the desks that have watches
//	gtts:<desk>       hash: a desk's GTTs, tag -> JSON deskbot.PlacedGTT (gtt.go)
//	gttdesks          set: the desks that have GTTs
//	broker:book:<desk>          hash: the desk's book, symbol -> "quantity avg last realised" (book.lua)
//	broker:trades:<desk>        list: the desk's capped trade journal
//	broker:orders:<day>:<desk>  hash: the desk's orders of a trading day (an
//	                            India date: the day an order is placed, or for
//	                            an after-market order the day it executes on;
//	                            tag -> JSON, and per tag its version, what of it
//	                            is booked, what was told and whether it was
//	                            sent: order_record.lua)
//	broker:open                 hash: tag -> "day desk" of every order not yet
//	                            final, whatever its day
//	broker:sent:<day>           set: the tags of the orders sent to the
//	                            broker's account that India day, whatever the
//	                            desk: the account's count a day (limits.go)
//
// The "broker:" keys are the order log's (orderlog.go), which both brokers
// keep their orders in; their names are kept from when package broker named
// them. The desk name is last in every key that has one so that no desk name
// can make one desk's keys collide with another's.

// The keys whose names hold no variable part are built once, at Open
// (fixedKeys), not on every call: a hold and a decision name eight of them.
type fixedKeys struct {
	audit, auditHead, events, open, openBy, running, denials, grants, leader string
}

func newFixedKeys(s *Store) fixedKeys {
	return fixedKeys{
		audit: s.Key("audit"), auditHead: s.Key("audit", "head"), events: s.Key("events"),
		open: s.Key("open"), openBy: s.Key("openby"), running: s.Key("running"),
		denials: s.Key("denials"), grants: s.Key("grants"), leader: s.Key("leader"),
	}
}

func (s *Store) auditKey() string                  { return s.fixed.audit }
func (s *Store) auditHeadKey() string              { return s.fixed.auditHead }
func (s *Store) eventsKey() string                 { return s.fixed.events }
func (s *Store) requestKey(id string) string       { return s.Key("req", id) }
func (s *Store) openKey() string                   { return s.fixed.open }
func (s *Store) openByDeskKey() string             { return s.fixed.openBy }
func (s *Store) runningKey() string                { return s.fixed.running }
func (s *Store) denialsKey() string                { return s.fixed.denials }
func (s *Store) grantsKey() string                 { return s.fixed.grants }
func (s *Store) deskKey(desk string) string        { return s.Key("desk", desk) }
func (s *Store) inboxKey(desk string) string       { return s.Key("inbox", desk) }
func (s *Store) callsKey(triggerID string) string  { return s.Key("calls", triggerID) }
func (s *Store) historyKey(desk string) string     { return s.Key("history", desk) }
func (s *Store) noteKey(key string) string         { return s.Key("note", key) }
func (s *Store) pnlKey(desk, day string) string    { return s.Key("pnl", desk, day) }
func (s *Store) ordersKey(desk, day string) string { return s.Key("orders", desk, day) }
func (s *Store) bookKey(desk string) string        { return s.Key("broker", "book", desk) }
func (s *Store) journalKey(desk string) string     { return s.Key("broker", "trades", desk) }
func (s *Store) dayOrdersKey(day, desk string) string {
	return s.Key("broker", "orders", day, desk)
}
func (s *Store) openOrdersKey() string              { return s.Key("broker", "open") }
func (s *Store) accountOrdersKey(day string) string { return s.Key("broker", "sent", day) }
func (s *Store) leaderKey() string                  { return s.fixed.leader }
func (s *Store) leaderTermKey() string              { return s.Key("leader", "term") }
func (s *Store) leaderHolderKey() string            { return s.Key("leader", "holder") }
func (s *Store) wakeKey(id string) string           { return s.Key("wake", id) }
func (s *Store) toldKey(key string) string          { return s.Key("told", key) }
func (s *Store) watchesKey(desk string) string      { return s.Key("watches", desk) }
func (s *Store) watchDesksKey() string              { return s.Key("watchdesks") }
func (s *Store) gttsKey(desk string) string         { return s.Key("gtts", desk) }
func (s *Store) gttDesksKey() string                { return s.Key("gttdesks") }

// keyBase is "{tag}:" for prefix: the prefix without its trailing ":" in
// braces. A brace inside the prefix would end the tag early or start
// another, so it is refused, as is a prefix with nothing to hash.
func keyBase(prefix string) (string, error) {
	tag := strings.TrimSuffix(prefix, ":")
	if tag == "" || strings.ContainsAny(tag, "{}") {
		return "", deskbot.Errorf(deskbot.EINVALID, "REDIS_PREFIX must have some text before its last \":\" and no braces")
	}
	return "{" + tag + "}:", nil
}

// The inbox's consumer group and its one consumer: one worker runs a desk at
// a time, and a worker that restarts must find the trigger its predecessor
// held and did not finish.
const (
	inboxGroup    = "desk"
	inboxConsumer = "worker"
)

// notionalKey is a desk's notional put forward in an India day, which
// four eyes counts over the day (deskbot.Policies.Required).
func (s *Store) notionalKey(desk, day string) string { return s.Key("notional", desk, day) }
