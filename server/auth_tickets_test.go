//go:build !js

package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// largestIdentity is an Identity at every bound at once.
func largestIdentity() Identity {
	id := Identity{User: strings.Repeat("u", MaxIdentityBytes), Tenant: strings.Repeat("t", MaxIdentityBytes), Claims: map[string]string{}}
	for i := range MaxClaims { // MaxClaimsBytes in all: 16 x (64 + 64)
		id.Claims[strings.Repeat(string(rune('a'+i)), 64)] = strings.Repeat("v", MaxClaimsBytes/MaxClaims-64)
	}
	if err := id.Validate(); err != nil {
		panic(err)
	}
	return id
}

// A ticket carries its Identity whole, and the largest one fits in an auth
// frame's token.
func TestTicketsCarryTheirIdentity(t *testing.T) {
	a := &authority{key: []byte(strings.Repeat("k", 32))}
	now := time.UnixMilli(1_700_000_000_000)
	for _, id := range []Identity{
		{User: "alice"},
		{User: "bob", Tenant: "acme", Claims: map[string]string{"role": "admin", "plan": ""}},
		{User: "ünïcødé 用户", Tenant: "t/ω"},
		largestIdentity(),
	} {
		tok, exp, err := a.issue(id, now, time.Minute)
		if err != nil {
			t.Fatalf("issue %q: %v", id.User, err)
		}
		if len(tok) > protocol.MaxTokenBytes {
			t.Fatalf("a ticket of %d bytes: past MaxTokenBytes", len(tok))
		}
		if _, err := protocol.Decode([]byte(`{"type":"auth","token":"` + tok + `"}`)); err != nil {
			t.Fatalf("the auth frame with it does not decode: %v", err)
		}
		got, err := a.parse(tok)
		if err != nil {
			t.Fatalf("parse %q: %v", id.User, err)
		}
		want := ticket{identity: id, issued: now, expires: exp}
		if len(id.Claims) == 0 {
			want.identity.Claims = nil
		}
		if !reflect.DeepEqual(got, want) || !exp.Equal(now.Add(time.Minute)) {
			t.Fatalf("parse: %+v, want %+v", got, want)
		}
	}
	for _, id := range []Identity{{}, {User: strings.Repeat("u", MaxIdentityBytes+1)}, {User: "x", Tenant: "\xff"}} {
		if _, _, err := a.issue(id, now, time.Minute); !errors.Is(err, ErrBadIdentity) {
			t.Errorf("issue %+v: %v, want ErrBadIdentity", id, err)
		}
	}
}

