//go:build !js

package server

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/protocol"
)

// A refresh with a fresh ticket of the same user moves the connection's
// expiry: no 4001 at the old one, one at the new one, and nothing
// reconnects in between (the same socket keeps its subscription).
func TestRefreshMovesTheExpiry(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true, TicketLife: 600 * time.Millisecond})
	tok, exp := f.token(t, "page-1")
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	p.next(protocol.TypeAuthenticated, time.Second)
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	p.next(protocol.TypeSubscribed, time.Second)

	time.Sleep(300 * time.Millisecond) // half the ticket's life
	fresh, newExp := f.token(t, "page-1")
	if newExp <= exp {
		t.Fatalf("the fresh ticket expires at %d, the first at %d", newExp, exp)
	}
	p.refresh(fresh)
	if a := p.next(protocol.TypeAuthenticated, time.Second); a.ExpiresAt != newExp {
		t.Fatalf("refresh answered %+v, want expiresAt %d", a, newExp)
	}
	// Past the first ticket's expiry (by 150 ms) the connection still
	// carries the feed.
	time.Sleep(time.Until(time.UnixMilli(exp)) + 150*time.Millisecond)
	select {
	case err := <-p.closed:
		p.closed <- err
		t.Fatalf("closed at the old expiry: %v", err)
	default:
	}
	p.next(protocol.TypeUpdate, time.Second)
	// And at the new one it ends 4001, as before.
	if code := p.closeCode(2 * time.Second); code != protocol.CloseTokenExpired {
		t.Fatalf("at the new expiry: closed with %d", code)
	}
	if d := time.Until(time.UnixMilli(newExp)); d > 50*time.Millisecond {
		t.Fatalf("closed %v before the new expiry", d)
	}
}

// A refresh naming another user, or the same user in another tenant, ends
// the connection with 4003; so does a forged one (as a first token would).
func TestRefreshOfAnotherIdentityCloses4003(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true})
	ticket := func(user, tenant string) string {
		tok, _, err := f.srv.IssueTicket(Identity{User: user, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"another user", ticket("bob", "acme"), "the token names another user"},
		{"another tenant", ticket("alice", "globex"), "the token names another user"},
		{"forged", ticket("alice", "acme")[:20] + "AAAA", "bad ticket"},
	} {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: ticket("alice", "acme")})
		p.next(protocol.TypeAuthenticated, time.Second)
		p.refresh(tc.token)
		code, reason := p.closeOf(2 * time.Second)
		if code != protocol.CloseForbidden || reason != tc.reason {
			t.Fatalf("%s: closed %d %q, want %d %q", tc.name, code, reason, protocol.CloseForbidden, tc.reason)
		}
	}
	// A refused refresh is not a handshake's outcome: the three
	// handshakes were accepted, none failed its auth.
	m := getText(t, f.hs.URL+"/metrics")
	if !strings.Contains(m, `wsready_handshakes_total{outcome="accepted",transport="ws"} 3`) || !strings.Contains(m, `wsready_handshakes_total{outcome="auth_failed",transport="ws"} 0`) {
		t.Fatalf("handshake metrics after three refused refreshes:\n%s", grepLines(m, "wsready_handshakes_total"))
	}
}

// refresh sends a refresh frame, spelled out so that this file's first
// tests read the same against a server that predates the frame.
func (p *peer) refresh(tok string) { p.sendRaw(`{"type":"refresh","token":"` + tok + `"}`) }

