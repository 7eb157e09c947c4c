package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
)

// SenderOptions tune a Sender. Zero values take Telegram's published limits.
type SenderOptions struct {
	Now deskbot.Now
	// Sleep waits d or until ctx ends; tests inject one that advances a fake
	// clock, so pacing and backoff are checked without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// PerChat is the least gap between two messages to one chat (1s).
	PerChat time.Duration
	// PerGroupPerMinute caps messages to one group chat (20).
	PerGroupPerMinute int
	// Reserve is how many of a group's sends per minute desk chatter and
	// reminders leave to held calls, their outcomes and replies (8): a
	// second prompt for a request already shown must no more make a
	// request nobody has seen wait for the next minute than chatter may.
	// Chatter's share is spread evenly over the minute, in short bursts.
	Reserve int
	// Overall is the least gap between any two calls (1/30 s).
	Overall time.Duration
	// MinBackoff and MaxBackoff bound the wait before retrying a 5xx or a
	// network error (0.5s doubling up to 30s).
	MinBackoff, MaxBackoff time.Duration
	// OnRetry is told of every retry: the method and the code that caused
	// it (429, 5xx, or 0 for a network error). For metrics.
	OnRetry func(method string, code int)
	// Log is told of every retry; nil logs nothing.
	Log *slog.Logger
}

// Sender is the one way out to Telegram. It paces calls within Telegram's
// flood limits, waits out 429s as told, retries 5xx and network errors with
// capped exponential backoff until ctx ends, and returns other errors at
// once. It is safe for concurrent use: callers queue for their slot per
// chat, by lane (the Lane in their context: held calls, then what closes
// them, then reminders, then replies, then desk chatter) and in order of
// arrival within a lane; chatter and reminders never take the last Reserve
// sends of a group's minute.
//
// Every text and caption goes out with its signed amounts kept whole on a
// phone's narrow lines (onOneLine): the one place the chat's words are
// laid out for a person and for nothing else.
//
// A call that timed out may still have reached Telegram, so a retry can
// repeat a message; the Bot API offers no idempotency key to prevent it.
type Sender struct {
	b    *tele.Bot
	opts SenderOptions

	mu      sync.Mutex
	chats   map[int64]*pace
	nextAny time.Time
	seq     uint64
	// newest is the highest message id this process has seen in each chat
	// (its own sends, and people's messages the bot handled): a message
	// below it has been scrolled past.
	newest map[int64]int
}

// Saw notes a message seen in a chat (sent, or handled as an update).
func (s *Sender) Saw(chatID int64, messageID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.newest == nil {
		s.newest = map[int64]int{}
	}
	s.newest[chatID] = max(s.newest[chatID], messageID)
}

// AtBottom reports whether messageID is the newest message this process
// has seen in the chat. Unknown (nothing seen, as after a start or a
// hand-over) is not the bottom.
func (s *Sender) AtBottom(chatID int64, messageID int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.newest[chatID]
	return ok && messageID >= n
}

// chatterBurst is how many chatter sends may go back to back; beyond it
// chatter's share is spread evenly over the minute, so it never takes a
// minute's share in a burst and leaves held calls only the reserve.
const chatterBurst = 3

// pace is a chat's schedule: when it may next be written to, the times of
// its recent messages (for the per-group budget), and the calls waiting for
// a slot. changed is closed (and replaced) whenever any of it changes.
type pace struct {
	next   time.Time
	recent []time.Time
	// chatter holds the times of chatter's last sends to the group.
	chatter []time.Time
	waiting []*waiter
	changed chan struct{}
}

type waiter struct {
	lane   Lane
	seq    uint64
	counts bool // spends the group's message budget
}

// first is the waiter served next: the highest lane, then the earliest.
func (p *pace) first() *waiter {
	var best *waiter
	for _, w := range p.waiting {
		if best == nil || w.lane < best.lane || (w.lane == best.lane && w.seq < best.seq) {
			best = w
		}
	}
	return best
}

func (p *pace) remove(w *waiter) {
	for i, x := range p.waiting {
		if x == w {
			p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
			p.signal()
			return
		}
	}
}

func (p *pace) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// NewSender wraps b, whose token it scrubs from every error it returns or logs.
func NewSender(b *tele.Bot, opts SenderOptions) *Sender {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = retry.Sleep
	}
	if opts.PerChat <= 0 {
		opts.PerChat = time.Second
	}
	if opts.PerGroupPerMinute <= 0 {
		opts.PerGroupPerMinute = 20
	}
	if opts.Reserve <= 0 {
		opts.Reserve = 8
	}
	if opts.Overall <= 0 {
		opts.Overall = time.Second / 30
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	// A maximum below the minimum is read as the minimum: waits never shrink.
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Sender{b: b, opts: opts, chats: map[int64]*pace{}}
}

