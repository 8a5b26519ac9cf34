//go:build !js

package server

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// cookieIdentify is an Identify hook reading the application's own session
// cookie (the sessions of auth_tickets_test.go): no cookie names no one; an
// unknown session is an error whose text the client must not see.
func cookieIdentify(r *http.Request) (Identity, error) {
	c, err := r.Cookie("session")
	if err != nil {
		return Identity{}, nil
	}
	if c.Value == "s-banned" {
		return Identity{}, &Error{Code: "banned", Message: "this account is banned"}
	}
	if c.Value == "s-panic" {
		panic("the hook broke")
	}
	id, ok := sessions[c.Value]
	if !ok {
		return Identity{}, errors.New("unknown session (this text must not reach the client)")
	}
	return id, nil
}

// dialWith is dial with request headers (a cookie).
func (f *fixture) dialWith(header http.Header) *peer {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws, _, err := websocket.Dial(ctx, f.url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		cancel()
		f.t.Fatalf("dial: %v", err)
	}
	p := &peer{t: f.t, ws: ws, frames: make(chan protocol.Message, 1024), closed: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				p.closed <- err
				return
			}
			if m, err := protocol.Decode(b); err == nil {
				p.frames <- m
			}
		}
	}()
	f.t.Cleanup(func() {
		ws.CloseNow()
		cancel()
		<-p.closed
	})
	return p
}

func cookie(v string) http.Header { return http.Header{"Cookie": {"session=" + v}} }

