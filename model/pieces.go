package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"sync"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deskbot/deskbot"
)

// A chat-completions request is written from pieces: the JSON of each
// message and of each tool as the SDK writes them inside its own request,
// kept by content. The SDK writes a request through reflection, which for a
// desk's history of some forty messages costs several times what sending
// it does; a piece depends on nothing but its message or tool, so each is
// written once and the request is the pieces joined.

// pieceCacheBytes bounds the keys and pieces of one generation of a
// pieceCache. A desk's history (some forty short messages), its system
// prompt and its tools take some tens of kilobytes, so this keeps a few
// desks' worth; with more desks busy at once, pieces are written again,
// which costs time, never memory. Memory is what bounds it: the cache is one
// for the process (sharedPieces), since one per backend grows with the
// desks and their backup models, and the load drill (ten desks) peaked
// 3 MiB higher with one per backend, 2 MiB with one of 512 KiB a
// generation and under 1 MiB with this, while a desk's turn was as quick.
const pieceCacheBytes = 128 << 10

// sharedPieces is the process's one cache of pieces, shared by every
// OpenAI-compatible backend: a piece is keyed by all it depends on, so a
// backend is only ever given the JSON of a message or tool it sends itself.
var sharedPieces = newPieceCache()

// maxPiece is the largest piece kept: a message longer than this (a long
// tool result) is written again when sent again, which costs little next
// to sending it.
const maxPiece = 64 << 10

// pieceCache keeps pieces by key in two generations: a piece is put in the
// current one, and one found in the old is moved to the current; when the
// current holds pieceCacheBytes, it becomes the old and the old is dropped.
// What a desk sends every step stays, what it stopped sending goes.
// Safe for concurrent use.
type pieceCache struct {
	mu       sync.Mutex
	cur, old map[string][]byte
	size     int // bytes of keys and pieces in cur
}

func newPieceCache() *pieceCache {
	return &pieceCache{cur: map[string][]byte{}}
}

func (c *pieceCache) get(key []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.cur[string(key)]; ok {
		return p, true
	}
	p, ok := c.old[string(key)]
	if ok {
		c.putLocked(string(key), p)
	}
	return p, ok
}

func (c *pieceCache) put(key, p []byte) {
	if len(key)+len(p) > maxPiece {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(string(key), p)
}

func (c *pieceCache) putLocked(key string, p []byte) {
	if _, ok := c.cur[key]; ok {
		return
	}
	if c.size+len(key)+len(p) > pieceCacheBytes {
		c.old, c.cur, c.size = c.cur, map[string][]byte{}, 0
	}
	c.cur[key] = p
	c.size += len(key) + len(p)
}

// Keys: a byte for the kind of piece, then every field its JSON depends
// on, each after its length, so that no two contents share a key.
const (
	keySystem    = 's'
	keyUser      = 'u'
	keyAssistant = 'a'
	keyResult    = 'r' // a tool's result
	keyTool      = 't' // a tool offered
)

// messageKey appends to key the cache key of msg's piece (openaiMessage).
func messageKey(key []byte, msg deskbot.Message) []byte {
	switch msg.Role {
	case "system":
		return appendField(append(key, keySystem), msg.Content)
	case "assistant":
		key = appendField(append(key, keyAssistant), msg.Content)
		for _, c := range msg.ToolCalls {
			key = appendField(appendField(appendField(key, c.ID), c.Name), argsText(c.Arguments))
		}
		return key
	case "tool":
		key = appendField(appendField(append(key, keyResult), msg.Content), msg.ToolCallID)
		if msg.IsError {
			return append(key, 1)
		}
		return append(key, 0)
	}
	return appendField(append(key, keyUser), msg.Content)
}

// toolKey appends to key the cache key of t's piece (openaiTool).
func toolKey(key []byte, t deskbot.ToolSpec) []byte {
	return appendField(appendField(appendField(append(key, keyTool), t.Name), t.Description), string(t.Schema))
}

func appendField(key []byte, s string) []byte {
	return append(binary.AppendUvarint(key, uint64(len(s))), s...)
}

// marshalPiece is v as the SDK writes it as an element of an array in a
// request: its MarshalJSON, compacted.
func marshalPiece(v json.Marshaler) ([]byte, error) {
	b, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// requestHead is the JSON of a request's fields besides messages and tools,
// which c alone decides, without the braces: the model and max_tokens.
func requestHead(c Config) ([]byte, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.Model)}
	if c.MaxTokens > 0 {
		// max_tokens, not max_completion_tokens: local servers know only
		// the older name.
		p.MaxTokens = openai.Int(int64(c.MaxTokens))
	}
	if c.Stream {
		// Asked for, a stream ends with the answer's usage (OpenAI, vLLM
		// and Ollama know the option; a server that does not ignores it).
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	b, err := p.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	return b[1 : len(b)-1], nil
}

// joinBody is a request's JSON from its pieces, in the SDK's order of
// fields: messages, then the head, then tools. An empty list is left out,
// as the SDK leaves it out.
func joinBody(msgs [][]byte, head []byte, tools [][]byte) []byte {
	n := len(`{"messages":[],,"tools":[]}`) + len(head) + len(msgs) + len(tools)
	for _, p := range msgs {
		n += len(p)
	}
	for _, p := range tools {
		n += len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	b = appendList(b, `"messages":[`, msgs)
	if len(head) > 0 {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, head...)
	}
	if len(tools) > 0 {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendList(b, `"tools":[`, tools)
	}
	return append(b, '}')
}

func appendList(b []byte, open string, ps [][]byte) []byte {
	if len(ps) == 0 {
		return b
	}
	b = append(b, open...)
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return append(b, ']')
}
