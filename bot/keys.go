package bot

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// This file names everything the bot keeps in the store: its consumer group
// on the event stream and its note keys, each with how long it is kept. The
// store puts its own prefix in front of a note key. Notes outlive a restart
// and an upgrade, so a key's text must never change: a renamed key forgets
// what was sent (and sends it again) or which message a reply answers.
// The store puts the deployment's hash tag in front as well, so a note
// shares the slot of every other key of the deployment on a Redis Cluster
// (store/keys.go); nothing here needs braces of its own.

// OutboxGroup is the bot's consumer group on the event stream: the outbox
// reads and acknowledges events in it, and the service reports its backlog.
const OutboxGroup = "telegram"

const (
	// noteTTL bounds the outbox's notes: a week is far longer than any
	// outage an unacknowledged event waits out, and than people reply.
	noteTTL = 7 * 24 * time.Hour
	// reasonTTL keeps the prompt's routing note well past any sensible
	// DENY_REASON_WAIT; a late reply is answered, not lost silently.
	reasonTTL = 24 * time.Hour
	// onceTTL outlasts the batch of updates Telegram delivers again after a
	// crash by far.
	onceTTL = 48 * time.Hour
)

// reportSentKey notes that the day's report of day (India's, 2006-01-02)
// was sent at REPORT_AT, so it goes out once a day.
func reportSentKey(day string) string { return "tg:report:" + day }

// requestMessageKey notes "<chatID>:<messageID>" of the message that shows
// request id, so its outcome edits that message.
func requestMessageKey(requestID string) string { return "tg:reqmsg:" + requestID }

// whyKey notes who asked request id's desk why, while the question is
// outstanding: one question per request at a time.
func whyKey(requestID string) string { return "tg:why:" + requestID }

// remindKey marks request id's reminder as sent (or about to be), written
// first-caller-wins before it goes out, so it goes once across restarts
// and leaders.
func remindKey(requestID string) string { return "tg:remind:" + requestID }

// digestKey notes the messages ("<chatID>:<messageID>", comma separated,
// one a page) of desk's digest of held calls. A request shown there has
// digestMark as its requestMessageKey.
func digestKey(desk string) string { return "tg:digest:" + desk }

// openMessageKey notes the message Open sent for a request shown in a
// digest, so its outcome edits that message too.
func openMessageKey(requestID string) string { return "tg:open:" + requestID }

// deskMessageKey notes the desk that said message msgID in chat, so a reply
// to it goes to that desk.
func deskMessageKey(chat int64, msgID int) string { return "tg:deskmsg:" + messageRef(chat, msgID) }

// sentKey marks event id as delivered (and acknowledged or about to be).
func sentKey(eventID string) string { return "tg:sent:" + eventID }

// sentPartKey marks one message of event id as accepted by Telegram: part 0
// is a picture, parts 1 on the text.
func sentPartKey(eventID string, part int) string {
	return sentKey(eventID) + ":" + strconv.Itoa(part)
}

// reasonPromptKey notes the request whose denial the prompt msgID in chat
// asks a reason for, so a reply to it becomes that reason.
func reasonPromptKey(chat int64, msgID int) string { return "tg:reason:" + messageRef(chat, msgID) }

// changePromptKey routes a reply to a change prompt (askChange) to its
// request and the call the prompt was about ("<id>.<changes>").
func changePromptKey(chat int64, msgID int) string { return "tg:change:" + messageRef(chat, msgID) }

// messageOnceKey marks a person's message as handled, so a message Telegram
// delivers again does not act twice.
func messageOnceKey(chat int64, msgID int) string { return "tg:msg:" + messageRef(chat, msgID) }

// flattenOnceKey marks a flatten confirmation as done, however many taps or
// redeliveries arrive.
func flattenOnceKey(chat int64, msgID int) string { return "tg:flatten:" + messageRef(chat, msgID) }

// topicKey notes the thread id of desk's forum topic in chat. Kept with
// no expiry: a topic lives until a person deletes it.
func topicKey(chat int64, desk string) string {
	return "tg:topic:" + strconv.FormatInt(chat, 10) + ":" + desk
}

// topicDeskKey notes the desk whose topic thread is in chat, so a plain
// message there goes to that desk. Kept with no expiry, like topicKey.
func topicDeskKey(chat int64, thread int) string { return "tg:topicdesk:" + messageRef(chat, thread) }

// updateOffsetKey keeps the last Telegram update the leader handed over,
// for bot botID (the token's public number) on Bot API server apiURL (a
// short hash of it): updates are numbered per bot and server. Written only
// by the leader (poll.go), for offsetTTL.
func updateOffsetKey(botID int64, apiURL string) string {
	h := fnv.New32a()
	h.Write([]byte(apiURL))
	return "tg:offset:" + strconv.FormatInt(botID, 10) + ":" + strconv.FormatUint(uint64(h.Sum32()), 36)
}

// offsetTTL: Telegram numbers a bot's updates in sequence, but picks the
// next number at random after a week without updates; an offset older
// than a day is let go (Telegram's own confirmation then rules) rather
// than risk asking past a new, lower number.
const offsetTTL = 24 * time.Hour

// messageRef is "<chatID>:<messageID>", how a note names a chat message;
// parseMessageRef reads it back.
func messageRef(chat int64, msgID int) string {
	return strconv.FormatInt(chat, 10) + ":" + strconv.Itoa(msgID)
}

func parseMessageRef(s string) (chatID int64, msgID int, ok bool) {
	c, m, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	chatID, err1 := strconv.ParseInt(c, 10, 64)
	id, err2 := strconv.Atoi(m)
	return chatID, id, err1 == nil && err2 == nil && id > 0
}
