//go:build !js

package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

func (f *fixture) token(t *testing.T, id string) (string, int64) {
	t.Helper()
	resp, err := http.Post(f.hs.URL+"/api/token", "application/json", strings.NewReader(`{"clientId":"`+id+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Token     string
		ExpiresAt int64
		Error     string
	}
	json.NewDecoder(resp.Body).Decode(&v)
	if resp.StatusCode != 200 || v.Token == "" {
		t.Fatalf("token: %d %+v", resp.StatusCode, v)
	}
	return v.Token, v.ExpiresAt
}

func TestAuthRequiredServesNothingBeforeAValidTicket(t *testing.T) {
	var logs logBuf
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true, AuthTimeout: 300 * time.Millisecond})
	f.srv.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tok, exp := f.token(t, "page-1")
	p := f.dial()
	p.silentFor(250 * time.Millisecond) // no ping before the ticket
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	a := p.next(protocol.TypeAuthenticated, time.Second)
	if a.ExpiresAt != exp {
		t.Fatalf("authenticated %+v, want expiresAt %d", a, exp)
	}
	p.next(protocol.TypePing, time.Second)
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	p.next(protocol.TypeSubscribed, time.Second)

	// Anything else first, or nothing at all: 4003.
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	if code := q.closeCode(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("no ticket: closed with %d", code)
	}
	r := f.dial()
	if code := r.closeCode(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("silent client: closed with %d", code)
	}
	if strings.Contains(logs.String(), tok) || strings.Contains(logs.String(), strings.SplitN(tok, ".", 2)[1]) {
		t.Fatal("a ticket reached the logs")
	}
}

func TestTicketsAreCheckedAndExpireMidConnection(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, IssueTickets: true, TicketLife: 400 * time.Millisecond})
	tok, _ := f.token(t, "page-2")
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	p.next(protocol.TypeAuthenticated, time.Second)
	start := time.Now()
	if code := p.closeCode(2 * time.Second); code != protocol.CloseTokenExpired {
		t.Fatalf("at expiry: closed with %d", code)
	}
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Fatalf("closed %v after auth, ticket lived 400 ms", d)
	}
	// The same ticket again: expired.
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	if code := q.closeCode(2 * time.Second); code != protocol.CloseTokenExpired {
		t.Fatalf("expired ticket: %d", code)
	}
	// A forged one: forbidden.
	forged := tok[:len(tok)-4] + "AAAA"
	r := f.dial()
	r.send(protocol.Message{Type: protocol.TypeAuth, Token: forged})
	if code := r.closeCode(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("forged ticket: %d", code)
	}
	// Optional mode serves a client without a ticket as before.
	anon := f.dial()
	anon.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	anon.next(protocol.TypeSubscribed, time.Second)
}

func TestRevokeShortTokensEndSessionAndOverload(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, Demo: true}, DemoOptions{ShortTicketLife: 300 * time.Millisecond, OverloadRetryAfter: 1500 * time.Millisecond})
	authed := func(id string) *peer {
		tok, _ := f.token(t, id)
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
		p.next(protocol.TypeAuthenticated, time.Second)
		return p
	}
	victim, other := authed("victim"), authed("other")
	f.set("revoke", "victim")
	if code := victim.closeCode(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("revoked: %d", code)
	}
	tok, _ := f.token(t, "victim")
	again := f.dial()
	again.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	if code := again.closeCode(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("revoked, new ticket: %d", code)
	}
	// Short tokens: a ticket issued long ago is past its short life now.
	f.set("shortTokens", true)
	if code := other.closeCode(2 * time.Second); code != protocol.CloseTokenExpired {
		t.Fatalf("short tokens: %d", code)
	}
	f.set("shortTokens", false)
	// End session: 1000 for everyone.
	p := f.dial()
	f.waitOpen(1)
	f.set("endSession", true)
	if code := p.closeCode(2 * time.Second); code != websocket.StatusNormalClosure {
		t.Fatalf("end session: %d", code)
	}
	// Overload: a handshake is accepted and closed with 1013 and a retry-after.
	f.set("overload", true)
	ws, _, err := websocket.Dial(context.Background(), f.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ws.Read(context.Background())
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != protocol.CloseTryAgainLater {
		t.Fatalf("overload: %v", err)
	}
	if d, ok := protocol.ParseRetryAfter(ce.Reason); !ok || d != 1500*time.Millisecond {
		t.Fatalf("overload reason %q", ce.Reason)
	}
	if f.srv.Stats().Limits.Overloaded != 1 {
		t.Fatalf("limits %+v", f.srv.Stats().Limits)
	}
}

// A client id whose tickets keep being rejected is refused at once, without
// validating, past the threshold.
func TestLoopingClientIsBackstopped(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, Demo: true, RejectionThreshold: 3})
	f.set("revoke", "looper")
	tok, _ := f.token(t, "looper")
	for range 6 {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
		if code := p.closeCode(2 * time.Second); code != protocol.CloseForbidden {
			t.Fatalf("closed with %d", code)
		}
	}
	st := f.srv.Stats().Auth
	if st.Backstops != 2 || st.Rejected != 4 || st.RejectionsByID["looper"] != 4 {
		t.Fatalf("auth stats %+v", st)
	}
}

// A canary in a request's params, a bad frame and a ticket's client id
// reaches no log line and no /api/stats field but the demo's own ids.
func TestNoPeerTextInLogsOrStats(t *testing.T) {
	const canary = "CANARY-c4n4ry"
	var logs logBuf
	f := newFixture(t, &Options{Auth: AuthOptional})
	f.srv.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: canary, Params: []byte(`"` + canary + `"`)})
	p.next(protocol.TypeResponse, time.Second)
	p.sendRaw(`{"type":"` + canary + `"}`)
	p.next(protocol.TypeError, time.Second)
	p.ws.Close(4000, canary)
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeAuth, Token: canary + ".x"})
	q.closeCode(2 * time.Second)
	waitFor(t, 2*time.Second, "closed", func() bool { return f.srv.Stats().Open == 0 })
	body := getText(t, f.hs.URL+"/api/stats")
	if strings.Contains(body, canary) || strings.Contains(logs.String(), canary) {
		t.Fatalf("canary leaked:\nstats %s\nlogs %s", body, logs.String())
	}
}
