package store_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
	"github.com/redis/go-redis/v9"
)

// A request's hash names each field with one letter (the arguments'
// pieces after the first: "a1", "a2", ...), holds no JSON but the tool's
// result, and no value longer than Redis keeps in a listpack (64 bytes),
// so that Redis keeps the hash as one compact listpack.
func TestRequestEncodingIsCompact(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		mustCreate(t, s, "r1", base.Add(5*time.Minute))
		key := s.Key("req", "r1")
		h, err := s.Client().HGetAll(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		var args string
		for i := 0; ; i++ {
			name := "a"
			if i > 0 {
				name += strconv.Itoa(i)
			}
			piece, ok := h[name]
			if !ok {
				break
			}
			args += piece
		}
		for f, v := range h {
			if len(f) != 1 && strings.TrimLeft(f[1:], "0123456789") != "" || len(f) > 1 && f[0] != 'a' {
				t.Errorf("field %q: want a one-letter name", f)
			}
			if f[0] != 'a' && len(v) > 0 && (v[0] == '{' || v[0] == '[') {
				t.Errorf("field %q = %q: no JSON besides the arguments", f, v)
			}
			if len(v) > 64 {
				t.Errorf("field %q is %d bytes: the hash cannot be a listpack", f, len(v))
			}
		}
		if got, want := args, `{"desk": "alpha",  "qty": 12345678901234567890.123456789, "note": "<b>&"}`; got != want {
			t.Errorf("arguments stored as %q; want byte for byte %q", got, want)
		}
	})
}

// Redis itself keeps a held request's hash as a listpack: the test above
// checks what makes it one, this that Redis agrees.
func TestRequestIsAListpack(t *testing.T) {
	storetest.NeedsRealRedis(t, "OBJECT ENCODING (it has no encodings to report)")
	s := storetest.MustOpen(t)
	mustCreate(t, s, "r1", base.Add(5*time.Minute))
	got, err := s.Client().ObjectEncoding(t.Context(), s.Key("req", "r1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := "listpack"; got != want {
		t.Errorf("OBJECT ENCODING of a held request = %q; want %q", got, want)
	}
}

// Arguments of any length come back byte for byte, however they were cut
// (a piece may end inside a character: they are bytes).
func TestArgumentsOfAnyLengthReadBack(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		for _, n := range []int{0, 1, 63, 64, 65, 128, 129, 1000} {
			args := []byte{}
			if n > 0 {
				args = []byte(`{"n":"` + strings.Repeat("é", n) + `"}`) // 2 bytes a letter: pieces end mid-letter
			}
			id := fmt.Sprintf("len%d", n)
			r := newRequest(id, base.Add(5*time.Minute))
			r.Content.Arguments, r.TriggerID = args, "trigger-"+id
			if err := s.CreateRequest(t.Context(), r, deskbot.AuditEntry{Action: "hold", By: "system", At: base}, deskbot.Event{Kind: deskbot.EventUserRequest, Time: base}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Request(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Content.Arguments) != string(args) || got.TriggerID != r.TriggerID || got.Content.CallID != r.Content.CallID || got.Content.ToolName != r.Content.ToolName {
				t.Errorf("%d letters: read back %q, %q, %q, %q; want %q, %q, %q, %q", n, got.Content.Arguments, got.TriggerID, got.Content.CallID, got.Content.ToolName,
					args, r.TriggerID, r.Content.CallID, r.Content.ToolName)
			}
		}
	})
}

// A request written before the trigger and call id had fields of their own
// (five parts in "c", the arguments whole in "a") still reads.
func TestFivePartCreationRecordReads(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		const args = `{"desk":"alpha","note":"a long note that is well over sixty-four bytes in one value"}`
		err := s.Client().HSet(t.Context(), s.Key("req", "old5"), "s", "open", "e", base.Add(time.Minute).UnixMilli(), "w", "alpha",
			"c", "permission\x1fflatten_desk\x1ftrig-9\x1f"+strconv.FormatInt(base.UnixMilli(), 10)+"\x1fcall_9", "a", args).Err()
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Request(t.Context(), "old5")
		if err != nil {
			t.Fatal(err)
		}
		if r.Content.ToolName != "flatten_desk" || r.TriggerID != "trig-9" || r.Content.CallID != "call_9" || !r.CreatedAt.Equal(base) || string(r.Content.Arguments) != args {
			t.Errorf("old request read as %+v", r)
		}
	})
}