// A ticket whose signature is not ours, or whose signed payload breaks a
// bound, does not verify; so does the old id|iat|exp format.
func TestTicketsThatDoNotVerify(t *testing.T) {
	a := &authority{key: []byte(strings.Repeat("k", 32))}
	now := time.Now()
	tok, _, err := a.issue(Identity{User: "alice", Claims: map[string]string{"r": "x"}}, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p64, s64, _ := strings.Cut(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p64)
	signed := func(b []byte) string {
		return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(a.mac(b))
	}
	flipped := append([]byte(nil), payload...)
	flipped[20] ^= 1
	old := []byte("alice|1|99999999999999")
	header := func() []byte {
		b := []byte{ticketVersion}
		b = binary.BigEndian.AppendUint64(b, uint64(now.UnixMilli()))
		return binary.BigEndian.AppendUint64(b, uint64(now.Add(time.Hour).UnixMilli()))
	}
	withUser := func(user string, rest ...byte) []byte {
		b := header()
		b = binary.AppendUvarint(b, uint64(len(user)))
		b = append(b, user...)
		return append(b, rest...)
	}
	for name, bad := range map[string]string{
		"another key":     (&authority{key: []byte(strings.Repeat("x", 32))}).mustIssue(t, "alice"),
		"payload changed": base64.RawURLEncoding.EncodeToString(flipped) + "." + s64,
		"no signature":    p64,
		"not base64":      "!!!." + s64,
		"old format":      signed(old),
		"trailing byte":   signed(append(append([]byte(nil), payload...), 0)),
		"truncated":       signed(payload[:len(payload)-1]),
		"no user":         signed(withUser("", 0, 0)),
		"user too long":   signed(withUser(strings.Repeat("u", MaxIdentityBytes+1), 0, 0)),
		"length past end": signed(withUser("bob", 100, 'x', 0)),
		"huge length":     signed(append(header(), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)),
		"repeated claim":  signed(withUser("bob", 0, 2, 1, 'k', 1, 'v', 1, 'k', 1, 'w')),
		"too many claims": signed(withUser("bob", 0, MaxClaims+1)),
		"invalid utf-8":   signed(withUser("b\xffb", 0, 0)),
		"empty":           "",
		"just a dot":      ".",
	} {
		if _, err := a.parse(bad); !errors.Is(err, errBadTicket) {
			t.Errorf("%s: %v, want errBadTicket", name, err)
		}
	}
}

func (a *authority) mustIssue(t *testing.T, user string) string {
	t.Helper()
	tok, _, err := a.issue(Identity{User: user}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// postToken POSTs body to the fixture's ticket endpoint with the given
// cookie (none if empty) and returns the status and the decoded answer.
func (f *fixture) postToken(cookie, body string) (int, map[string]any) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.hs.URL+"/api/token", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "session", Value: cookie})
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		f.t.Fatalf("the ticket endpoint's %d answer is not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, v
}

// sessions is an application's login state: a cookie value to who it is.
var sessions = map[string]Identity{
	"s-alice": {User: "alice", Tenant: "acme", Claims: map[string]string{"role": "admin"}},
	"s-bob":   {User: "bob", Tenant: "globex"},
	"s-anon":  {},
	"s-huge":  {User: strings.Repeat("x", MaxIdentityBytes+1)},
}

// cookieAuth is an Authenticate hook reading the application's cookie.
func cookieAuth(r *http.Request) (Identity, error) {
	c, err := r.Cookie("session")
	if err != nil {
		return Identity{}, errors.New("no session cookie (this text must not reach the caller)")
	}
	if c.Value == "s-banned" {
		return Identity{}, &Error{Code: "banned", Message: "this account is banned"}
	}
	if c.Value == "s-panic" {
		panic("the hook broke")
	}
	id, ok := sessions[c.Value]
	if !ok {
		return Identity{}, errors.New("unknown session")
	}
	return id, nil
}

// Who the user is once could not reach wsready. The Authenticate hook
// reads the application's own cookie; the ticket carries that Identity
// (whatever client id the body names); the connection that sends it has
// it, as Authorize sees, and the welcome names the user. A hook's error is
// a 401 that issues nothing; its mistake a 500.
func TestAuthenticateHookIdentityReachesTheConnection(t *testing.T) {
	var mu sync.Mutex
	var seen []Identity
	var logs logBuf
	f := newFixture(t, &Options{Authenticate: cookieAuth, Authorize: func(_ context.Context, id Identity, a Action) error {
		mu.Lock()
		seen = append(seen, id)
		mu.Unlock()
		return nil
	}})
	f.srv.log = logs.logger()
	if f.srv.opts.Auth != AuthRequired {
		t.Fatalf("Auth %q with an Authenticate hook, want required by default", f.srv.opts.Auth)
	}
	code, v := f.postToken("s-alice", `{"clientId":"mallory"}`)
	tok, _ := v["token"].(string)
	if code != http.StatusOK || tok == "" {
		t.Fatalf("POST with alice's cookie: %d %v", code, v)
	}
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	if w := p.next(protocol.TypeWelcome, time.Second); w.User != "alice" || w.Session == "" {
		t.Fatalf("welcome %+v, want user alice", w)
	}
	p.next(protocol.TypeAuthenticated, time.Second)
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	p.next(protocol.TypeSubscribed, time.Second)
	mu.Lock()
	got := append([]Identity(nil), seen...)
	mu.Unlock()
	if len(got) != 1 || !reflect.DeepEqual(got[0], sessions["s-alice"]) {
		t.Fatalf("Authorize saw %+v, want alice's identity from the cookie", got)
	}

	for _, c := range []struct {
		cookie string
		code   int
		want   map[string]any
	}{
		{"", 401, map[string]any{"error": "not authenticated"}},
		{"s-nobody", 401, map[string]any{"error": "not authenticated"}},
		{"s-banned", 401, map[string]any{"error": "this account is banned", "code": "banned"}},
		{"s-anon", 500, map[string]any{"error": "internal error"}},
		{"s-huge", 500, map[string]any{"error": "internal error"}},
		{"s-panic", 500, map[string]any{"error": "internal error"}},
	} {
		code, v := f.postToken(c.cookie, `{}`)
		if code != c.code || !reflect.DeepEqual(v, c.want) {
			t.Errorf("cookie %q: %d %v, want %d %v", c.cookie, code, v, c.code, c.want)
		}
	}
	if n := len(logs.lines("ERROR", "Authenticate returned an invalid identity")); n != 2 {
		t.Errorf("%d log lines for the invalid identities, want 2:\n%s", n, logs.String())
	}
	if len(logs.lines("ERROR", "Authenticate panicked")) != 1 || strings.Contains(logs.String(), "the hook broke") || strings.Contains(logs.String(), "must not reach") {
		t.Errorf("logs:\n%s", logs.String())
	}
	// Required by default: a connection without a ticket is refused.
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	if code := q.closeCode(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("no ticket: closed with %d", code)
	}
}

// Without the hook the demo's posted client id is the User; the welcome
// names it. With Auth off explicitly, New refuses the hook.
func TestDemoTicketsNameThePostedClientID(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthRequired, Demo: true})
	tok, _ := f.token(t, "page-7")
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	if w := p.next(protocol.TypeWelcome, time.Second); w.User != "page-7" {
		t.Fatalf("welcome %+v, want user page-7", w)
	}
	// Anonymous connections (auth off) get a welcome without a user.
	g := newFixture(t, nil)
	if w := g.dial().next(protocol.TypeWelcome, time.Second); w.User != "" || w.Session == "" {
		t.Fatalf("anonymous welcome %+v", w)
	}
	if _, err := New(&Options{Auth: AuthOff, Authenticate: cookieAuth}); err == nil || !strings.Contains(err.Error(), "Options.Auth") {
		t.Fatalf("Auth off with Authenticate: %v, want refused", err)
	}
}

