//go:build !js

package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SessionCookie is the name of the app's login cookie.
const SessionCookie = "app_session"

// sessions are the app's own login cookies: "user.expiry.mac", the mac an
// HMAC-SHA256 of "user.expiry" under the session key. Stateless: a cookie
// is good until its expiry (logout clears it in the browser; a real app
// would also keep a server-side list to end a stolen one early).
type sessions struct {
	key  []byte
	life time.Duration
}

func (s sessions) mac(payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// cookie is a new session for user. HttpOnly: the page's scripts never see
// it; SameSite=Strict: a cross-site request never carries it.
func (s sessions) cookie(user string, now time.Time, secure bool) *http.Cookie {
	exp := now.Add(s.life)
	payload := user + "." + strconv.FormatInt(exp.Unix(), 10)
	return &http.Cookie{
		Name: SessionCookie, Value: payload + "." + s.mac(payload),
		Path: "/", Expires: exp, HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode,
	}
}

// clear is the cookie that ends a session in the browser.
func (s sessions) clear(secure bool) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// user is the signed-in user of r, if its cookie is ours, unexpired, and
// names one of Users.
func (s sessions) user(r *http.Request, now time.Time) (string, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return "", false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return "", false
	}
	payload, mac := c.Value[:i], c.Value[i+1:]
	if !hmac.Equal([]byte(mac), []byte(s.mac(payload))) {
		return "", false
	}
	user, expS, ok := strings.Cut(payload, ".")
	if !ok {
		return "", false
	}
	exp, err := strconv.ParseInt(expS, 10, 64)
	if err != nil || now.Unix() >= exp || !slices.Contains(Users, user) {
		return "", false
	}
	return user, true
}