// The count of a desk's open requests follows every way in and out of
// open, so that settling a desk reads one number.
func TestOpenRequestCount(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, id := range []string{"a1", "a2", "a3"} {
			mustCreate(t, s, id, base.Add(5*time.Minute))
		}
		b := newRequest("b1", base.Add(5*time.Minute))
		b.Desk = "beta"
		if err := s.CreateRequest(ctx, b, deskbot.AuditEntry{Action: "hold", By: "system", At: base}, deskbot.Event{Kind: deskbot.EventUserRequest, Time: base}); err != nil {
			t.Fatal(err)
		}
		count := func(desk string) int64 {
			t.Helper()
			n, err := s.OpenRequestCount(ctx, desk)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if got := []int64{count("alpha"), count("beta"), count("gamma")}; !eq(got, []int64{3, 1, 0}) {
			t.Errorf("counts after creating = %v; want [3 1 0]", got)
		}
		mustTransition(t, s, "a1", allow(base))
		if _, out, _ := s.Transition(ctx, "a1", allow(base)); out != deskbot.WrongState {
			t.Fatalf("second allow = %v; want WrongState", out)
		}
		mustTransition(t, s, "a2", deskbot.Transition{Kind: deskbot.TransitionLapse, Now: base.Add(6 * time.Minute)})
		mustTransition(t, s, "b1", deskbot.Transition{Kind: deskbot.TransitionDeny, Now: base})
		if got := []int64{count("alpha"), count("beta")}; !eq(got, []int64{1, 0}) {
			t.Errorf("counts after allow, repeated allow, lapse, deny = %v; want [1 0]", got)
		}
	})
}

// A request written in the earlier encoding (JSON creation data, long
// field names) is read as it is and, once migrated, transitions as any.
func TestOldEncodingMigrated(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		exp := base.Add(5 * time.Minute)
		key := s.Key("req", "old1")
		data := `{"request_id":"old1","desk":"alpha","kind":"permission","tool_name":"flatten_desk","call_id":"c1","trigger_id":"t1","created_at":"` +
			base.Format(time.RFC3339Nano) + `","expires_at":"` + exp.Format(time.RFC3339Nano) + `"}`
		args := `{"qty": 24512.123456789012}`
		if err := s.Client().HSet(ctx, key, "data", data, "args", args, "state", "open", "expires_at_ms", strconv.FormatInt(exp.UnixMilli(), 10)).Err(); err != nil {
			t.Fatal(err)
		}
		s.Client().PExpireAt(ctx, key, exp.Add(time.Hour))
		s.Client().ZAdd(ctx, s.Key("open"), redisZ(exp, "old1"))

		got, err := s.Request(ctx, "old1")
		if err != nil || got.Desk != "alpha" || got.TriggerID != "t1" || string(got.Content.Arguments) != args || got.State != deskbot.StateOpen {
			t.Fatalf("old request read as %+v, %v", got, err)
		}
		n, err := s.MigrateRequests(ctx)
		if err != nil || n != 1 {
			t.Fatalf("MigrateRequests = %d, %v; want 1", n, err)
		}
		if n, _ := s.MigrateRequests(ctx); n != 0 {
			t.Errorf("second MigrateRequests rewrote %d; want 0", n)
		}
		if c, _ := s.OpenRequestCount(ctx, "alpha"); c != 1 {
			t.Errorf("open count after migration = %d; want 1", c)
		}
		if ttl := s.Client().PTTL(ctx, key).Val(); ttl <= 0 {
			t.Errorf("PTTL after migration = %v; want kept", ttl)
		}
		after := mustTransition(t, s, "old1", allow(base))
		if after.State != deskbot.StateRunning || string(after.Content.Arguments) != args || after.Content.CallID != "c1" || !after.CreatedAt.Equal(msTrunc(base)) {
			t.Errorf("migrated request after allow = %+v", after)
		}
	})
}