// Send sends text to chatID. With opt nil the text is HTML; a given opt is
// used as it is (telebot copies it, so a retry sends the same), but a send
// that ctx makes quiet (TELEGRAM_QUIET) goes without a notification sound.
// telebot keeps no forum topic by itself: a send into a topic names it in
// opt.ThreadID.
func (s *Sender) Send(ctx context.Context, chatID int64, text string, opt *tele.SendOptions) (*tele.Message, error) {
	if opt == nil {
		opt = &tele.SendOptions{ParseMode: tele.ModeHTML, DisableWebPagePreview: true}
	}
	if silentOf(ctx) { // a copy: the caller's options stay as given
		o := *opt
		o.DisableNotification = true
		opt = &o
	}
	text = onOneLine(text, MaxMessage)
	var msg *tele.Message
	err := s.do(ctx, "sendMessage", chatID, true, func() (err error) {
		msg, err = s.b.Send(tele.ChatID(chatID), text, opt)
		return err
	})
	if err == nil && msg != nil {
		s.Saw(chatID, msg.ID)
	}
	return msg, err
}

// Edit replaces the text (HTML) and keyboard of a message; a nil markup
// removes the keyboard. "Message is not modified" counts as done.
func (s *Sender) Edit(ctx context.Context, chatID int64, messageID int, text string, markup *tele.ReplyMarkup) error {
	msg := tele.StoredMessage{MessageID: fmt.Sprint(messageID), ChatID: chatID}
	opt := &tele.SendOptions{ParseMode: tele.ModeHTML, ReplyMarkup: markup, DisableWebPagePreview: true}
	text = onOneLine(text, MaxMessage)
	return s.do(ctx, "editMessageText", chatID, false, func() error {
		_, err := s.b.Edit(msg, text, opt)
		return err
	})
}

// SendPhoto uploads size bytes of pic, from its start, as a photo with an
// HTML caption. The bytes are read from the handle the caller opened and
// checked (deskfs.Open); nothing is opened by name here, so a file
// swapped for a symlink after the check is never what is uploaded.
func (s *Sender) SendPhoto(ctx context.Context, chatID int64, pic io.ReaderAt, size int64, caption string) (*tele.Message, error) {
	return s.SendPhotoIn(ctx, chatID, 0, pic, size, caption)
}

// SendPhotoIn is SendPhoto into a forum topic (thread 0: General, or a
// chat without topics).
func (s *Sender) SendPhotoIn(ctx context.Context, chatID int64, thread int, pic io.ReaderAt, size int64, caption string) (*tele.Message, error) {
	caption = onOneLine(caption, MaxCaption)
	var msg *tele.Message
	err := s.do(ctx, "sendPhoto", chatID, true, func() (err error) {
		// A fresh reader and Photo each attempt: a retry uploads the same
		// bytes from the start, and telebot overwrites the Photo on success.
		p := &tele.Photo{File: tele.FromReader(io.NewSectionReader(pic, 0, size)), Caption: caption}
		msg, err = s.b.Send(tele.ChatID(chatID), p, &tele.SendOptions{ParseMode: tele.ModeHTML, ThreadID: thread, DisableNotification: silentOf(ctx)})
		return err
	})
	if err == nil && msg != nil {
		s.Saw(chatID, msg.ID)
	}
	return msg, err
}

// React sets the bot's reaction on a message (an emoji from Telegram's
// standard set): the quiet way to say a command was taken. It keeps the
// chat's gap but is not a message, so it spends none of the group's
// message budget.
func (s *Sender) React(ctx context.Context, chatID int64, messageID int, emoji string) error {
	msg := tele.StoredMessage{MessageID: fmt.Sprint(messageID), ChatID: chatID}
	opt := tele.ReactionOptions{Reactions: []tele.Reaction{{Type: "emoji", Emoji: emoji}}}
	return s.do(ctx, "setMessageReaction", chatID, false, func() error {
		return s.b.React(tele.ChatID(chatID), msg, opt)
	})
}

// Pin pins a message in chatID without a notification sound: the message
// itself sounded when it came. Telegram posts a service message for the
// pin; like an edit, it keeps the chat's gap but spends none of the group's
// message budget.
func (s *Sender) Pin(ctx context.Context, chatID int64, messageID int) error {
	msg := tele.StoredMessage{MessageID: fmt.Sprint(messageID), ChatID: chatID}
	return s.do(ctx, "pinChatMessage", chatID, false, func() error {
		return s.b.Pin(msg, tele.Silent)
	})
}

