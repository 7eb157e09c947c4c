package store

import (
	"context"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// tellTTL is how long a told key is remembered: past any update a broker
// could read again (the day's orders, a restart, a hand-over a week
// later), then let go.
const tellTTL = 8 * 24 * time.Hour

// tellScript sets the told key (KEYS[1]) unless it is set, and only when
// it set it queues the trigger (ARGV[3], "" for none) to the desk's inbox
// (KEYS[2]) and the event (ARGV[4], "" for none) to the events stream
// (KEYS[3], trimmed as Publish trims it, MAXLEN ~ ARGV[2]). One script, so
// neither is queued without the other and no key is told twice. It
// returns {1} when it told, {0} when the key was told before (a table:
// runDecisive reads the reply as one).
var tellScript = redis.NewScript(`
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return {0} end
if ARGV[3] ~= '' then redis.call('XADD', KEYS[2], '*', 'data', ARGV[3]) end
if ARGV[4] ~= '' then redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'data', ARGV[4]) end
return {1}`)

// TellOnce queues t to its desk's inbox and publishes e, both or neither,
// the first time key is told, and reports whether it told
// (deskbot.Teller). t and e are encoded as Enqueue and Publish encode
// them; either may be nil. A desk waiting on its inbox wakes for t as for
// any trigger: the XADD is what the inbox hub waits on (inboxwait.go).
// It returns once the primary's replicas have it, so what it reports
// told survives a failover; a retry after a lost answer finds the key set
// and reports false, with both already queued.
func (s *Store) TellOnce(ctx context.Context, key string, t *deskbot.Trigger, e *deskbot.Event) (bool, error) {
	if key == "" {
		return false, deskbot.Errorf(deskbot.EINVALID, "TellOnce needs a key")
	}
	inbox, trigger, event := s.inboxKey("-"), "", "" // an inbox named even when unused: Redis wants every key named
	if t != nil {
		tr := *t
		if tr.Desk == "" {
			return false, deskbot.Errorf(deskbot.EINVALID, "A trigger needs a desk")
		}
		if tr.ID == "" {
			tr.ID = uuid.NewString()
		}
		if tr.CreatedAt.IsZero() {
			tr.CreatedAt = time.Now()
		}
		tr.CreatedAt = tr.CreatedAt.UTC()
		var err error
		if trigger, err = encode(tr); err != nil {
			return false, err
		}
		inbox = s.inboxKey(tr.Desk)
	}
	if e != nil {
		var err error
		if event, err = encodeEvent(*e); err != nil {
			return false, err
		}
	}
	res, err := s.runDecisive(ctx, tellScript, []string{s.toldKey(key), inbox, s.eventsKey()},
		tellTTL.Milliseconds(), s.opts.EventsMaxLen, trigger, event)
	if err != nil {
		return false, err
	}
	told, _ := res[0].(int64)
	return told == 1, nil
}