// The audit trail is trimmed to its retention as entries are appended.
func TestAuditTrimmedToRetention(t *testing.T) {
	s := storetest.MustOpenOptions(t, store.Options{AuditRetention: time.Millisecond})
	ctx := t.Context()
	const n = 1000
	for i := range n {
		if err := s.Audit(ctx, deskbot.AuditEntry{Action: "pause", Desk: "alpha", By: "system", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			time.Sleep(5 * time.Millisecond) // the first half is then older than the retention
		}
	}
	if got := s.Client().XLen(ctx, s.Key("audit")).Val(); got >= n {
		t.Errorf("audit length = %d after %d appends with a 1ms retention; want trimmed", got, n)
	}
	keep := storetest.MustOpen(t)
	for range 300 {
		keep.Audit(ctx, deskbot.AuditEntry{Action: "pause", Desk: "alpha", By: "system", At: time.Now()})
	}
	if got := keep.Client().XLen(ctx, keep.Key("audit")).Val(); got != 300 {
		t.Errorf("audit length with the default retention = %d; want all 300", got)
	}
}

// An audit entry is plain fields, the same seven every time (so the stream
// keeps their names once per block); a call's arguments in its detail are
// stored as they are, not quoted inside JSON. Entries in the earlier
// encoding (one JSON field) still read.
func TestAuditEntriesArePlainFields(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		at := base.Add(1500 * time.Millisecond)
		args := `{"price":24512.123456789012,"symbol":"INFY"}`
		if err := s.Audit(ctx, deskbot.AuditEntry{Action: "hold", Desk: "alpha", Tool: "place_order", RequestID: "r1", By: "desk alpha", At: at, Detail: args}); err != nil {
			t.Fatal(err)
		}
		old := `{"action":"grant","desk":"beta","by":"Asha (1)","at":"` + base.Format(time.RFC3339Nano) + `"}`
		if err := s.Client().XAdd(ctx, &redis.XAddArgs{Stream: s.Key("audit"), Values: []any{"data", old}}).Err(); err != nil {
			t.Fatal(err)
		}
		raw, err := s.Client().XRange(ctx, s.Key("audit"), "-", "+").Result()
		if err != nil || len(raw) != 2 {
			t.Fatalf("audit stream = %v, %v", raw, err)
		}
		if got := raw[0].Values["x"]; got != args {
			t.Errorf("detail stored as %q; want the arguments as they are, %q", got, args)
		}
		if len(raw[0].Values) != 8 {
			t.Errorf("fields = %v; want the seven and the previous hash", raw[0].Values)
		}
		trail, err := s.AuditTrail(ctx, 0)
		if err != nil || len(trail) != 2 {
			t.Fatalf("trail = %v, %v", trail, err)
		}
		want := deskbot.AuditEntry{Action: "hold", Desk: "alpha", Tool: "place_order", RequestID: "r1", By: "desk alpha", At: at, Detail: args}
		if got := trail[0]; got != want {
			t.Errorf("entry = %+v; want %+v", got, want)
		}
		if got := trail[1]; got.Action != "grant" || got.Desk != "beta" || !got.At.Equal(base) {
			t.Errorf("old entry = %+v", got)
		}
	})
}

