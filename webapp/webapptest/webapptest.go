// Package webapptest helps tests sign in to the desks page as Telegram
// would sign a Mini App's initData.
package webapptest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SignInitData builds initData for user as Telegram would sign it: the
// fields given plus auth_date and hash, under HMAC-SHA256 keyed with
// HMAC("WebAppData", token). The service never signs; tests do.
func SignInitData(token string, userJSON string, authDate time.Time, extra url.Values) string {
	k := hmac.New(sha256.New, []byte("WebAppData"))
	k.Write([]byte(token))
	key := k.Sum(nil)
	vals := url.Values{}
	for k, vs := range extra {
		vals[k] = append([]string(nil), vs...)
	}
	vals.Set("user", userJSON)
	vals.Set("auth_date", strconv.FormatInt(authDate.Unix(), 10))
	lines := make([]string, 0, len(vals))
	for k := range vals {
		lines = append(lines, k+"="+vals.Get(k))
	}
	sort.Strings(lines)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.Join(lines, "\n")))
	vals.Set("hash", hex.EncodeToString(m.Sum(nil)))
	return vals.Encode()
}
