package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// The Anthropic Messages wire format, as far as a client of tools needs it.

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	req, rep, ok := s.take(r, APIAnthropic)
	model, _ := req.Body["model"].(string)
	id := s.replyID(req, "msg_fake_")
	switch {
	case !ok:
		writeJSON(w, http.StatusInternalServerError, anthropicError("api_error", "modeltest: no reply scripted"))
		return
	case rep.Hang:
		s.hang(r)
		return
	case rep.Flood > 0:
		s.flood(w, APIAnthropic, id, model, req.Stream, rep.Flood)
		return
	case rep.Status != 0 && rep.Status != http.StatusOK:
		msg := rep.ErrorMessage
		if msg == "" {
			msg = http.StatusText(rep.Status)
		}
		writeJSON(w, rep.Status, anthropicError("api_error", msg))
		return
	case rep.Malformed && !req.Stream:
		writeJSON(w, http.StatusOK, fmt.Appendf(nil, `{"id":%q,"type":"message","content":[{"type":`, id))
		return
	}

	stop := "end_turn"
	if len(rep.ToolCalls) > 0 {
		stop = "tool_use"
	}
	ids := make([]string, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		if !rep.OmitIDs {
			ids[i] = s.callID(c, "toolu_fake_")
		}
	}
	in, out := rep.usage()
	if !req.Stream {
		var blocks [][]byte
		if rep.Text != "" {
			blocks = append(blocks, mustMarshal(map[string]any{"type": "text", "text": rep.Text}))
		}
		for i, c := range rep.ToolCalls {
			blocks = append(blocks, toolUseBlock(ids[i], c.Name, c.Arguments))
		}
		body := fmt.Appendf(nil, `{"id":%q,"type":"message","role":"assistant","model":%s,"content":[%s],`+
			`"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d}}`,
			id, mustMarshal(model), bytes.Join(blocks, []byte(",")), stop, in, out)
		writeJSON(w, http.StatusOK, body)
		return
	}

	e := newSSE(w)
	send := func(v map[string]any) { e.send(v["type"].(string), mustMarshal(v)) }
	send(map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1},
	}})
	if rep.Malformed {
		e.send("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{`))
		return
	}
	index := 0
	if rep.Text != "" {
		send(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(rep.Text, 3) {
			send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		send(map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range rep.ToolCalls {
		block := map[string]any{"type": "tool_use", "name": c.Name, "input": map[string]any{}}
		if ids[i] != "" {
			block["id"] = ids[i]
		}
		send(map[string]any{"type": "content_block_start", "index": index, "content_block": block})
		for _, p := range pieces(c.Arguments, 3) {
			send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		send(map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	send(map[string]any{"type": "message_stop"})
}

// toolUseBlock writes the block by hand so that valid arguments keep their
// exact bytes (encoding/json would compact them). Arguments that are not
// JSON cannot sit in a JSON body as they are; they go as a JSON string,
// which a client sees as input that is not an object.
func toolUseBlock(id, name, args string) []byte {
	input := []byte(args)
	if len(bytes.TrimSpace(input)) == 0 {
		input = []byte("{}") // Anthropic always sends an object
	} else if !json.Valid(input) {
		input = mustMarshal(args)
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"tool_use",`)
	if id != "" {
		fmt.Fprintf(&b, `"id":%s,`, mustMarshal(id))
	}
	fmt.Fprintf(&b, `"name":%s,"input":%s}`, mustMarshal(name), input)
	return b.Bytes()
}

func anthropicError(kind, msg string) []byte {
	return mustMarshal(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}