// An event is kept with one-letter keys and read back as it was published
// (times to the ms); a model's arguments that are not JSON survive, and an
// event in the earlier encoding still reads.
func TestEventsCompactRoundTrip(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		evs := []deskbot.Event{
			{Kind: deskbot.EventToolCall, Desk: "alpha", Time: base, TriggerID: "t1", Call: &deskbot.ToolCall{ID: "c1", Name: "place_order", Arguments: []byte(`{"qty":24512.123456789012}`)}},
			{Kind: deskbot.EventToolResult, Desk: "alpha", Time: base.Add(time.Millisecond), TriggerID: "t1", Call: &deskbot.ToolCall{ID: "c2", Name: "bash", Arguments: []byte(`{"command": "ls`)}, Result: &deskbot.ToolResult{Text: "held", IsError: true, Held: true, Picture: "a.png"}},
			{Kind: deskbot.EventDeskMessage, Desk: "alpha", Time: base, Text: "hello", Picture: "p.png"},
		}
		for _, e := range evs {
			if err := s.Publish(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		old := `{"kind":"desk_state","desk":"beta","time":"` + base.Format(time.RFC3339Nano) + `","text":"idle"}`
		s.Client().XAdd(ctx, &redis.XAddArgs{Stream: s.Key("events"), Values: []any{"data", old}})
		raw, _ := s.Client().XRangeN(ctx, s.Key("events"), "-", "+", 1).Result()
		if data, _ := raw[0].Values["data"].(string); strings.Contains(data, `"kind"`) || strings.Contains(data, `"arguments"`) {
			t.Errorf("stored event %s: want one-letter keys", data)
		}
		got, err := s.ReadEvents(ctx, "g", "c", 10, 0)
		if err != nil || len(got) != 4 {
			t.Fatalf("read %d events, %v", len(got), err)
		}
		for i, want := range evs {
			g := got[i]
			g.ID = ""
			if fmt.Sprint(g) != fmt.Sprint(want) && !sameEvent(g, want) {
				t.Errorf("event %d = %+v; want %+v", i, g, want)
			}
		}
		if g := got[3]; g.Kind != deskbot.EventDeskState || g.Desk != "beta" || g.Text != "idle" || !g.Time.Equal(base) {
			t.Errorf("old event = %+v", g)
		}
	})
}

func sameEvent(a, b deskbot.Event) bool {
	if a.Kind != b.Kind || a.Desk != b.Desk || !a.Time.Equal(b.Time) || a.TriggerID != b.TriggerID || a.Text != b.Text || a.Picture != b.Picture {
		return false
	}
	if (a.Call == nil) != (b.Call == nil) || (a.Result == nil) != (b.Result == nil) {
		return false
	}
	if a.Call != nil && (a.Call.ID != b.Call.ID || a.Call.Name != b.Call.Name || string(a.Call.Arguments) != string(b.Call.Arguments)) {
		return false
	}
	return a.Result == nil || *a.Result == *b.Result
}

// Kinds are written as short codes; entries written with the kinds' names
// (one-letter keys, the encoding before the codes) still read.
func TestEventKindCodes(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustPublish(t, s, deskbot.Event{Kind: deskbot.EventDeskState, Desk: "alpha", Time: base, Text: "idle"})
		old := fmt.Sprintf(`{"k":"desk_message","d":"beta","m":%d,"x":"hi"}`, base.UnixMilli())
		if err := s.Client().XAdd(ctx, &redis.XAddArgs{Stream: s.Key("events"), Values: []any{"data", old}}).Err(); err != nil {
			t.Fatal(err)
		}
		raw, _ := s.Client().XRangeN(ctx, s.Key("events"), "-", "+", 1).Result()
		if data, _ := raw[0].Values["data"].(string); strings.Contains(data, "desk_state") {
			t.Errorf("stored event %s: want the kind's code", data)
		}
		got, err := s.ReadEvents(ctx, "g", "c", 10, 0)
		if err != nil || len(got) != 2 {
			t.Fatalf("read %d events, %v", len(got), err)
		}
		if g := got[0]; g.Kind != deskbot.EventDeskState || g.Text != "idle" {
			t.Errorf("event = %+v; want desk_state idle", g)
		}
		if g := got[1]; g.Kind != deskbot.EventDeskMessage || g.Desk != "beta" || g.Text != "hi" || !g.Time.Equal(base) {
			t.Errorf("event with the kind's name = %+v; want desk_message hi", g)
		}
	})
}

