package kite

import (
	"context"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// sourceRefusedKey notes that the group was told, that India day, that
// Kite refuses this deployment's orders for their address: told once a
// day across instances (first caller wins), however many orders, desks
// or instances meet the refusal, and again the next day if it still
// stands.
func sourceRefusedKey(day string) string { return "kite:source-refused:" + day }

// gttKeptKey notes that the group was told that the over-closing GTT
// tagged tag could not be deleted for the server's address: told once
// (across instances and restarts), again only if it is still there after
// gttKeptFor.
func gttKeptKey(tag string) string { return "kite:gtt-kept:" + tag }

const gttKeptFor = 7 * 24 * time.Hour

// sourceRefused tells the group, once a day, that Kite refused an order
// request for the address it came from, in words that name the fix.
func (b *Broker) sourceRefused(ctx context.Context) {
	now := b.now()
	first, err := b.login.notes.PutNoteOnce(ctx, sourceRefusedKey(deskbot.OrderDay(now)), "1", 48*time.Hour)
	if err != nil || !first {
		return
	}
	if err := b.login.events.Publish(ctx, deskbot.Event{Kind: deskbot.EventBroker, Time: now, Text: words.BrokerSourceRefused(b.kite.sourceIP)}); err != nil {
		b.log.WarnContext(ctx, "kite: could not tell the group Kite refuses this server's address", "err", err)
	}
}

// countSent counts rec among the account's orders of its day before it is
// sent (Kite's cap a day per account, kept across instances): past the cap
// it is refused in words with the count. Its tag is counted once however
// often it is sent or asked for. Orders placed by hand at Kite are not
// counted here: Kite itself refuses past its cap, and that refusal comes
// back as Kite's.
func (b *Broker) countSent(ctx context.Context, rec deskbot.PlacedOrder) error {
	if b.sent == nil {
		return nil
	}
	n, ok, err := b.sent.CountAccountOrder(ctx, deskbot.OrderDay(b.now()), rec.Tag, b.perDay)
	if err != nil {
		return err
	}
	if !ok {
		return deskbot.Errorf(deskbot.ECONFLICT, "%s", words.BrokerDayOrdersFull(n, b.perDay))
	}
	return nil
}
