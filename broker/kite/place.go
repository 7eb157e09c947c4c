package kite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot/retry"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

// MaxTagLen is the longest tag Kite accepts (letters and digits only).
const MaxTagLen = 20

// Tag is the Kite tag of the order made for one allowed call, requestID
// being that call's id (a random UUID). It is "db" followed by the first 18
// hex digits of the id with its hyphens removed: 20 letters and digits, the
// most Kite accepts. Of those 72 bits a version-4 UUID fixes 6, leaving 66
// random ones; with at most 5,000 orders a day (Kite's cap per user) the
// chance that two of a day's tags collide is about n²/2⁶⁷ ≈ 2·10⁻¹³, and a
// collision could only make Place answer with the other order's id, never
// send a second. An id that is not hex (not a UUID) is hashed (SHA-256)
// instead, so Tag is deterministic and always valid whatever it is given.
func Tag(requestID string) string {
	const n = MaxTagLen - 2
	s := strings.ToLower(strings.ReplaceAll(requestID, "-", ""))
	if len(s) < n || !isHex(s[:n]) {
		h := sha256.Sum256([]byte(requestID))
		s = hex.EncodeToString(h[:])
	}
	return "db" + s[:n]
}

func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// Place places the order p for the allowed call key (a request's id) in
// variety ("" is regular) and returns its order_id. The order's tag is
// Tag(key), whatever p.Tag says, so one call can only ever name one order.
// It keeps the package's at-most-one-order rule: an
// order already carrying the tag is returned instead of sending, and a lost
// answer is resolved by reading the day's orders, never by a blind resend.
// The order's fate (filled, rejected) is read from Orders afterwards.
func (c *Client) Place(ctx context.Context, key string, p kiteconnect.OrderParams, variety string) (orderID string, err error) {
	p.Tag = Tag(key)
	if variety == "" {
		variety = kiteconnect.VarietyRegular
	}
	if p.OrderType == kiteconnect.OrderTypeMarket || p.OrderType == kiteconnect.OrderTypeSLM {
		p.MarketProtection = kiteconnect.MarketProtectionAuto
	}
	unlock, err := c.lockTag(ctx, p.Tag)
	if err != nil {
		return "", placeUnknown(p.Tag, err)
	}
	defer unlock()

	// An earlier Place (another run, a caller that timed out) may have made it.
	id, found, err := c.findTag(ctx, p.Tag, time.Time{})
	if err != nil || found {
		return id, err
	}
	resend := retry.Backoff{Min: c.backoffMin, Max: c.backoffMax}
	for {
		var r kiteconnect.OrderResponse
		err := c.attempt(ctx, c.orderLim, c.accessToken(), func(k *kiteconnect.Client) (err error) {
			r, err = k.PlaceOrder(variety, p)
			return err
		})
		if err == nil && r.OrderID != "" {
			return r.OrderID, nil
		}
		if err != nil && !lostAnswer(err) {
			return "", c.classify(ctx, "order", err)
		}
		// The answer is lost: the order may exist. Only the day's orders,
		// read after the settling time, may say it does not.
		c.log.Warn("kite: the answer to an order was lost; reading the day's orders", "tag", p.Tag, "error", scrub(errText(err), c.secrets()...))
		id, found, ferr := c.findTag(ctx, p.Tag, c.now().Add(c.settle))
		if ferr != nil || found {
			return id, ferr
		}
		c.log.Warn("kite: no order carries the tag after a lost answer; sending again", "tag", p.Tag)
		if err := c.sleep(ctx, resend.Next()); err != nil {
			return "", placeUnknown(p.Tag, err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "an empty order_id"
	}
	return err.Error()
}

// findTag reads the day's orders until it can say whether one carries tag:
// found at once, or absent in a read that started no earlier than
// notBefore. Transient failures are retried with backoff until ctx ends.
func (c *Client) findTag(ctx context.Context, tag string, notBefore time.Time) (id string, found bool, err error) {
	b := retry.Backoff{Min: c.backoffMin, Max: c.backoffMax}
	for {
		start := c.now()
		var orders kiteconnect.Orders
		err := c.attempt(ctx, c.callLim, c.accessToken(), func(k *kiteconnect.Client) (err error) {
			orders, err = k.GetOrders()
			return err
		})
		if err == nil {
			for _, o := range orders {
				if o.Tag == tag {
					return o.OrderID, true, nil
				}
			}
			if !start.Before(notBefore) {
				return "", false, nil
			}
			if err := c.sleep(ctx, notBefore.Sub(start)); err != nil {
				return "", false, placeUnknown(tag, err)
			}
			continue
		}
		if ctx.Err() != nil {
			return "", false, placeUnknown(tag, ctx.Err())
		}
		if !lostAnswer(err) {
			return "", false, c.classify(ctx, "orders read", err)
		}
		if err := c.sleep(ctx, b.Next()); err != nil {
			return "", false, placeUnknown(tag, err)
		}
	}
}

// placeUnknown is the error of a Place whose ctx ended before it knew
// whether Kite holds the order.
func placeUnknown(tag string, err error) error {
	return fmt.Errorf("kite: the order tagged %s may or may not be at Kite (Place again with the same tag to learn which): %w", tag, err)
}