// Unpin unpins a message in chatID.
func (s *Sender) Unpin(ctx context.Context, chatID int64, messageID int) error {
	return s.do(ctx, "unpinChatMessage", chatID, false, func() error {
		return s.b.Unpin(tele.ChatID(chatID), messageID)
	})
}

// CreateTopic creates a forum topic named name in chatID and returns its
// thread id. Telegram posts a service message for it, so it is paced as a
// send.
func (s *Sender) CreateTopic(ctx context.Context, chatID int64, name string) (int, error) {
	var thread int
	err := s.do(ctx, "createForumTopic", chatID, true, func() error {
		t, err := s.b.CreateTopic(&tele.Chat{ID: chatID}, &tele.Topic{Name: name})
		if err == nil {
			thread = t.ThreadID
		}
		return err
	})
	return thread, err
}

// do runs call in chatID's next slot until it succeeds, fails for good, or
// ctx ends. counts says whether the call spends the group's message budget
// (sends do; edits only keep the per-chat gap).
func (s *Sender) do(ctx context.Context, method string, chatID int64, counts bool, call func() error) error {
	backoff := retry.Backoff{Min: s.opts.MinBackoff, Max: s.opts.MaxBackoff}
	for {
		at, err := s.acquire(ctx, chatID, counts, laneOf(ctx), checkOf(ctx))
		if err != nil {
			return err
		}
		err = call()
		// Telegram counted the call somewhere between its start and its
		// answer: the gaps and the group's minute count from the answer, so
		// a request slowed on its way can never land a 21st send inside
		// Telegram's own minute.
		s.moved(chatID, counts, at)
		if err == nil || isNotModified(err) {
			return nil
		}
		code, retry := classify(err)
		if !retry {
			return s.scrubbed(method, code, err)
		}
		var wait time.Duration
		if flood := (tele.FloodError{}); errors.As(err, &flood) {
			wait = time.Duration(max(flood.RetryAfter, 1)) * time.Second
			s.block(chatID, s.opts.Now().Add(wait))
		} else {
			wait = backoff.Next()
		}
		if s.opts.OnRetry != nil {
			s.opts.OnRetry(method, code)
		}
		serr := s.scrubbed(method, code, err)
		s.opts.Log.WarnContext(ctx, "telegram call failed, will retry", "method", method, "code", code, "wait", wait, "err", serr)
		if err := s.opts.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w (last: %s)", err, serr.Error())
		}
	}
}

// acquire waits for chatID's next slot for lane and books it. Waiting
// callers of one chat are served by lane, then in order of arrival, so a
// held call overtakes chatter that is still waiting; nothing is booked
// ahead of time, so a lower lane never holds a slot a higher one could use.
// A caller goes before those ahead of it only when it takes nothing they
// wait for (mayPass).
//
// A non-nil check runs when the slot is due and this caller's turn,
// before the slot is booked; its error is returned and nothing is booked.
// The caller keeps its turn while the check runs (a Redis read, in real
// time), so no other caller of the chat books a slot meanwhile and the
// call goes right after the check. Were the slot booked before the check,
// chatter could take the next slot while the check ran and go out first,
// and the held call would follow it with less than the chat's gap between.
func (s *Sender) acquire(ctx context.Context, chatID int64, counts bool, lane Lane, check func(context.Context) error) (time.Time, error) {
	s.mu.Lock()
	p := s.chats[chatID]
	if p == nil {
		p = &pace{changed: make(chan struct{})}
		s.chats[chatID] = p
	}
	s.seq++
	w := &waiter{lane: lane, seq: s.seq, counts: counts}
	p.waiting = append(p.waiting, w)
	defer func() {
		s.mu.Lock()
		p.remove(w)
		s.mu.Unlock()
	}()
	var due time.Time // the slot this waiter last slept until
	checked := false  // the check passed, this waiter first and due since
	for {
		now := s.opts.Now()
		at := s.slot(p, chatID, counts, lane, now)
		turn := p.first() == w || s.mayPass(p, w, chatID, now)
		// Slept until the slot and still our turn: it is ours, even if a
		// clock that does not move says otherwise.
		if turn && (!at.After(now) || !at.After(due)) {
			if check != nil && !checked {
				s.mu.Unlock()
				if err := check(ctx); err != nil {
					return time.Time{}, err
				}
				s.mu.Lock()
				// The slot is computed again: time passed, and another
				// chat may have taken the overall gap.
				checked = true
				continue
			}
			// A sleep that overran books the slot as taken now, so the
			// gap to the next call is kept from when this one goes.
			at = later(at, now)
			if chatID < 0 && counts {
				p.recent = append(p.recent, at)
				if lane >= LaneChatter {
					p.chatter = append(p.chatter[max(0, len(p.chatter)-chatterBurst+1):], at)
				}
			}
			p.next = at.Add(s.opts.PerChat)
			s.nextAny = at.Add(s.opts.Overall)
			p.signal()
			s.mu.Unlock()
			return at, nil
		}
		// Waiting again: the check runs again once the slot is due.
		checked = false
		changed := p.changed
		s.mu.Unlock()
		if turn {
			// A higher lane arriving meanwhile finds us gone to sleep and
			// waits its own turn; on waking we check again who is first.
			if err := s.opts.Sleep(ctx, at.Sub(now)); err != nil {
				return time.Time{}, err
			}
			due = at
		} else {
			select {
			case <-changed:
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			}
		}
		s.mu.Lock()
	}
}

