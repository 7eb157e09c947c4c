package bot

import (
	"sync"

	tele "gopkg.in/telebot.v3"
)

// Telebot runs updates synchronously here (Settings.Synchronous), in the
// order Telegram numbered them, and the dispatcher below decides what runs
// side by side: taps on buttons at once, each in its own goroutine, since
// the gate's atomic transition settles any race between them; messages
// one after another per chat, so a desk reads what a person typed in the
// order it was typed. Replies to messages have a queue of their own per
// chat (Bot.reply), so a reply that Telegram refuses for a while does not
// hold up the commands typed after it.
type dispatcher struct {
	mu    sync.Mutex
	chats map[int64]*chatQueue
}

type chatQueue struct {
	pending []func()
	running bool
}

// dispatch runs work for the update in c without holding up the updates
// after it.
func (d *dispatcher) dispatch(c tele.Context, work func()) {
	if c.Callback() != nil || c.Chat() == nil {
		go work()
		return
	}
	d.inOrder(c.Chat().ID, work)
}

// inOrder runs work after the work queued before it for the same chat.
func (d *dispatcher) inOrder(id int64, work func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.chats == nil {
		d.chats = map[int64]*chatQueue{}
	}
	q := d.chats[id]
	if q == nil {
		q = &chatQueue{}
		d.chats[id] = q
	}
	q.pending = append(q.pending, work)
	if !q.running {
		q.running = true
		go d.drain(id, q)
	}
}

// drain runs a chat's queued work in order and ends when the queue is empty,
// so an idle chat holds no goroutine.
func (d *dispatcher) drain(id int64, q *chatQueue) {
	for {
		d.mu.Lock()
		if len(q.pending) == 0 {
			q.running = false
			delete(d.chats, id)
			d.mu.Unlock()
			return
		}
		work := q.pending[0]
		q.pending = q.pending[1:]
		d.mu.Unlock()
		work()
	}
}
