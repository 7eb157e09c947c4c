package bot

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
)

const reqID = "0b6f1c9e-7d2a-4c55-9a43-2f1e8d7c6b5a"

func TestParseCallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw         string
		action, arg string
		wantErr     bool
	}{
		{raw: "\fa1|" + reqID, action: ActAllowOnce, arg: reqID},
		{raw: "aa|" + reqID, action: ActAlwaysAllow, arg: reqID},
		{raw: "\fdn|" + reqID, action: ActDeny, arg: reqID},
		{raw: "\fsk|" + reqID, action: ActSkipReason, arg: reqID},
		{raw: "\ffl|alpha", action: ActFlattenAsk, arg: "alpha"},
		{raw: "\ffc|all", action: ActFlattenConfirm, arg: "all"},
		{raw: "\ffx|", action: ActCancel, arg: ""},
		{raw: "\ffx|alpha", action: ActCancel, arg: "alpha"},
		{raw: "\frv|alpha/place_order", action: ActRevoke, arg: "alpha/place_order"},
		{raw: "\fli|kite", action: ActLogin, arg: "kite"},
		{raw: "\fli|", wantErr: true},        // no broker
		{raw: "\fli|zerodha", wantErr: true}, // not a broker deskbot logs in to
		{raw: "", wantErr: true},
		{raw: "\f", wantErr: true},
		{raw: "a1", wantErr: true},                                                              // no separator
		{raw: "\fzz|" + reqID, wantErr: true},                                                   // unknown action
		{raw: "\fa1|" + strings.ToUpper(reqID), wantErr: true},                                  // not the canonical spelling
		{raw: "\fa1|{" + reqID + "}", wantErr: true},                                            // braces
		{raw: "\fa1|not-a-uuid", wantErr: true},                                                 // not a UUID
		{raw: "\fa1|" + reqID + "|x", wantErr: true},                                            // extra field
		{raw: "\f\fa1|" + reqID, wantErr: true},                                                 // doubled prefix
		{raw: "\ffl|Alpha", wantErr: true},                                                      // not a desk name
		{raw: "\ffl|../etc", wantErr: true},                                                     // path
		{raw: "\ffl|", wantErr: true},                                                           // missing desk
		{raw: "\frv|all/place_order", wantErr: true},                                            // no desk is named all
		{raw: "\frv|alpha", wantErr: true},                                                      // no tool
		{raw: "\frv|alpha/", wantErr: true},                                                     // empty tool
		{raw: "\frv|alpha/a/b", wantErr: true},                                                  // slash in tool
		{raw: "\frv|" + strings.Repeat("d", 32) + "/" + strings.Repeat("t", 28), wantErr: true}, // 65 bytes
	}
	for _, tt := range tests {
		action, arg, err := ParseCallback(tt.raw)
		if tt.wantErr {
			if deskbot.ErrorCode(err) != deskbot.EINVALID {
				t.Errorf("ParseCallback(%q) = %q, %q, %v; want EINVALID", tt.raw, action, arg, err)
			}
			continue
		}
		if err != nil || action != tt.action || arg != tt.arg {
			t.Errorf("ParseCallback(%q) = %q, %q, %v; want %q, %q", tt.raw, action, arg, err, tt.action, tt.arg)
		}
	}
}

func TestNewButtonFitsAndRoundTrips(t *testing.T) {
	t.Parallel()
	longest := strings.Repeat("d", 32) + "/" + strings.Repeat("t", 27) // 64 bytes on the wire
	for _, tc := range []struct{ action, arg string }{
		{ActAllowOnce, reqID}, {ActRevoke, longest}, {ActFlattenConfirm, "all"},
	} {
		b, err := NewButton("x", tc.action, tc.arg)
		if err != nil {
			t.Fatalf("NewButton(%q, %q): %v", tc.action, tc.arg, err)
		}
		wire := CallbackData(b.Unique, b.Data)
		if len(wire) > MaxCallbackData {
			t.Errorf("%q is %d bytes, over %d", wire, len(wire), MaxCallbackData)
		}
		if a, arg, err := ParseCallback(wire); err != nil || a != tc.action || arg != tc.arg {
			t.Errorf("round trip of %q = %q, %q, %v", wire, a, arg, err)
		}
	}
	if _, err := NewButton("x", ActDeny, "nope"); err == nil {
		t.Error("NewButton accepted a request id that is not a UUID")
	}
}

func FuzzParseCallback(f *testing.F) {
	for _, s := range []string{"\fa1|" + reqID, "fl|all", "\frv|alpha/bash", "\ffx|", "", "|", "\f|x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		action, arg, err := ParseCallback(raw)
		if err != nil {
			if deskbot.ErrorCode(err) != deskbot.EINVALID {
				t.Fatalf("error code %q, want EINVALID", deskbot.ErrorCode(err))
			}
			return
		}
		// Whatever is accepted is something the bot could have built, and
		// building it again gives back the same action and argument.
		b, err := NewButton("x", action, arg)
		if err != nil {
			t.Fatalf("accepted %q but NewButton refuses it: %v", raw, err)
		}
		wire := CallbackData(b.Unique, b.Data)
		if len(wire) > MaxCallbackData {
			t.Fatalf("accepted %q, %d bytes on the wire", raw, len(wire))
		}
		a2, arg2, err := ParseCallback(wire)
		if err != nil || a2 != action || arg2 != arg {
			t.Fatalf("round trip %q -> %q, %q, %v", wire, a2, arg2, err)
		}
	})
}
