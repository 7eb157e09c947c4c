package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/deskfs"
)

// MessageTool is send_message {text, picture}: it publishes a desk_message
// event, which the bot posts to the chat (a picture as a photo). A picture
// must be a regular file inside the desk's own folder; the event carries
// its absolute path there, and the bot opens it again through
// deskfs.Open, so no path the model chose leads anywhere else.
//
// The team's chat takes about 20 messages a minute, held calls first: a desk
// with ChatShare or more messages still waiting to be posted is told to
// wait, and its message is not published.
type MessageTool struct {
	Events  deskbot.Publisher
	DataDir string // a desk's folder is DataDir/desks/<desk>
	Now     deskbot.Now
	Backlog deskbot.ChatBacklog // nil: never told to wait
}

// ChatShare is how many of a desk's messages may wait to be posted before
// send_message tells it to wait.
const ChatShare = 5

// MessageTools returns a tool source for BuildRegistries; backlog (at most
// one) tells it how many of a desk's messages wait to be posted.
func MessageTools(events deskbot.Publisher, dataDir string, now deskbot.Now, backlog ...deskbot.ChatBacklog) func(string) []deskbot.Tool {
	t := &MessageTool{Events: events, DataDir: dataDir, Now: now}
	if len(backlog) > 0 {
		t.Backlog = backlog[0]
	}
	return func(string) []deskbot.Tool { return []deskbot.Tool{t} }
}

func (*MessageTool) Name() string { return deskbot.ToolSendMessage }

func (*MessageTool) Description() string {
	return "Post a message to the team's chat now, optionally with a picture (a PNG or JPEG you made in your folder, " +
		"given as a path relative to your folder, e.g. charts/pnl.png). Your final reply is posted anyway; use this for " +
		"something to show before the turn ends, or for a picture."
}

func (*MessageTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"text":{"type":"string","description":"The message, short and plain"},` +
		`"picture":{"type":"string","description":"Optional: path of an image file relative to your folder"}},` +
		`"required":["text"],"additionalProperties":false}`)
}

// CheckArguments has nothing to refuse before the gate: Run tells the model
// of a bad message.
func (*MessageTool) CheckArguments(json.RawMessage) error { return nil }

// maxMessage keeps one message within Telegram's 4,096 characters.
const maxMessage = 4000

func (m *MessageTool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	var a struct {
		Text    *string `json:"text"`
		Picture string  `json:"picture"`
	}
	d := json.NewDecoder(strings.NewReader(string(args)))
	d.DisallowUnknownFields()
	if err := d.Decode(&a); err != nil {
		return toolError("send_message takes {\"text\": string, \"picture\": optional path}: " + err.Error()), nil
	}
	text := ""
	if a.Text != nil {
		text = strings.TrimSpace(*a.Text)
	}
	if text == "" && a.Picture == "" {
		return toolError("send_message needs a non-empty text."), nil
	}
	if n := len([]rune(text)); n > maxMessage {
		return toolError("The message is too long for the chat: keep it under 4000 characters."), nil
	}
	if m.Backlog != nil {
		if n := m.Backlog.ChatBacklog(desk); n >= ChatShare {
			return toolError(fmt.Sprintf("The team's chat is busy: %d of your messages are still waiting to be posted, so this message was NOT sent. "+
				"Wait before you send more: carry on with your work, and send only what matters once your earlier messages are out (or say it in your final reply).", n)), nil
		}
	}
	ev := deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: desk, Time: m.now(), Text: text}
	if a.Picture != "" {
		p, msg := m.picturePath(desk, a.Picture)
		if msg != "" {
			return toolError(msg), nil
		}
		ev.Picture = p
	}
	if err := m.Events.Publish(ctx, ev); err != nil {
		return deskbot.ToolResult{}, err
	}
	return deskbot.ToolResult{Text: "Sent to the chat.", Picture: ev.Picture}, nil
}

// picturePath checks that rel names a regular file inside the desk's
// folder and returns its path there; a non-empty message says why it is
// refused. The check opens the file through deskfs.Open, as the
// bot does again before the upload: a desk's path is never resolved on the
// host, so a symlink out of the folder is refused without the service
// looking at its target (the desk learns nothing of what exists outside).
func (m *MessageTool) picturePath(desk, rel string) (string, string) {
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", "picture must be a path relative to your folder that stays inside it, such as charts/pnl.png, not " + quoteShort(rel) + "."
	}
	root, err := filepath.EvalSymlinks(deskfs.Dir(m.DataDir, desk))
	if err != nil {
		return "", "Your folder does not exist yet, so there is no picture " + quoteShort(rel) + "."
	}
	f, _, err := deskfs.Open(root, rel)
	switch {
	case deskbot.ErrorCode(err) == deskbot.ENOTFOUND:
		return "", "There is no file " + quoteShort(rel) + " in your folder."
	case err != nil:
		return "", "The picture " + quoteShort(rel) + " cannot be sent: " + deskbot.ErrorMessage(err)
	}
	f.Close()
	return filepath.Join(root, rel), ""
}

func (m *MessageTool) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

func toolError(text string) deskbot.ToolResult { return deskbot.ToolResult{IsError: true, Text: text} }

func quoteShort(s string) string { return "'" + argtext.Clip(s, 80, "…") + "'" }
