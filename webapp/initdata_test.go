package webapp

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/webapp/webapptest"

	"github.com/deskbot/deskbot"
)

const testToken = "123456:TEST-token-never-shown"

// TestValidateInitData plays Telegram and the hostile side: only data
// signed with this bot's token, recent, naming a person, signs anyone in.
func TestValidateInitData(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	asha := `{"id":101,"first_name":"Asha"}`
	good := webapptest.SignInitData(testToken, asha, now.Add(-10*time.Minute), url.Values{"query_id": {"AAE1"}})
	tamper := func(s, from, to string) string {
		return strings.Replace(s, url.QueryEscape(from), url.QueryEscape(to), 1)
	}
	cases := []struct {
		name, data string
		wantID     int64
		wantMsg    string
	}{
		{"valid", good, 101, ""},
		{"empty", "", 0, "carries no sign-in"},
		{"signed with another bot's token", webapptest.SignInitData("999:other", asha, now, nil), 0, "not valid"},
		{"forged for an approver's id", tamper(good, `"id":101`, `"id":102`), 0, "not valid"},
		{"auth_date moved forward", strings.Replace(good, "auth_date=", "auth_date=1", 1), 0, "not valid"},
		{"hash removed", strings.Split(good, "&hash=")[0], 0, "not valid"},
		{"field given twice", good + "&user=" + url.QueryEscape(`{"id":102}`), 0, "not valid"},
		{"expired (replayed old initData)", webapptest.SignInitData(testToken, asha, now.Add(-2*time.Hour), nil), 0, "expired"},
		{"from the future", webapptest.SignInitData(testToken, asha, now.Add(time.Hour), nil), 0, "expired"},
		{"no user", webapptest.SignInitData(testToken, `{}`, now, nil), 0, "not valid"},
		{"too long", good + "&pad=" + strings.Repeat("x", maxInitData), 0, "not valid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := ValidateInitData(c.data, testToken, time.Hour, now)
			if c.wantMsg == "" {
				if err != nil || v.ID != c.wantID {
					t.Fatalf("got %+v, %v; want id %d", v, err, c.wantID)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", v)
			}
			if got := deskbot.ErrorCode(err); got != deskbot.EUNAUTHORIZED {
				t.Errorf("code %q, want %q", got, deskbot.EUNAUTHORIZED)
			}
			if !strings.Contains(deskbot.ErrorMessage(err), c.wantMsg) {
				t.Errorf("message %q lacks %q", deskbot.ErrorMessage(err), c.wantMsg)
			}
		})
	}
}

// TestValidateInitDataIndependentVector checks the algorithm against
// initData signed outside Go (Python's hmac, following the Bot API's
// text): the data-check-string sorted, the key HMAC("WebAppData", token).
func TestValidateInitDataIndependentVector(t *testing.T) {
	const data = "auth_date=1733040000&query_id=AAHdF6IQAAAAAN0XohDhrOrc&user=%7B%22id%22%3A279058397%2C%22first_name%22%3A%22Vladislav%22%2C%22username%22%3A%22vdkfrost%22%7D&hash=fc99a38662cef59b5f86c2b1567d8833a9f8e62944da7ff6128d3be060d9ad18"
	v, err := ValidateInitData(data, testToken, time.Hour, time.Unix(1733040000, 0).Add(time.Minute))
	if err != nil || v.ID != 279058397 || v.Username != "vdkfrost" {
		t.Fatalf("got %+v, %v", v, err)
	}
	if _, err := ValidateInitData(data, testToken+"x", time.Hour, time.Unix(1733040000, 0)); err == nil {
		t.Fatal("accepted under another token")
	}
}

// TestValidateInitDataFieldOrder: the order of fields on the wire does
// not matter, only the sorted data-check-string.
func TestValidateInitDataFieldOrder(t *testing.T) {
	now := time.Unix(1733040000, 0)
	// Fields in a different order on the wire than sorted: the hash is
	// over the sorted data-check-string, so order on the wire is irrelevant.
	signed := webapptest.SignInitData(testToken, `{"id":7,"first_name":"Zed"}`, now, url.Values{"chat_instance": {"-42"}, "auth_x": {"a=b&c"}})
	parts := strings.Split(signed, "&")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	v, err := ValidateInitData(strings.Join(parts, "&"), testToken, time.Hour, now)
	if err != nil || v.ID != 7 || v.Person().Name != "Zed" {
		t.Fatalf("got %+v, %v", v, err)
	}
}
