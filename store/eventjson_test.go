package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// The stored event's encoder must write what encoding/json writes, byte
// for byte: entries already in the stream were written by it, and readers
// decode both with encoding/json.
func TestAppendStoredEventIsEncodingJSON(t *testing.T) {
	grant := &deskbot.Grant{Desk: "main", Tool: "place_order", GrantedBy: "Asha <101>", GrantedAt: time.UnixMilli(1795942800000).UTC(), Limit: 250000.5, Approvers: 2}
	tests := []struct {
		name string
		se   storedEvent
	}{
		{"empty", storedEvent{}},
		{"hold", storedEvent{Kind: "u", Desk: "main", Time: 1795942800000, RequestID: "3f1c", TriggerOfRequest: true}},
		{"call", storedEvent{Kind: "c", Desk: "main", Time: -1, TriggerID: "t", Call: &storedCall{ID: "call_1", Name: "place_order", Arguments: json.RawMessage(`{"symbol":"NIFTY","qty":50}`)}}},
		{"call without id or arguments", storedEvent{Kind: "c", Call: &storedCall{Name: "get_book"}}},
		{"arguments to compact and escape", storedEvent{Kind: "c", Call: &storedCall{Name: "n", Arguments: json.RawMessage(" { \"a\" : [1, 2],\n\t\"b\":\"<x> & y \u2028\u2029\" } ")}}},
		{"quoted broken arguments", storedEvent{Kind: "c", Call: &storedCall{Name: "\x00n", Arguments: json.RawMessage(`"{\"a\":1 <"`)}}},
		{"empty result", storedEvent{Kind: "o", Result: &storedResult{}}},
		{"result", storedEvent{Kind: "d", Desk: "d", RequestID: "r", Result: &storedResult{Text: "Placed \"BUY\" 50 @ 24,512.50\n\ttag\\x", IsError: true, Picture: "p.png", Held: true}}},
		{"result of flags only", storedEvent{Kind: "o", Result: &storedResult{IsError: true, Held: true}}},
		{"result of picture only", storedEvent{Kind: "o", Result: &storedResult{Picture: "a.png", Held: true}}},
		{"text and picture", storedEvent{Kind: "m", Text: "a\x00b\x1fc\x7f\b\f\r", Picture: "x"}},
		{"invalid UTF-8 and separators", storedEvent{Kind: "m", Text: "\xff\xfe ok \xe2\x80 \u2028 \u00e9 \U0001F600 \xed\xa0\x80"}},
		{"grant", storedEvent{Kind: "o", Grant: grant}},
		{"earlier encoding", storedEvent{Kind: "o", Hold: "place_order c1 10:30", CallID: "c1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendStoredEvent(nil, &tt.se)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(tt.se)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func FuzzAppendStoredEventIsEncodingJSON(f *testing.F) {
	f.Add("u", "main", int64(1795942800000), "trig", "req", "call_1", "place_order", []byte(`{"symbol":"NIFTY"}`), "text", "pic", true, false, true)
	f.Add("\u2028", "<d>&", int64(-5), "", "", "", "", []byte(" [1 , \"<\u2029>\" ] "), "\xff\x00\"\\", "", false, true, false)
	f.Fuzz(func(t *testing.T, kind, desk string, ms int64, trigger, request, callID, name string, args []byte, text, picture string, isErr, held, ofRequest bool) {
		se := storedEvent{Kind: deskbot.EventKind(kind), Desk: desk, Time: ms, TriggerID: trigger, RequestID: request, Text: text, Picture: picture, TriggerOfRequest: ofRequest}
		if name != "" {
			se.Call = &storedCall{ID: callID, Name: name}
			if json.Valid(args) {
				se.Call.Arguments = args
			}
		}
		if isErr || held || text != "" {
			se.Result = &storedResult{Text: text, IsError: isErr, Picture: picture, Held: held}
		}
		got, err := appendStoredEvent(nil, &se)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(se)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
}

// The trigger's and the result's encoders must write what encoding/json
// writes, byte for byte, as the event's: the desk's inbox and the request
// are read with encoding/json.
func TestAppendTriggerAndResultAreEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 6, 18, 58, 1, 123456789, time.UTC)
	for _, tr := range []deskbot.Trigger{
		{},
		{ID: "a531770b", Desk: "main", Kind: deskbot.TriggerPermission, Text: "The user allowed place_order.\nIt was run:\nclosed 2 positions", RequestID: "47c1e738", CreatedAt: at},
		{ID: "x", Desk: "<d>&", Kind: "k\u2028", Text: "\xff\x00\"\\ \u2029 \U0001F600", From: "Asha (101)", CreatedAt: at.Truncate(time.Second)},
		{Desk: "d", CreatedAt: at.In(deskbot.IST)},
		{Desk: "far", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		got, gotErr := appendTrigger(nil, &tr)
		want, wantErr := json.Marshal(tr)
		if (gotErr != nil) != (wantErr != nil) || gotErr == nil && string(got) != string(want) {
			t.Errorf("trigger %+v:\ngot  %s, %v\nwant %s, %v", tr, got, gotErr, want, wantErr)
		}
	}
	for _, r := range []deskbot.ToolResult{
		{},
		{Text: "closed 2 positions"},
		{Text: "Placed \"BUY\" <50> & \u2028\xff", IsError: true, Picture: "p.png", Held: true, Limit: true},
		{Picture: "a.png", Limit: true},
	} {
		got := appendToolResult(nil, &r)
		if want, _ := json.Marshal(r); string(got) != string(want) {
			t.Errorf("result %+v:\ngot  %s\nwant %s", r, got, want)
		}
	}
}

func FuzzAppendTriggerAndResultAreEncodingJSON(f *testing.F) {
	f.Add("id", "main", "permission", "text", "from", "req", int64(1795942800123), true, false, true, false)
	f.Add("\u2028", "<d>&", "", "\xff\x00\"\\", "", "", int64(-62135596800001), false, true, false, true)
	f.Fuzz(func(t *testing.T, id, desk, kind, text, from, request string, ms int64, isErr, held, limit, ist bool) {
		at := time.UnixMilli(ms).UTC()
		if ist {
			at = at.In(deskbot.IST)
		}
		tr := deskbot.Trigger{ID: id, Desk: desk, Kind: deskbot.TriggerKind(kind), Text: text, From: from, RequestID: request, CreatedAt: at}
		got, gotErr := appendTrigger(nil, &tr)
		wantTr, wantErr := json.Marshal(tr)
		if (gotErr != nil) != (wantErr != nil) || gotErr == nil && string(got) != string(wantTr) {
			t.Errorf("trigger:\ngot  %q, %v\nwant %q, %v", got, gotErr, wantTr, wantErr)
		}
		r := deskbot.ToolResult{Text: text, IsError: isErr, Picture: from, Held: held, Limit: limit}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendToolResult(nil, &r); string(got) != string(want) {
			t.Errorf("result:\ngot  %q\nwant %q", got, want)
		}
	})
}

// A field added to deskbot.Trigger, deskbot.ToolResult or the stored event
// must be written by its hand encoder too: each type is filled field by
// field, every exported field set, and the encoders must still write what
// encoding/json writes. A field of a kind fill cannot set fails here, to
// be taught to it.
func TestHandEncodersKnowEveryField(t *testing.T) {
	var tr deskbot.Trigger
	fill(t, reflect.ValueOf(&tr).Elem())
	got, err := appendTrigger(nil, &tr)
	if want, _ := json.Marshal(tr); err != nil || string(got) != string(want) {
		t.Errorf("a full trigger:\ngot  %s, %v\nwant %s (a field appendTrigger does not write?)", got, err, want)
	}
	var se storedEvent
	fill(t, reflect.ValueOf(&se).Elem())
	got, err = appendStoredEvent(nil, &se)
	if want := deskbottest.MustJSON(t, se); err != nil || string(got) != want {
		t.Errorf("a full stored event:\ngot  %s, %v\nwant %s (a field appendStoredEvent does not write?)", got, err, want)
	}
	var r deskbot.ToolResult
	fill(t, reflect.ValueOf(&r).Elem())
	if got, want := appendToolResult(nil, &r), deskbottest.MustJSON(t, r); string(got) != want {
		t.Errorf("a full result:\ngot  %s\nwant %s (a field appendToolResult does not write?)", got, want)
	}
}

// fill sets every exported field of the struct v to a value that is not
// its zero (a pointer to a struct: a new one, filled).
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Date(2026, 12, 6, 22, 1, 2, 3, time.UTC)))
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			f.SetBytes([]byte(`{"a":1}`))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			f.Set(reflect.New(f.Type().Elem()))
			fill(t, f.Elem())
		case f.Kind() == reflect.String:
			f.SetString("v-" + sf.Name)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.CanInt():
			f.SetInt(7)
		case f.CanFloat():
			f.SetFloat(1.5)
		default:
			t.Fatalf("fill: field %s of %s is a %s, which fill cannot set yet", sf.Name, v.Type(), f.Type())
		}
	}
}