// A refresh flood is refused with refresh_refused after the burst, before
// any token is checked; the connection stays, and so does its expiry. A
// connection with no token to refresh is refused the same way.
func TestRefreshFloodIsRefused(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, IssueTickets: true})
	tok, _ := f.token(t, "page-1")
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	p.next(protocol.TypeAuthenticated, time.Second)
	for range protocol.RefreshBurst {
		p.send(protocol.Message{Type: protocol.TypeRefresh, Token: tok})
		p.next(protocol.TypeAuthenticated, time.Second)
	}
	p.send(protocol.Message{Type: protocol.TypeRefresh, Token: "garbage"}) // never verified: no 4003
	e := p.next(protocol.TypeError, time.Second)
	if e.Error.Code != protocol.ErrRefreshRefused || e.Error.RetryAfterMs != protocol.RefreshEvery {
		t.Fatalf("flood answered %+v", e.Error)
	}
	p.send(protocol.Message{Type: protocol.TypeProbe, ID: 9})
	if a := p.next(protocol.TypeProbeAck, time.Second); a.ID != 9 {
		t.Fatalf("probe answered %+v", a)
	}

	anon := f.dial()
	anon.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	anon.next(protocol.TypeSubscribed, time.Second)
	anon.send(protocol.Message{Type: protocol.TypeRefresh, Token: tok})
	if e := anon.next(protocol.TypeError, time.Second); e.Error.Code != protocol.ErrRefreshRefused || e.Error.RetryAfterMs != 0 {
		t.Fatalf("anonymous refresh answered %+v", e.Error)
	}
	anon.next(protocol.TypeUpdate, time.Second) // still served
	if st := f.srv.Stats(); st.Auth.Refreshed != protocol.RefreshBurst || st.Auth.RefreshRefused != 2 {
		t.Fatalf("auth stats %+v: want %d refreshed, 2 refused", st.Auth, protocol.RefreshBurst)
	}
}

// Over the HTTP transport a refresh is a POSTed frame like any other: the
// expiry moves and the session's stream carries the answer.
func TestRefreshOverHTTP(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true, TicketLife: 500 * time.Millisecond})
	tok, exp := f.token(t, "page-1")
	p := &httpPeer{t: t, f: f, session: f.newSession(t, `{"token":"`+tok+`"}`), frames: make(chan protocol.Message, 64), events: make(chan sseEvent, 64), closed: make(chan closeInfo, 4)}
	p.stream("")
	t.Cleanup(p.closeStream)
	p.next(protocol.TypeAuthenticated, time.Second)
	serverTimersRun(200 * time.Millisecond) // the fresh ticket expires later than the first
	fresh, newExp := f.token(t, "page-1")
	p.send(204, protocol.Message{Type: protocol.TypeRefresh, Token: fresh})
	if a := p.next(protocol.TypeAuthenticated, time.Second); a.ExpiresAt != newExp {
		t.Fatalf("refresh answered %+v, want %d", a, newExp)
	}
	serverTimersRun(time.Until(time.UnixMilli(exp)) + 150*time.Millisecond) // past the old expiry, on the server's expiry timer
	select {
	case ci := <-p.closed:
		t.Fatalf("closed at the old expiry: %+v", ci)
	default:
	}
	if ci := p.closeEvent(2 * time.Second); ci.Code != protocol.CloseTokenExpired {
		t.Fatalf("at the new expiry: %+v", ci)
	}
}

// A JWT is refreshed on the same path: a fresh JWT of the same sub and
// tenant claim moves the expiry to its exp; one of the same sub in
// another tenant closes 4003.
func TestRefreshWithJWTs(t *testing.T) {
	f := newFixture(t, &Options{JWT: &JWTOptions{HS256Secret: hsSecret, TenantClaim: "org", Issuer: "idp", Audience: "wsready"}})
	p, a, ce := f.authWith(signJWT(t, jwt.SigningMethodHS256, hsSecret, "", claimsFor("alice", time.Minute)))
	if a.Type != protocol.TypeAuthenticated {
		t.Fatalf("first JWT refused: %v", ce)
	}
	later := claimsFor("alice", time.Hour)
	p.refresh(signJWT(t, jwt.SigningMethodHS256, hsSecret, "", later))
	if r := p.next(protocol.TypeAuthenticated, time.Second); r.ExpiresAt != later["exp"].(int64)*1000 || r.ExpiresAt <= a.ExpiresAt {
		t.Fatalf("refresh answered expiresAt %d, want the new exp %d (the first was %d)", r.ExpiresAt, later["exp"].(int64)*1000, a.ExpiresAt)
	}
	other := claimsFor("alice", time.Hour)
	other["org"] = "globex"
	p.refresh(signJWT(t, jwt.SigningMethodHS256, hsSecret, "", other))
	if code, reason := p.closeOf(2 * time.Second); code != protocol.CloseForbidden || reason != "the token names another user" {
		t.Fatalf("a JWT of another tenant: closed %d %q", code, reason)
	}
}