// The backstop for looping clients counts a verified ticket's rejections
// against its user, the one the application named, not a posted id.
func TestRejectionsCountAgainstTheTicketsUser(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, Authenticate: cookieAuth, Demo: true, RejectionThreshold: 2})
	_, v := f.postToken("s-bob", `{"clientId":"someone-else"}`)
	tok := v["token"].(string)
	f.set("revoke", "bob")
	for range 4 {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
		if code := p.closeCode(2 * time.Second); code != protocol.CloseForbidden {
			t.Fatalf("revoked bob: closed with %d", code)
		}
	}
	st := f.srv.Stats().Auth
	if st.RejectionsByID["bob"] != 3 || st.Backstops != 1 || len(st.RejectionsByID) != 1 {
		t.Fatalf("auth stats %+v: want bob's 3 rejections and 1 backstop", st)
	}
}

// An Identity whose user or tenant holds a control character is refused,
// whoever makes it (the ticket endpoint's Authenticate, Identify): a NUL
// or a newline in a name forges another name or a log line.
func TestIdentityRefusesControlCharacters(t *testing.T) {
	for _, id := range []Identity{{User: "al\x00ice"}, {User: "bob\nINFO forged"}, {User: "carol", Tenant: "t\x7f"}, {User: "dave\u0085"}} {
		if err := id.Validate(); !errors.Is(err, ErrBadIdentity) {
			t.Errorf("Validate(%q, %q) = %v, want ErrBadIdentity", id.User, id.Tenant, err)
		}
	}
	if err := (Identity{User: "ünïcødé 用户", Tenant: "t/ω"}).Validate(); err != nil {
		t.Errorf("a name in any script: %v", err)
	}
}
