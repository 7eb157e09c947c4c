package bot

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
)

// topics gives each desk its own forum topic in the team's group, when
// TELEGRAM_TOPICS is on: a desk's chatter goes there, while held calls and
// everything else stay in the General topic, the one place approvers
// watch. The bot creates a desk's topic the first time the desk speaks, if
// it has the right (can_manage_topics), and keeps the mapping both ways in
// notes with no expiry, so a restart reuses the topics instead of
// creating new ones. When a topic cannot be had (no right, not a forum,
// Telegram down) the desk speaks in General, and the bot tries again
// after retryTopic.
//
// Safe for concurrent use; the outbox is the only writer in practice.
type topics struct {
	chat  int64
	notes deskbot.Notes
	s     *Sender
	now   deskbot.Now
	log   *slog.Logger

	mu     sync.Mutex
	known  map[string]int       // desk → thread id
	failed map[string]time.Time // desk → when creating its topic last failed
}

const (
	// retryTopic is how long a desk speaks in General after its topic
	// could not be created, before the bot tries again.
	retryTopic = 10 * time.Minute
	// createTopicWait bounds one attempt to create a topic, so a Telegram
	// outage holds the desk's message up this long at most.
	createTopicWait = 30 * time.Second
)

func newTopics(chat int64, notes deskbot.Notes, s *Sender, now deskbot.Now, log *slog.Logger) *topics {
	return &topics{chat: chat, notes: notes, s: s, now: now, log: log, known: map[string]int{}, failed: map[string]time.Time{}}
}

// thread returns the thread id of desk's topic, creating the topic when
// there is none yet; 0 (General) when it cannot.
func (t *topics) thread(ctx context.Context, desk string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.known[desk]; ok {
		return id
	}
	v, err := t.notes.Note(ctx, topicKey(t.chat, desk))
	if id, perr := strconv.Atoi(v); err == nil && perr == nil && id > 0 {
		t.known[desk] = id
		return id
	}
	if err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.log.WarnContext(ctx, "topics: could not read a desk's topic; it speaks in General for now", "desk", desk, "err", err)
		return 0
	}
	if at, ok := t.failed[desk]; ok && t.now().Sub(at) < retryTopic {
		return 0
	}
	cctx, cancel := context.WithTimeout(ctx, createTopicWait)
	defer cancel()
	id, err := t.s.CreateTopic(cctx, t.chat, desk)
	if err != nil {
		t.failed[desk] = t.now()
		t.log.WarnContext(ctx, "topics: could not create a desk's topic; it speaks in General (does the bot have the right to manage topics?)", "desk", desk, "err", err)
		return 0
	}
	// The topic exists now: its notes are written even if ctx ends, or a
	// restart would create a second one.
	bctx, bcancel := bookkeeping(ctx)
	defer bcancel()
	if err := t.notes.PutNote(bctx, topicDeskKey(t.chat, id), desk, 0); err != nil {
		t.log.WarnContext(ctx, "topics: could not note a topic's desk", "desk", desk, "err", err)
	}
	if err := t.notes.PutNote(bctx, topicKey(t.chat, desk), strconv.Itoa(id), 0); err != nil {
		t.log.WarnContext(ctx, "topics: could not note a desk's topic", "desk", desk, "err", err)
	}
	delete(t.failed, desk)
	t.known[desk] = id
	t.log.InfoContext(ctx, "topics: created a desk's topic", "desk", desk, "thread", id)
	return id
}

// forget drops desk's topic, which Telegram no longer knows (deleted by a
// person): the next message creates a new one.
func (t *topics) forget(ctx context.Context, desk string, thread int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.known, desk)
	for _, k := range []string{topicKey(t.chat, desk), topicDeskKey(t.chat, thread)} {
		if err := t.notes.DeleteNote(ctx, k); err != nil {
			t.log.WarnContext(ctx, "topics: could not forget a deleted topic", "desk", desk, "err", err)
		}
	}
}

// desk returns the desk whose topic thread is, if any.
func (t *topics) desk(ctx context.Context, thread int) (string, error) {
	return t.notes.Note(ctx, topicDeskKey(t.chat, thread))
}

// threadGone reports whether err is Telegram saying a topic does not exist.
func threadGone(err error) bool {
	return TelegramCode(err) == 400 && strings.Contains(strings.ToLower(err.Error()), "thread not found")
}