// The user_request event takes its trigger from its request; a held call's
// result event is kept as said (the store never reads words meant for a
// model). Both read back as published, the model's message byte for byte.
// A held result in the earlier encoding (the hold message's words only,
// "h") still reads, its call and trigger from its request.
func TestHeldEventsNameTheirRequest(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		exp := base.Add(5 * time.Minute)
		r := newRequest("0b9d6f1e-7a4c-4c2e-9a51-3f0f6a1c2b7d", exp)
		r.TriggerID = "trigger-1"
		r.Content.Arguments = []byte(`{"desk":"alpha","qty":12345678901234567890.123456789}`) // as an event keeps them
		call := deskbot.ToolCall{ID: r.Content.CallID, Name: r.Content.ToolName, Arguments: r.Content.Arguments}
		msg := words.HoldMessage(call.Name, r.ID, exp)
		published := []deskbot.Event{
			{Kind: deskbot.EventUserRequest, Desk: "alpha", Time: base, TriggerID: r.TriggerID, RequestID: r.ID},
			{Kind: deskbot.EventToolResult, Desk: "alpha", Time: base, TriggerID: r.TriggerID, Call: &call, Result: &deskbot.ToolResult{Text: msg, Held: true}},
			{Kind: deskbot.EventToolResult, Desk: "alpha", Time: base, TriggerID: r.TriggerID, Call: &call, Result: &deskbot.ToolResult{Text: msg + " ", Held: true}},
			{Kind: deskbot.EventToolResult, Desk: "alpha", Time: base, TriggerID: r.TriggerID, Call: &deskbot.ToolCall{ID: "c9", Name: "other_tool"}, Result: &deskbot.ToolResult{Text: msg, Held: true}},
			// A repeat of the held call, answered with its message under
			// its own id.
			{Kind: deskbot.EventToolResult, Desk: "alpha", Time: base, TriggerID: r.TriggerID, Call: &deskbot.ToolCall{ID: "c5", Name: call.Name, Arguments: call.Arguments}, Result: &deskbot.ToolResult{Text: msg, Held: true}},
		}
		if err := s.CreateRequest(ctx, r, deskbot.AuditEntry{Action: "hold", By: "system", At: base}, published[0]); err != nil {
			t.Fatal(err)
		}
		mustPublish(t, s, published[1:]...)
		old := fmt.Sprintf(`{"k":"o","d":"alpha","m":%d,"h":"%s %s %s","i":%q}`, base.UnixMilli(), call.Name, r.ID, words.Time(exp), call.ID)
		if err := s.Client().XAdd(ctx, &redis.XAddArgs{Stream: s.Key("events"), Values: []any{"data", old}}).Err(); err != nil {
			t.Fatal(err)
		}
		published = append(published, published[1])
		raw, err := s.Client().XRange(ctx, s.Key("events"), "-", "+").Result()
		if err != nil || len(raw) != 6 {
			t.Fatalf("events stream = %v, %v", raw, err)
		}
		data, _ := raw[0].Values["data"].(string)
		if strings.Contains(data, r.TriggerID) {
			t.Errorf("user_request stored as %s: repeats its trigger, which its request holds", data)
		}
		got, err := s.ReadEvents(ctx, "g", "c", 10, 0)
		if err != nil || len(got) != 6 {
			t.Fatalf("read %d events, %v", len(got), err)
		}
		for i, want := range published {
			g := got[i]
			if !sameEvent(g, want) || g.RequestID != want.RequestID {
				t.Errorf("event %d = %+v (call %+v, result %+v); want %+v (call %+v, result %+v)", i, g, g.Call, g.Result, want, want.Call, want.Result)
			}
		}
		if got[1].Request != nil {
			t.Errorf("the held result carries a request; want the event as published")
		}
		if got[1].Result.Text != msg {
			t.Errorf("held result text = %q; want byte for byte %q", got[1].Result.Text, msg)
		}

		// The request gone (its retention ended): the result still says
		// what the model was told, and which tool.
		if err := s.Client().Del(ctx, s.Key("req", r.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		again, err := s.ReadEvents(ctx, "g2", "c", 10, 0)
		if err != nil || len(again) != 6 {
			t.Fatalf("read %d events, %v", len(again), err)
		}
		for _, i := range []int{1, 5} {
			if g := again[i]; g.Call == nil || g.Call.ID != call.ID || g.Call.Name != call.Name || g.Result == nil || g.Result.Text != msg || !g.Result.Held {
				t.Errorf("held result %d without its request = %+v; want the call's id, the tool and the message", i, g)
			}
		}
	})
}

