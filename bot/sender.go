package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
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
// once. It is safe for concurrent use: callers queue for their slot, in
// order of arrival per chat.
//
// A call that timed out may still have reached Telegram, so a retry can
// repeat a message; the Bot API offers no idempotency key to prevent it.
type Sender struct {
	b    *tele.Bot
	opts SenderOptions

	mu      sync.Mutex
	chats   map[int64]*pace
	nextAny time.Time
}

// pace is a chat's schedule: when it may next be written to, and the times
// of its recent messages (for the per-group budget).
type pace struct {
	next   time.Time
	recent []time.Time
}

// NewSender wraps b, whose token it scrubs from every error it returns or logs.
func NewSender(b *tele.Bot, opts SenderOptions) *Sender {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = deskbot.Sleep
	}
	if opts.PerChat <= 0 {
		opts.PerChat = time.Second
	}
	if opts.PerGroupPerMinute <= 0 {
		opts.PerGroupPerMinute = 20
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
// used as it is (telebot copies it, so a retry sends the same). telebot
// keeps no forum topic by itself: a send into a topic names it in
// opt.ThreadID.
func (s *Sender) Send(ctx context.Context, chatID int64, text string, opt *tele.SendOptions) (*tele.Message, error) {
	if opt == nil {
		opt = &tele.SendOptions{ParseMode: tele.ModeHTML, DisableWebPagePreview: true}
	}
	var msg *tele.Message
	err := s.do(ctx, "sendMessage", chatID, true, func() (err error) {
		msg, err = s.b.Send(tele.ChatID(chatID), text, opt)
		return err
	})
	return msg, err
}

// Edit replaces the text (HTML) and keyboard of a message; a nil markup
// removes the keyboard. "Message is not modified" counts as done.
func (s *Sender) Edit(ctx context.Context, chatID int64, messageID int, text string, markup *tele.ReplyMarkup) error {
	msg := tele.StoredMessage{MessageID: fmt.Sprint(messageID), ChatID: chatID}
	opt := &tele.SendOptions{ParseMode: tele.ModeHTML, ReplyMarkup: markup, DisableWebPagePreview: true}
	return s.do(ctx, "editMessageText", chatID, false, func() error {
		_, err := s.b.Edit(msg, text, opt)
		return err
	})
}

// SendPhoto uploads size bytes of pic, from its start, as a photo with an
// HTML caption. The bytes are read from the handle the caller opened and
// checked (deskbot.OpenDeskFile); nothing is opened by name here, so a file
// swapped for a symlink after the check is never what is uploaded.
func (s *Sender) SendPhoto(ctx context.Context, chatID int64, pic io.ReaderAt, size int64, caption string) (*tele.Message, error) {
	return s.SendPhotoIn(ctx, chatID, 0, pic, size, caption)
}

// SendPhotoIn is SendPhoto into a forum topic (thread 0: General, or a
// chat without topics).
func (s *Sender) SendPhotoIn(ctx context.Context, chatID int64, thread int, pic io.ReaderAt, size int64, caption string) (*tele.Message, error) {
	var msg *tele.Message
	err := s.do(ctx, "sendPhoto", chatID, true, func() (err error) {
		// A fresh reader and Photo each attempt: a retry uploads the same
		// bytes from the start, and telebot overwrites the Photo on success.
		p := &tele.Photo{File: tele.FromReader(io.NewSectionReader(pic, 0, size)), Caption: caption}
		msg, err = s.b.Send(tele.ChatID(chatID), p, &tele.SendOptions{ParseMode: tele.ModeHTML, ThreadID: thread})
		return err
	})
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
	backoff := deskbot.Backoff{Min: s.opts.MinBackoff, Max: s.opts.MaxBackoff}
	for {
		if err := s.opts.Sleep(ctx, s.reserve(chatID, counts)); err != nil {
			return err
		}
		err := call()
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
		s.opts.Log.WarnContext(ctx, "telegram call failed, will retry", "method", method, "code", code, "wait", wait, "err", serr.Error())
		if err := s.opts.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w (last: %s)", err, serr.Error())
		}
	}
}

// reserve books chatID's next slot and returns how long until it.
func (s *Sender) reserve(chatID int64, counts bool) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	p := s.chats[chatID]
	if p == nil {
		p = &pace{}
		s.chats[chatID] = p
	}
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
		if n := len(keep); n >= s.opts.PerGroupPerMinute {
			at = keep[n-s.opts.PerGroupPerMinute].Add(time.Minute)
		}
		p.recent = append(p.recent, at)
	}
	p.next = at.Add(s.opts.PerChat)
	s.nextAny = at.Add(s.opts.Overall)
	return at.Sub(now)
}

// block keeps chatID quiet until t, as a 429 asked.
func (s *Sender) block(chatID int64, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.chats[chatID]; p != nil && t.After(p.next) {
		p.next = t
	}
}
