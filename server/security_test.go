//go:build !js

package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// closeErr waits for p's close and returns its code and reason.
func (p *peer) closeErr(d time.Duration) websocket.CloseError {
	p.t.Helper()
	select {
	case err := <-p.closed:
		p.closed <- err // for Cleanup
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			p.t.Fatalf("closed without a close frame: %v", err)
		}
		return ce
	case <-time.After(d):
		p.t.Fatalf("connection not closed within %v", d)
		return websocket.CloseError{}
	}
}

// forgedTicket is a well-formed ticket naming id, signed with a key that
// is not the server's: what anyone can make without the key.
func forgedTicket(id string, n int) string {
	key := []byte(strings.Repeat(strconv.Itoa(n%10), 32))
	tok, _, err := (&authority{key: key}).issue(Identity{User: id}, time.Now(), time.Hour)
	if err != nil {
		panic(err)
	}
	return tok
}

// 21 auth frames whose token names victim42, with any bad
// signature, made victim42's valid ticket get 4003 "too many rejected
// tickets" for 5 minutes. A ticket that does not verify is now counted
// against the address it came from, never the id it names: the victim's
// valid ticket is accepted, from the same address even, and the forger
// is the one backstopped.
func TestForgedTicketsDoNotLockOutTheClientTheyName(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, Demo: true})
	tok, _ := f.token(t, "victim42")
	const attempts = 25 // past the default thresholds (20)
	var last websocket.CloseError
	for i := range attempts {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: forgedTicket("victim42", i)})
		last = p.closeErr(2 * time.Second)
		if last.Code != protocol.CloseForbidden {
			t.Fatalf("forged ticket %d: closed with %d %q", i, last.Code, last.Reason)
		}
	}
	if last.Reason != "too many rejected tickets" {
		t.Fatalf("the forger's address is not backstopped: last close %q", last.Reason)
	}
	v := f.dial()
	v.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	if a, ok := v.maybe(protocol.TypeAuthenticated, 2*time.Second); !ok || a.ExpiresAt == 0 {
		t.Fatal("victim42's valid ticket was refused after forged tickets named it")
	}
	st := f.srv.Stats().Auth
	if st.RejectionsByID["victim42"] != 0 || st.TrackedIDs != 0 || st.TrackedAddrs != 1 || st.Accepted != 1 {
		t.Fatalf("auth stats %+v: forged tickets were counted against the id they name", st)
	}
	// More than the threshold (20) are rejected, then the backstop refuses.
	if st.Rejected != 21 || st.Backstops != attempts-21 {
		t.Fatalf("auth stats %+v: want 21 rejected and %d backstopped", st, attempts-21)
	}
}

// A client that loops on a broken ticket (not even a ticket) is still
// stopped: its address goes over BadTicketThreshold and the backstop
// refuses it, while a valid ticket from that address still gets in.
func TestLoopingGarbageTicketIsBackstoppedPerAddress(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, Demo: true, BadTicketThreshold: 3})
	var reasons []string
	for range 6 {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: "not-a-ticket"})
		ce := p.closeErr(2 * time.Second)
		if ce.Code != protocol.CloseForbidden {
			t.Fatalf("garbage ticket: closed with %d", ce.Code)
		}
		reasons = append(reasons, ce.Reason)
	}
	// More than the threshold (3) are rejected, then the backstop refuses.
	want := []string{"bad ticket", "bad ticket", "bad ticket", "bad ticket", "too many rejected tickets", "too many rejected tickets"}
	if strings.Join(reasons, ",") != strings.Join(want, ",") {
		t.Fatalf("closes %q, want %q", reasons, want)
	}
	if st := f.srv.Stats().Auth; st.Backstops != 2 || st.Rejected != 4 || st.TrackedAddrs != 1 {
		t.Fatalf("auth stats %+v", st)
	}
	tok, _ := f.token(t, "neighbour")
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	p.next(protocol.TypeAuthenticated, 2*time.Second)
	// Reset counters (the demo's) forgets the address too.
	f.demo.ResetCounters()
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeAuth, Token: "not-a-ticket"})
	if ce := q.closeErr(2 * time.Second); ce.Reason != "bad ticket" {
		t.Fatalf("after reset: %q", ce.Reason)
	}
}

