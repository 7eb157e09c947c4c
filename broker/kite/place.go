package kite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/retry"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

// Place places the order p under tag (broker.Tag of the allowed call's
// key: one call, one tag) in variety ("" is regular) and returns its
// order_id. The order carries tag, whatever p.Tag says. It keeps the
// package's at-most-one-order rule: an order already carrying the tag is
// returned instead of sending, and a lost answer is resolved by reading
// the day's orders, never by a blind resend. The order's fate (filled,
// rejected) is read from Orders afterwards.
//
// Its errors say what Kite may hold: a refusal (InputException,
// OrderException, TokenException...) made no order; an error IsUnknown
// reports may hide one (Place again with the tag to learn which); one
// IsNotSent reports sent nothing at all.
func (c *Client) Place(ctx context.Context, tag string, p kiteconnect.OrderParams, variety string) (orderID string, err error) {
	return c.place(ctx, tag, p, variety, false, nil)
}

// placeNew is Place for a tag its caller has just recorded as new (the
// order log's Start, atomic in Redis): no earlier Place of it can have
// sent anything, so the first read of the day's orders is skipped. Kite
// counts that read with the other calls (10 a second), and a burst of
// orders would spend half its calls on it.
//
// mark runs before each send, once the send has its rate-limit slot: the
// caller records that the order is going now (its settling time counts
// from then, not from the wait for a slot). A mark that fails sends
// nothing, and placeNew returns its error as a not-sent one.
func (c *Client) placeNew(ctx context.Context, tag string, p kiteconnect.OrderParams, variety string, mark func(context.Context) error) (string, error) {
	return c.place(ctx, tag, p, variety, true, mark)
}

// placing reports whether a Place of tag runs in this process (sending, or
// waiting for its slot or its turn): its order may yet be sent, so no read
// of Kite's orders may take its absence for never placed.
func (c *Client) placing(tag string) bool {
	c.tagMu.Lock()
	defer c.tagMu.Unlock()
	return c.tags[tag] != nil
}

func (c *Client) place(ctx context.Context, tag string, p kiteconnect.OrderParams, variety string, fresh bool, mark func(context.Context) error) (string, error) {
	if !validTag(tag) {
		return "", fmt.Errorf("kite: order tag %q is not 1 to 20 letters and digits", tag)
	}
	p.Tag = tag
	if variety == "" {
		variety = kiteconnect.VarietyRegular
	}
	if p.OrderType == kiteconnect.OrderTypeMarket || p.OrderType == kiteconnect.OrderTypeSLM {
		p.MarketProtection = kiteconnect.MarketProtectionAuto
	}
	unlock, err := c.lockTag(ctx, tag)
	if err != nil {
		// Another Place of the tag in this process is under way: it may
		// have sent.
		return "", placeUnknown(tag, err)
	}
	defer unlock()

	if !fresh {
		// An earlier Place (another run, a caller that timed out) may have made it.
		id, found, err := c.findTag(ctx, tag, time.Time{})
		if err != nil || found {
			return id, err
		}
	}
	resend := retry.Backoff{Min: c.backoffMin, Max: c.backoffMax}
	for {
		// maybe is set while a send may have reached Kite: from the
		// moment it goes until Kite answers anything but a 429 (which
		// Kite gives before doing any work).
		var r kiteconnect.OrderResponse
		maybe := false
		var unmarked error
		err := c.attempt(ctx, c.orderLim, c.accessToken(), func(k *kiteconnect.Client) (err error) {
			if mark != nil {
				if unmarked = mark(ctx); unmarked != nil {
					return unmarked
				}
			}
			maybe = true
			r, err = k.PlaceOrder(variety, p)
			maybe = err != nil && lostAnswer(err)
			return err
		})
		if err == nil && r.OrderID != "" {
			return r.OrderID, nil
		}
		if unmarked != nil { // returned before anything was sent
			return "", &notSentError{tag: tag, err: unmarked}
		}
		if !maybe {
			if ctx.Err() != nil {
				return "", &notSentError{tag: tag, err: ctx.Err()}
			}
			if err != nil && !lostAnswer(err) {
				return "", c.classify(ctx, "order", err)
			}
		}
		// The answer is lost: the order may exist. Only the day's orders,
		// read after the settling time, may say it does not.
		c.log.Warn("kite: the answer to an order was lost; reading the day's orders", "tag", tag, "error", scrub(errText(err), c.secrets()...))
		id, found, ferr := c.findTag(ctx, tag, c.now().Add(c.settle))
		if ferr != nil {
			return "", placeUnknown(tag, ferr)
		}
		if found {
			return id, nil
		}
		c.log.Warn("kite: no order carries the tag after a lost answer; sending again", "tag", tag)
		if err := c.sleep(ctx, resend.Next()); err != nil {
			// The day's orders showed none after the settling time: the
			// lost send made nothing, and nothing was sent since.
			return "", &notSentError{tag: tag, err: err}
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

// unknownError is the error of a Place that ended before it knew whether
// Kite holds the order.
type unknownError struct {
	tag string
	err error
}

func (e *unknownError) Error() string {
	return fmt.Sprintf("kite: the order tagged %s may or may not be at Kite (Place again with the same tag to learn which): %v", e.tag, e.err)
}

func (e *unknownError) Unwrap() error { return e.err }

func placeUnknown(tag string, err error) error {
	var u *unknownError
	if errors.As(err, &u) {
		return err
	}
	return &unknownError{tag: tag, err: err}
}

// IsUnknown reports whether err is a Place's that left unknown whether
// Kite made the order.
func IsUnknown(err error) bool {
	var u *unknownError
	return errors.As(err, &u)
}

// notSentError is the error of a Place whose ctx ended before anything it
// sent could have made an order (waiting for a rate-limit slot, or after
// 429s): Kite holds no order of the tag from it.
type notSentError struct {
	tag string
	err error
}

func (e *notSentError) Error() string {
	return fmt.Sprintf("kite: the order tagged %s was not sent: %v", e.tag, e.err)
}

func (e *notSentError) Unwrap() error { return e.err }

// IsNotSent reports whether err is a Place's that sent nothing Kite could
// have made an order of.
func IsNotSent(err error) bool {
	var n *notSentError
	return errors.As(err, &n)
}

// validTag is Kite's rule for a tag: 1 to 20 letters and digits.
func validTag(tag string) bool {
	if tag == "" || len(tag) > broker.MaxTagLen {
		return false
	}
	for _, r := range tag {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}
