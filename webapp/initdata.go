package webapp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// InitDataHeader carries the Mini App's initData on every request the page
// makes. A header, never the URL: a query string lands in proxies' and
// servers' logs, and initData is a bearer credential until it expires.
const InitDataHeader = "X-Telegram-Init-Data"

// maxInitData bounds what is parsed at all: Telegram's initData is well
// under 2 KB; anything much longer is not from Telegram.
const maxInitData = 8 << 10

// futureSkew is how far ahead of our clock an auth_date may be (clocks
// differ a little); further ahead it is forged or the clock is wrong.
const futureSkew = time.Minute

// Viewer is the person an initData signs in.
type Viewer struct {
	ID        int64
	FirstName string
	Username  string
	AuthDate  time.Time
}

// Person names the viewer as the chat does ("Allowed once by Asha").
func (v Viewer) Person() deskbot.Person {
	return deskbot.PersonOf(v.ID, v.FirstName, v.Username)
}

// secretKey is the key the Bot API derives from the bot token for Mini
// Apps: HMAC-SHA256 of the token with the key "WebAppData".
func secretKey(token string) []byte {
	m := hmac.New(sha256.New, []byte("WebAppData"))
	m.Write([]byte(token))
	return m.Sum(nil)
}

// ValidateInitData checks initData as the Bot API documents it: every field
// but hash, sorted by key, as key=value lines joined by "\n" (the
// data-check-string), signed with HMAC-SHA256 under secretKey(token); the
// hash compared in constant time; auth_date no older than maxAge and not
// in the future. A field given twice is refused: which copy counts would
// be the parser's choice, not Telegram's. The errors are EUNAUTHORIZED
// with words for the person, never the reason in detail.
func ValidateInitData(initData, token string, maxAge time.Duration, now time.Time) (Viewer, error) {
	if initData == "" {
		return Viewer{}, deskbot.Errorf(deskbot.EUNAUTHORIZED, "Open this page from Telegram: it carries no sign-in.")
	}
	bad := deskbot.Errorf(deskbot.EUNAUTHORIZED, "This sign-in is not valid. Close the page and open it again from Telegram.")
	if len(initData) > maxInitData {
		return Viewer{}, bad
	}
	vals, err := url.ParseQuery(initData)
	if err != nil {
		return Viewer{}, bad
	}
	var hash string
	lines := make([]string, 0, len(vals))
	for k, vs := range vals {
		if len(vs) != 1 {
			return Viewer{}, bad
		}
		if k == "hash" {
			hash = vs[0]
			continue
		}
		lines = append(lines, k+"="+vs[0])
	}
	sort.Strings(lines)
	got, err := hex.DecodeString(hash)
	if err != nil || len(got) != sha256.Size {
		return Viewer{}, bad
	}
	m := hmac.New(sha256.New, secretKey(token))
	m.Write([]byte(strings.Join(lines, "\n")))
	if !hmac.Equal(got, m.Sum(nil)) {
		return Viewer{}, bad
	}
	// Signed by Telegram from here on; what is left is whether it is
	// recent and names a person.
	sec, err := strconv.ParseInt(vals.Get("auth_date"), 10, 64)
	if err != nil || sec <= 0 {
		return Viewer{}, bad
	}
	at := time.Unix(sec, 0)
	if now.Sub(at) > maxAge || at.Sub(now) > futureSkew {
		return Viewer{}, deskbot.Errorf(deskbot.EUNAUTHORIZED, "Your sign-in has expired. Close the desks page and open it again from Telegram.")
	}
	var u struct {
		ID        int64  `json:"id"`
		FirstName string `json:"first_name"`
		Username  string `json:"username"`
	}
	if json.Unmarshal([]byte(vals.Get("user")), &u) != nil || u.ID <= 0 {
		return Viewer{}, bad
	}
	return Viewer{ID: u.ID, FirstName: u.FirstName, Username: u.Username, AuthDate: at}, nil
}