// The per-key rejection windows are bounded: a full log prunes the keys
// whose window has passed, and while every key is live a new one goes
// uncounted rather than growing the map.
func TestRejectionLogIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newRejectionLog(2, time.Minute, 3)
	for _, k := range []string{"a", "b", "c"} {
		l.add(k, now)
	}
	for range 10 {
		l.add("a", now) // at most threshold+1 times kept per key
	}
	if len(l.m["a"]) != 3 || !l.over("a", now) || l.over("b", now) {
		t.Fatalf("a: %d times kept, over %v; b over %v", len(l.m["a"]), l.over("a", now), l.over("b", now))
	}
	l.add("d", now.Add(time.Second))
	if len(l.m) != 3 || l.count("d", now) != 0 {
		t.Fatalf("a full log of live keys took a new one: %d keys", len(l.m))
	}
	later := now.Add(2 * time.Minute)
	l.add("d", later)
	if len(l.m) != 1 || l.count("d", later) != 1 || l.over("a", later) {
		t.Fatalf("the expired keys were not pruned: %v", l.m)
	}
}

func postToken(t *testing.T, base, id string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.Post(base+"/api/token", "application/json", strings.NewReader(`{"clientId":"`+id+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("token answer %d is not JSON: %v", resp.StatusCode, err)
	}
	return resp, v
}

// POST /api/token once issued a ticket for any client id to anyone,
// so -auth required stopped nobody who could reach the port. It is off
// (403, a JSON error) unless Demo or IssueTickets turns it on.
func TestTicketIssuanceIsOffUnlessTurnedOn(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		want int
	}{
		{"auth off", Options{}, http.StatusNotFound},
		{"required, issuance off", Options{Auth: AuthRequired}, http.StatusForbidden},
		{"optional, issuance off", Options{Auth: AuthOptional}, http.StatusForbidden},
		{"required, IssueTickets", Options{Auth: AuthRequired, IssueTickets: true}, http.StatusOK},
		{"optional, Demo", Options{Auth: AuthOptional, Demo: true}, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			f := newFixture(t, &o)
			resp, v := postToken(t, f.hs.URL, "victim42")
			if resp.StatusCode != c.want {
				t.Fatalf("status %d %v, want %d", resp.StatusCode, v, c.want)
			}
			switch c.want {
			case http.StatusOK:
				if tok, _ := v["token"].(string); tok == "" {
					t.Fatalf("no token in %v", v)
				}
			case http.StatusForbidden:
				if msg, _ := v["error"].(string); !strings.Contains(msg, "-issue-tickets") || v["token"] != nil {
					t.Fatalf("403 body %v", v)
				}
			}
		})
	}
}

// Issuance is rate-limited per remote address: past the burst, 429 with a
// Retry-After; the bucket refills at TicketRate.
func TestTicketIssuanceIsRateLimitedPerAddress(t *testing.T) {
	clock := newTestClock() // the bucket refills by Options.Now
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true, TicketRate: 4, TicketBurst: 3, Now: clock.now})
	for i := range 3 {
		if resp, v := postToken(t, f.hs.URL, "c"+strconv.Itoa(i)); resp.StatusCode != http.StatusOK {
			t.Fatalf("ticket %d within the burst: %d %v", i, resp.StatusCode, v)
		}
	}
	resp, v := postToken(t, f.hs.URL, "c3")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || v["error"] == nil || v["token"] != nil {
		t.Fatalf("past the burst: %d Retry-After %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), v)
	}
	clock.advance(300 * time.Millisecond) // one refills at 4/s
	if resp, v := postToken(t, f.hs.URL, "c4"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a refill: %d %v", resp.StatusCode, v)
	}
}

// The per-address ticket buckets are bounded: a bucket that has refilled
// is forgotten when room is needed; while all are live, a new address is
// refused with a wait, not added.
func TestTicketLimiterIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newTicketLimiter(2, 2, 2)
	for _, a := range []string{"a", "a", "b"} {
		if ok, _ := l.allow(a, now); !ok {
			t.Fatalf("%s refused within its burst", a)
		}
	}
	if ok, wait := l.allow("a", now); ok || wait != 500*time.Millisecond {
		t.Fatalf("a past its burst: ok %v, wait %v", ok, wait)
	}
	if ok, wait := l.allow("c", now); ok || wait <= 0 || len(l.m) != 2 {
		t.Fatalf("a new address with the map full of live buckets: ok %v wait %v, %d buckets", ok, wait, len(l.m))
	}
	later := now.Add(time.Second) // a and b have refilled
	if ok, _ := l.allow("c", later); !ok || len(l.m) != 1 {
		t.Fatalf("refilled buckets were not forgotten: %d buckets", len(l.m))
	}
	if k := addrKey("2001:db8:1:2:3:4:5:6"); k != addrKey("2001:db8:1:2:ffff::1") || k == addrKey("2001:db8:1:3::1") {
		t.Fatalf("IPv6 addresses are not keyed by /64: %q", k)
	}
	if k := addrKey("192.0.2.7"); k != "192.0.2.7" {
		t.Fatalf("IPv4 key %q", k)
	}
}