// The call memory keeps a held call whole, its hold message as said, and
// gives it back byte for byte (a replayed turn matches repeats by the
// call). Entries in the earlier encodings (the completed call's own JSON;
// a held call by its hold message's request id and clock, "w") still read.
func TestCallMemoryKeepsHeldCallsWhole(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		exp := base.Add(5 * time.Minute)
		held := deskbot.CompletedCall{
			Call:   deskbot.ToolCall{ID: "c1", Name: "place_order", Arguments: []byte(`{"symbol":"INFY","qty":24512.123456789012}`)},
			Result: deskbot.ToolResult{Text: words.HoldMessage("place_order", "0b9d6f1e-7a4c-4c2e-9a51-3f0f6a1c2b7d", exp), Held: true},
		}
		calls := []deskbot.CompletedCall{
			held,
			{Call: deskbot.ToolCall{ID: "c2", Name: "bash", Arguments: []byte(`{"command": "ls`)}, Result: deskbot.ToolResult{Text: "a.txt", IsError: true, Picture: "p.png"}},
			{Call: deskbot.ToolCall{ID: "c3", Name: "get_positions", Arguments: []byte(`{}`)}, Result: deskbot.ToolResult{Text: held.Result.Text}}, // not held: kept as said
		}
		for _, c := range calls {
			if err := s.RememberCall(ctx, "t1", c); err != nil {
				t.Fatal(err)
			}
		}
		old := `{"call":{"call_id":"c4","name":"bash","arguments":{"command":"pwd"}},"result":{"text":"/home"}}`
		oldHeld := `{"c":{"i":"c1","n":"place_order","a":{"symbol":"INFY","qty":24512.123456789012}},"o":{"h":true},"w":"0b9d6f1e-7a4c-4c2e-9a51-3f0f6a1c2b7d ` + words.Time(exp) + `"}`
		if err := s.Client().RPush(ctx, s.Key("calls", "t1"), old, oldHeld).Err(); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, held)
		got, err := s.CompletedCalls(ctx, "t1")
		if err != nil || len(got) != 5 {
			t.Fatalf("CompletedCalls = %d, %v", len(got), err)
		}
		for i, want := range calls {
			if i == 3 {
				continue // the earlier encoding, below
			}
			if g := got[i]; fmt.Sprint(g.Call.ID, g.Call.Name, string(g.Call.Arguments), g.Result) != fmt.Sprint(want.Call.ID, want.Call.Name, string(want.Call.Arguments), want.Result) {
				t.Errorf("call %d = %+v; want %+v", i, g, want)
			}
		}
		if g := got[3]; g.Call.ID != "c4" || string(g.Call.Arguments) != `{"command":"pwd"}` || g.Result.Text != "/home" {
			t.Errorf("call in the earlier encoding = %+v", g)
		}
	})
}

// Every connection's buffers are small, and pipelines share the one pool:
// go-redis's default dedicated pipeline pool added up to 10 connections
// with 128 KiB buffers each, and Redis keeps buffers for every connection.
func TestClientKeepsFewSmallConnections(t *testing.T) {
	s := storetest.MustOpen(t)
	c, ok := s.Client().(*redis.Client)
	if !ok {
		t.Skipf("client is %T, not a single server's", s.Client())
	}
	o := c.Options()
	if got, want := []int{o.ReadBufferSize, o.WriteBufferSize}, []int{16 << 10, 16 << 10}; !eq(got, want) {
		t.Errorf("read and write buffers = %v; want %v", got, want)
	}
	if o.PipelinePoolSize >= 0 {
		t.Errorf("PipelinePoolSize = %d; want none (pipelines on the main pool)", o.PipelinePoolSize)
	}
}