// mayPass reports whether w may go before the waiters served ahead of it,
// because each of them waits for something w's going does not take: its
// slot is more than the chat's gap away, and w spends none of the budget it
// waits for (w is an edit, or it has a larger share of the group's minute
// than its lane leaves it). Without this a caller waiting for its lane's
// share of the minute (a reminder) would hold back what needs none of it:
// a reply, which has the whole minute, or an edit.
func (s *Sender) mayPass(p *pace, w *waiter, chatID int64, now time.Time) bool {
	for _, a := range p.waiting {
		if a == w || a.lane > w.lane || (a.lane == w.lane && a.seq > w.seq) {
			continue // served after w
		}
		if s.slot(p, chatID, a.counts, a.lane, now).Before(now.Add(s.opts.PerChat)) {
			return false
		}
		if w.counts && a.counts && (chatID >= 0 || s.budget(w.lane) <= s.budget(a.lane)) {
			return false
		}
	}
	return true
}

// budget is how many sends of a group's minute a lane may take: chatter
// and reminders leave the Reserve to held calls, their outcomes and
// replies.
func (s *Sender) budget(lane Lane) int {
	if lane == LaneRemind || lane >= LaneChatter {
		return max(s.opts.PerGroupPerMinute-s.opts.Reserve, 1)
	}
	return s.opts.PerGroupPerMinute
}

// slot is the earliest time a call of lane may go to chatID, booking
// nothing. Chatter and reminders leave the last Reserve sends of a group's
// minute to the lanes that have the whole of it (a reminder kept waiting
// past its request's lapse is dropped by the check its caller gave).
func (s *Sender) slot(p *pace, chatID int64, counts bool, lane Lane, now time.Time) time.Time {
	at := now
	if p.next.After(at) {
		at = p.next
	}
	if s.nextAny.After(at) {
		at = s.nextAny
	}
	if chatID < 0 && counts {
		keep := p.recent[:0]
		for _, t := range p.recent {
			if at.Sub(t) < time.Minute {
				keep = append(keep, t)
			}
		}
		p.recent = keep
		budget := s.budget(lane)
		if lane >= LaneChatter {
			// Chatter also goes evenly through the minute, in bursts of
			// at most chatterBurst.
			if n := len(p.chatter); n >= chatterBurst {
				every := time.Minute / time.Duration(budget)
				if t := p.chatter[n-chatterBurst].Add(chatterBurst * every); t.After(at) {
					at = t
				}
			}
		}
		if n := len(keep); n >= budget {
			if t := keep[n-budget].Add(time.Minute); t.After(at) {
				at = t
			}
		}
	}
	return at
}

// moved records that the call booked at was answered later, now: the gaps
// after it count from now.
func (s *Sender) moved(chatID int64, counts bool, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	p := s.chats[chatID]
	if p == nil || !now.After(at) {
		return
	}
	p.next = later(p.next, now.Add(s.opts.PerChat))
	s.nextAny = later(s.nextAny, now.Add(s.opts.Overall))
	if chatID < 0 && counts {
		if i := slices.Index(p.recent, at); i >= 0 {
			p.recent[i] = now
		}
		if i := slices.Index(p.chatter, at); i >= 0 {
			p.chatter[i] = now
		}
	}
}

// block keeps chatID quiet until t, as a 429 asked.
func (s *Sender) block(chatID int64, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.chats[chatID]; p != nil && t.After(p.next) {
		p.next = t
		p.signal()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
