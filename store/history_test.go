package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/deskbot/deskbot"
)

// historyEntries are entries as this store wrote them or as an older one
// or another hand may have: every one must read as encoding/json reads it.
var historyEntries = []string{
	`{"role":"user","content":"[10:30 India time] Message from Asha:\nWhat is INFY at?"}`,
	`{"role":"assistant","content":"(Tools I used: get_quote {\"symbol\":\"INFY\"} -> 1500.00)\nINFY is at 1500."}`,
	`{"role":"assistant"}`,
	`{"role":""}`,
	`{"role":"user","content":""}`,
	`{"role":"user","content":"tab\there \\ back\/slash \b\f\r end\\"}`,
	`{"role":"user","content":"é 日本 😀 ₹1,500"}`,
	`{"role":"user","content":"\u003cb\u003e \u0026 \u2028 \ud83d\ude00"}`,
	`{"role":"user","content":"lone surrogate \ud83d"}`,
	`{"role":"user","content":"\u00e9\u0000\uFFFD\uffff \u12"}`,
	`{"role":"user","content":"short \u12"}`,
	`{"role":"user","content":"signed \u+123 \u-123 \u0x12 \u_123"}`,
	`{"role":"user","content":"\u0041"}`,
	"{\"role\":\"user\",\"content\":\"bad utf-8 \xff\xfe\"}",
	"{\"role\":\"user\",\"content\":\"raw control \x01\"}",
	"{\"role\":\"user\",\"content\":\"raw newline \n\"}",
	`{"role":"user","content":"escape at end \"}`,
	`{"role":"user","content":"bad escape \x"}`,
	`{"role":"user","content":"unterminated}`,
	`{"role":"user","content":"x"} `,
	`{"role":"user","content":"x"}trailing`,
	`{"role":"user","content":"x","role":"assistant"}`,
	`{"content":"x","role":"user"}`,
	`{"Role":"user","Content":"case-insensitive keys"}`,
	`{ "role" : "user" , "content" : "spaced" }`,
	`{"role":"assistant","tool_calls":[{"id":"c1","name":"get_quote","arguments":{"symbol":"INFY"}}]}`,
	`{"role":"tool","content":"r","tool_call_id":"c1","is_error":true}`,
	`{"role":"user","content":null}`,
	`{"role":null}`,
	`{"role":"user","content":"x"`,
	`{"role":"user","content":5}`,
	`{"role":`,
	`{"role":"user","content":"x"}}`,
	`not json`,
	``,
}

func TestDecodeHistoryReadsAsEncodingJSON(t *testing.T) {
	for _, v := range historyEntries {
		var want deskbot.Message
		wantErr := json.Unmarshal([]byte(v), &want)
		got, err := decodeHistory("history", []string{v})
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%q: error %v, want %v", v, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got[0], want) {
			t.Errorf("%q: read %#v, want %#v", v, got[0], want)
		}
	}
}

func FuzzPlainMessage(f *testing.F) {
	for _, v := range historyEntries {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := plainMessage(v)
		if !ok {
			return
		}
		var want deskbot.Message
		if err := json.Unmarshal([]byte(v), &want); err != nil {
			t.Fatalf("%q: read %#v, but encoding/json refuses it: %v", v, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: read %#v, want %#v", v, got, want)
		}
	})
}

// Every message a store writes with AppendHistory is one plainMessage
// reads, unless it carries what only encoding/json reads.
func TestWrittenHistoryIsPlain(t *testing.T) {
	for _, m := range []deskbot.Message{
		{Role: "user", Content: "[10:30 India time] Message from Asha:\nWhat is INFY at?"},
		{Role: "assistant", Content: "(Tools I used: place_order {\"symbol\":\"M&M\"} -> filled)\n₹1,500 done.\t\\"},
		{Role: "assistant"},
	} {
		v, err := encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := plainMessage(v); !ok {
			t.Errorf("%s is not read directly", v)
		}
	}
}