// Identify reads the upgrade request's cookie: the connection it names is
// served at once with that Identity (Auth is required by default, yet no
// token is sent), Authorize sees it and the welcome names the user. A
// connection without the cookie still needs a token (a ticket, as a page of
// another origin brings); a hook's error closes with 4003 and a bounded
// reason, its mistake with 1011; a token naming another user than the
// cookie's is refused.
func TestIdentifyNamesAWebSocketFromItsCookie(t *testing.T) {
	var mu sync.Mutex
	var seen []Identity
	var logs logBuf
	f := newFixture(t, &Options{Identify: cookieIdentify, Authorize: func(_ context.Context, id Identity, a Action) error {
		mu.Lock()
		seen = append(seen, id)
		mu.Unlock()
		return nil
	}})
	f.srv.log = logs.logger()
	if f.srv.opts.Auth != AuthRequired {
		t.Fatalf("Auth %q with Identify, want required by default", f.srv.opts.Auth)
	}

	p := f.dialWith(cookie("s-alice"))
	if w := p.next(protocol.TypeWelcome, 2*time.Second); w.User != "alice" || w.Session == "" {
		t.Fatalf("welcome %+v, want user alice", w)
	}
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	p.next(protocol.TypeSubscribed, 2*time.Second)
	mu.Lock()
	got := append([]Identity(nil), seen...)
	mu.Unlock()
	if len(got) != 1 || !reflect.DeepEqual(got[0], sessions["s-alice"]) {
		t.Fatalf("Authorize saw %+v, want alice's identity from the cookie", got)
	}
	// A token naming the same user is taken (it only adds an expiry).
	same, _, err := f.srv.IssueTicket(Identity{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	p2 := f.dialWith(cookie("s-alice"))
	p2.next(protocol.TypeWelcome, 2*time.Second)
	p2.send(protocol.Message{Type: protocol.TypeAuth, Token: same})
	p2.next(protocol.TypeAuthenticated, 2*time.Second)

	// No cookie: a ticket still works (cross-origin pages), and without
	// one nothing is served.
	bob, _, err := f.srv.IssueTicket(Identity{User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	q := f.dialWith(nil)
	q.send(protocol.Message{Type: protocol.TypeAuth, Token: bob})
	if w := q.next(protocol.TypeWelcome, 2*time.Second); w.User != "bob" {
		t.Fatalf("welcome with a ticket: %+v", w)
	}
	anon := f.dialWith(nil)
	anon.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	if ce := anon.closeErr(2 * time.Second); ce.Code != protocol.CloseForbidden || ce.Reason != "auth required" {
		t.Fatalf("no cookie, no ticket: %v", ce)
	}
	// alice's cookie with bob's ticket: refused.
	mixed := f.dialWith(cookie("s-alice"))
	mixed.send(protocol.Message{Type: protocol.TypeAuth, Token: bob})
	if ce := mixed.closeErr(2 * time.Second); ce.Code != protocol.CloseForbidden {
		t.Fatalf("alice's cookie with bob's ticket: %v", ce)
	}

	for _, c := range []struct {
		cookie string
		code   websocket.StatusCode
		reason string
	}{
		{"s-banned", protocol.CloseForbidden, "this account is banned"},
		{"s-nobody", protocol.CloseForbidden, "forbidden"},
		{"s-huge", protocol.CloseInternalError, "internal error"},
		{"s-panic", protocol.CloseInternalError, "internal error"},
	} {
		ce := f.dialWith(cookie(c.cookie)).closeErr(2 * time.Second)
		if ce.Code != c.code || ce.Reason != c.reason {
			t.Errorf("cookie %q: closed %v, want %d %q", c.cookie, ce, c.code, c.reason)
		}
	}
	if l := logs.lines("ERROR", "Identify returned an invalid identity"); len(l) != 1 || strings.Contains(l[0], "xxxx") {
		t.Errorf("the invalid identity's log: %q", l)
	}
	if strings.Contains(logs.String(), "must not reach") {
		t.Error("the hook's error text reached the log")
	}

	// Revoked: the cookie no longer gets in, and the open connection ends.
	if err := f.srv.Revoke(context.Background(), "alice", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ce := p.closeErr(2 * time.Second); ce.Code != protocol.CloseForbidden {
		t.Fatalf("alice's connection after Revoke: %v", ce)
	}
	if ce := f.dialWith(cookie("s-alice")).closeErr(2 * time.Second); ce.Code != protocol.CloseForbidden || ce.Reason != "forbidden" {
		t.Fatalf("alice's cookie after Revoke: %v", ce)
	}
}

// The HTTP transport's session request is identified the same way: the
// cookie names the session's user without a token, a refusal is 403 with
// the 4003 close a WebSocket would get, and no cookie and no token is
// refused as before.
func TestIdentifyNamesAnHTTPSessionFromItsCookie(t *testing.T) {
	f := newFixture(t, &Options{Identify: cookieIdentify})
	a := f.post(t, "/session", "application/json", "{}", "Cookie", "session=s-alice")
	if a.status != http.StatusOK || len(a.Session) != 22 {
		t.Fatalf("session with alice's cookie: %d %+v", a.status, a)
	}
	p := &httpPeer{t: t, f: f, session: a.Session, frames: make(chan protocol.Message, 64),
		events: make(chan sseEvent, 64), closed: make(chan closeInfo, 4)}
	p.stream("")
	t.Cleanup(p.closeStream)
	if w := p.next(protocol.TypeWelcome, 2*time.Second); w.User != "alice" {
		t.Fatalf("welcome %+v, want user alice", w)
	}
	p.send(http.StatusNoContent, protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	p.next(protocol.TypeSubscribed, 2*time.Second)

	for _, c := range []struct {
		cookie string
		status int
		code   int
		reason string
	}{
		{"s-banned", http.StatusForbidden, protocol.CloseForbidden, "this account is banned"},
		{"s-nobody", http.StatusForbidden, protocol.CloseForbidden, "forbidden"},
		{"s-huge", http.StatusInternalServerError, protocol.CloseInternalError, "internal error"},
		{"", http.StatusForbidden, protocol.CloseForbidden, "auth required"},
	} {
		var hdr []string
		if c.cookie != "" {
			hdr = []string{"Cookie", "session=" + c.cookie}
		}
		a := f.post(t, "/session", "application/json", "{}", hdr...)
		if a.status != c.status || a.Session != "" || a.Close == nil || a.Close.Code != c.code || a.Close.Reason != c.reason {
			t.Errorf("cookie %q: %d %+v %+v, want %d and close %d %q", c.cookie, a.status, a, a.Close, c.status, c.code, c.reason)
		}
	}
}

// With Auth off, Identify names whom it can and the rest are anonymous;
// Auth off stays refused with a token hook.
func TestIdentifyWithAuthOff(t *testing.T) {
	f := newFixture(t, &Options{Identify: cookieIdentify, Auth: AuthOff})
	if w := f.dialWith(cookie("s-bob")).next(protocol.TypeWelcome, 2*time.Second); w.User != "bob" {
		t.Fatalf("welcome %+v, want bob", w)
	}
	if w := f.dialWith(nil).next(protocol.TypeWelcome, 2*time.Second); w.User != "" {
		t.Fatalf("welcome %+v, want anonymous", w)
	}
	if _, err := New(&Options{Identify: cookieIdentify, Authenticate: cookieAuth, Auth: AuthOff, Logger: discard()}); err == nil {
		t.Fatal("Auth off with Authenticate and Identify: New took it")
	}
}
