//go:build !js

package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/protocol"
)

// dialFrom dials f from the loopback address ip (any of 127.0.0.0/8 on
// Linux), so the server sees another client address than dial's.
func (f *fixture) dialFrom(ip string) *peer {
	f.t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	ctx, cancel := context.WithCancel(context.Background())
	ws, _, err := websocket.Dial(ctx, f.url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		cancel()
		f.t.Fatalf("dial from %s: %v", ip, err)
	}
	p := &peer{t: f.t, ws: ws, frames: make(chan protocol.Message, 64), closed: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				p.closed <- err
				return
			}
			if m, err := protocol.Decode(b); err == nil {
				select {
				case p.frames <- m:
				default: // nobody reads this many: drop
				}
			}
		}
	}()
	f.t.Cleanup(func() {
		ws.CloseNow()
		cancel()
		<-p.closed
		tr.CloseIdleConnections()
	})
	return p
}

// authFrom sends tok from ip: the authenticated frame, or the close.
func (f *fixture) authFrom(ip, tok string) (protocol.Message, websocket.CloseError) {
	f.t.Helper()
	p := f.dialFrom(ip)
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	deadline := time.After(2 * time.Second)
	for {
		select {
		case m := <-p.frames:
			if m.Type == protocol.TypeAuthenticated {
				return m, websocket.CloseError{}
			}
		case err := <-p.closed:
			p.closed <- err // for Cleanup
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				f.t.Fatalf("closed without a close frame: %v", err)
			}
			return protocol.Message{}, ce
		case <-deadline:
			f.t.Fatal("neither authenticated nor closed within 2s")
		}
	}
}

// The victim's genuine expired JWT, replayed 25 times from another
// address, got the victim's fresh, valid token refused with 4003 "too
// many rejected tickets" for the whole window. Whoever replays a stale
// token now backstops only themselves: the owner's fresh token gets in
// from any address (the replayer's too, since the backstop only ever
// turns a refusal into a final one), and the owner's own expired token
// from its own address still gets 4001 (refresh), not 4003 (stop).
func TestReplayedExpiredTokenDoesNotLockOutItsOwner(t *testing.T) {
	f := newFixture(t, &Options{Demo: true, JWT: &JWTOptions{HS256Secret: hsSecret}})
	hs := func(c jwt.MapClaims) string { return signJWT(t, jwt.SigningMethodHS256, hsSecret, "", c) }
	stale := hs(claimsFor("victim", -time.Minute))
	const attacker, owner = "127.0.0.2", "127.0.0.1"
	const replays = 25 // past the default RejectionThreshold (20)
	var last websocket.CloseError
	for i := range replays {
		a, ce := f.authFrom(attacker, stale)
		if a.Type == protocol.TypeAuthenticated {
			t.Fatalf("replay %d: an expired token was authenticated", i)
		}
		last = ce
	}
	if last.Code != protocol.CloseForbidden || last.Reason != "too many rejected tickets" {
		t.Fatalf("the replaying address is not backstopped: last close %d %q", last.Code, last.Reason)
	}
	if a, ce := f.authFrom(owner, hs(claimsFor("victim", time.Minute))); a.Type != protocol.TypeAuthenticated {
		t.Fatalf("the owner's fresh token from another address: close %d %q, want authenticated", ce.Code, ce.Reason)
	}
	if a, ce := f.authFrom(attacker, hs(claimsFor("victim", time.Minute))); a.Type != protocol.TypeAuthenticated {
		t.Fatalf("a fresh token from the replaying address: close %d %q, want authenticated", ce.Code, ce.Reason)
	}
	if _, ce := f.authFrom(owner, stale); ce.Code != protocol.CloseTokenExpired {
		t.Fatalf("the owner's own expired token: close %d %q, want 4001", ce.Code, ce.Reason)
	}
	st := f.srv.Stats().Auth
	if st.RejectionsByID["victim"] != 22 || st.TrackedIDs != 2 || st.Backstops != replays-21 {
		t.Fatalf("auth stats %+v: want 22 rejections of victim at 2 addresses, %d backstopped", st, replays-21)
	}
}
