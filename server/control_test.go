//go:build !js

package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// closeOf waits for p's close and returns its code and reason.
func (p *peer) closeOf(d time.Duration) (websocket.StatusCode, string) {
	p.t.Helper()
	select {
	case err := <-p.closed:
		p.closed <- err // for Cleanup
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Reason
		}
		return -1, err.Error()
	case <-time.After(d):
		p.t.Fatalf("connection not closed within %v", d)
		return 0, ""
	}
}

// Disconnect closes every connection of the user with 4003 and the
// application's reason (cut to 123 bytes, on a character), and no other
// connection; a user id no identity can have is refused.
func TestDisconnectClosesTheUsersConnections(t *testing.T) {
	f := newFixture(t, presenceOpts(Options{}))
	a1, a2 := f.dialAs(t, "alice"), f.dialAs(t, "alice")
	bob, anon := f.dialAs(t, "bob"), f.dial()
	reason := "your account was suspended: " + strings.Repeat("é", 100)
	if err := f.srv.Disconnect(context.Background(), "alice", reason); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*peer{a1, a2} {
		code, got := p.closeOf(2 * time.Second)
		if code != protocol.CloseForbidden || len(got) > 123 || len(got) < 122 || !utf8.ValidString(got) || !strings.HasPrefix(reason, got) {
			t.Fatalf("alice closed with %d %q (%d bytes)", code, got, len(got))
		}
	}
	for _, p := range []*peer{bob, anon} {
		p.send(protocol.Message{Type: protocol.TypeProbe, ID: 1})
		p.next(protocol.TypeProbeAck, time.Second)
	}
	// She may come back at once: Disconnect is not Revoke.
	f.dialAs(t, "alice")
	if err := f.srv.Disconnect(context.Background(), "", "x"); !errors.Is(err, ErrBadIdentity) {
		t.Fatalf("Disconnect of no user: %v", err)
	}
	if err := f.srv.Disconnect(context.Background(), strings.Repeat("u", MaxIdentityBytes+1), "x"); !errors.Is(err, ErrBadIdentity) {
		t.Fatalf("Disconnect of a user id too long: %v", err)
	}
}

// Revoke closes the user's connections and refuses its tickets until d
// has passed; d <= 0 lifts it sooner.
func TestRevokeRefusesTheUsersTicketsForAWhile(t *testing.T) {
	clock := newTestClock() // revocations end by Options.Now
	f := newFixture(t, presenceOpts(Options{Now: clock.now}))
	p := f.dialAs(t, "mallory")
	tok, _ := f.token(t, "mallory")
	if err := f.srv.Revoke(context.Background(), "mallory", 400*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if code, reason := p.closeOf(2 * time.Second); code != protocol.CloseForbidden || reason != "forbidden" {
		t.Fatalf("revoked: closed with %d %q", code, reason)
	}
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	if code := q.closeCode(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("a revoked user's ticket: %d", code)
	}
	if st := f.srv.Stats(); st.Auth.Revoked != 1 {
		t.Fatalf("stats: %d revoked", st.Auth.Revoked)
	}
	clock.advance(500 * time.Millisecond)
	f.dialAs(t, "mallory") // its time is up
	if err := f.srv.Revoke(context.Background(), "mallory", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Revoke(context.Background(), "mallory", 0); err != nil {
		t.Fatal(err)
	}
	f.dialAs(t, "mallory") // lifted
	if st := f.srv.Stats(); st.Auth.Revoked != 0 {
		t.Fatalf("stats after the lift: %d revoked", st.Auth.Revoked)
	}
}

// The set of revoked users is bounded: one more past it is refused with
// ErrTooManyRevocations; an expired entry makes room.
func TestRevocationsAreBounded(t *testing.T) {
	var r revocationSet
	now := time.Now()
	for i := range maxRevocations {
		if err := r.add("u"+itoa64(int64(i)), now.Add(time.Duration(1+i%2)*time.Minute), now); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.add("one-more", now.Add(time.Minute), now); !errors.Is(err, ErrTooManyRevocations) {
		t.Fatalf("past the bound: %v", err)
	}
	if err := r.add("one-more", now.Add(time.Hour), now.Add(90*time.Second)); err != nil {
		t.Fatalf("with half of them expired: %v", err)
	}
	if n := r.count(now.Add(90 * time.Second)); n != maxRevocations/2+1 {
		t.Fatalf("%d in force", n)
	}
}

// Across nodes on one NATS: Disconnect on one node closes the user's
// connection on another; Revoke on one refuses the user's tickets on the
// others, a node that starts later included; the demo's Revoke switch
// takes the same path, and pressed again lifts it everywhere.
func TestDisconnectAndRevokeReachEveryNode(t *testing.T) {
	_, conn := sharedNATS(t)
	node := func() *fixture { return newFixture(t, presenceOpts(Options{NATS: conn()})) }
	a, b := node(), node()
	alice := b.dialAs(t, "alice")
	aliceHere := a.dialAs(t, "alice")
	if err := a.srv.Disconnect(context.Background(), "alice", "bye from the app"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*peer{alice, aliceHere} {
		if code, reason := p.closeOf(2 * time.Second); code != protocol.CloseForbidden || reason != "bye from the app" {
			t.Fatalf("alice: %d %q", code, reason)
		}
	}

	bob := b.dialAs(t, "bob")
	if err := a.srv.Revoke(context.Background(), "bob", time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, _ := bob.closeOf(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("bob on node b: %d", code)
	}
	refused := func(f *fixture, user string) bool {
		tok, _ := f.token(t, user)
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
		m, ok := p.maybe(protocol.TypeAuthenticated, time.Second)
		if ok && m.Type == protocol.TypeAuthenticated {
			p.ws.CloseNow()
			return false
		}
		return p.closeCode(time.Second) == protocol.CloseForbidden
	}
	if !refused(b, "bob") {
		t.Fatal("bob's ticket on node b after a Revoke on a")
	}
	c := node() // learns the revocation from the others' snapshots
	waitFor(t, 2*time.Second, "the new node to learn the revocation", func() bool { return c.srv.revoked("bob") })
	if !refused(c, "bob") {
		t.Fatal("bob's ticket on a node started after the Revoke")
	}

	carol := b.dialAs(t, "carol")
	a.set("revoke", "carol")
	if code, _ := carol.closeOf(2 * time.Second); code != protocol.CloseForbidden {
		t.Fatalf("the demo's Revoke on a, carol on b: %d", code)
	}
	if !b.demo.Faults()["revoke"] {
		t.Fatal("node b's Revoke switch does not show the revocation")
	}
	a.set("revoke", "")
	waitFor(t, 2*time.Second, "the lift on every node", func() bool {
		return !b.srv.revoked("carol") && !b.srv.revoked("bob") && !c.srv.revoked("bob")
	})
	b.dialAs(t, "carol")
}
