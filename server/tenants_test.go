//go:build !js

package server

import (
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// tenantPeer dials f and authenticates as user of tenant with a ticket the
// application issued (Server.IssueTicket); it fails the test unless the
// connection is authenticated.
func (f *fixture) tenantPeer(user, tenant string) *peer {
	f.t.Helper()
	tok, _, err := f.srv.IssueTicket(Identity{User: user, Tenant: tenant})
	if err != nil {
		f.t.Fatal(err)
	}
	p, a, ce := f.authWith(tok)
	if a.Type != protocol.TypeAuthenticated {
		f.t.Fatalf("%s of %s: closed with %d %q", user, tenant, ce.Code, ce.Reason)
	}
	return p
}

// Every limit was once per remote IP. MaxConnsPerTenant counts a
// tenant's connections once their tokens name it: one more is closed with
// 1013 and a retry-after of at least 1 s (a classified refusal the client
// waits out), other tenants are not affected, and a place comes back when
// one of the tenant's connections ends. The metrics count it without
// naming the tenant.
func TestMaxConnsPerTenant(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthRequired, MaxConnsPerTenant: 2})
	a1 := f.tenantPeer("u1", "acme-corp")
	f.tenantPeer("u2", "acme-corp")
	tok, _, _ := f.srv.IssueTicket(Identity{User: "u3", Tenant: "acme-corp"})
	_, a, ce := f.authWith(tok)
	if a.Type == protocol.TypeAuthenticated || ce.Code != protocol.CloseTryAgainLater {
		t.Fatalf("a third acme-corp connection: authenticated %v, close %d %q; want 1013", a.Type != "", ce.Code, ce.Reason)
	}
	if d, ok := protocol.ParseRetryAfter(ce.Reason); !ok || d < time.Second || d > 3*time.Second {
		t.Fatalf("reason %q: want retry-after-ms of 1 to 3 s", ce.Reason)
	}
	f.tenantPeer("u4", "globex") // another tenant
	f.tenantPeer("u5", "globex") // has its own count
	noTenant, _, _ := f.srv.IssueTicket(Identity{User: "solo"})
	for range 3 { // no tenant: not counted
		if _, a, ce := f.authWith(noTenant); a.Type != protocol.TypeAuthenticated {
			t.Fatalf("a connection without a tenant: %v", ce)
		}
	}
	a1.ws.CloseNow()
	waitFor(t, 2*time.Second, "acme-corp's place back", func() bool {
		f.srv.tenants.mu.Lock()
		defer f.srv.tenants.mu.Unlock()
		return f.srv.tenants.m["acme-corp"].conns == 1
	})
	f.tenantPeer("u3", "acme-corp")
	m := scrapeMetrics(t, f)
	for _, want := range []string{"wsready_tenant_conns_refused_total 1", `wsready_handshakes_total{outcome="tenant_refused",transport="ws"} 1`, "wsready_tenants_tracked 2"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(m, "acme") || strings.Contains(m, "globex") {
		t.Error("a tenant's name reached the metrics")
	}
}

// TenantMsgRate is one bucket for all of a tenant's connections on the
// node: beyond it a request and a publish get rate_limited responses, a
// subscribe an error frame, each with retryAfterMs; probes pass; the
// socket stays, other tenants are not slowed, and after retryAfterMs the
// tenant is served again.
func TestTenantMsgRateAnswersRateLimitedAndKeepsTheSocket(t *testing.T) {
	clock := newTestClock() // the bucket refills by Options.Now
	f := newFixture(t, &Options{Auth: AuthRequired, Demo: true, Publish: true, TenantMsgRate: 2, TenantMsgBurst: 4, Now: clock.now})
	a, b, g := f.tenantPeer("ua", "acme"), f.tenantPeer("ub", "acme"), f.tenantPeer("ug", "globex")
	request := func(p *peer, id uint64) protocol.Message {
		t.Helper()
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "echo", Params: []byte(`1`)})
		for {
			if m := p.next(protocol.TypeResponse, 2*time.Second); m.ID == id {
				return m
			}
		}
	}
	for i := range uint64(4) { // the burst, from a
		if m := request(a, i+1); m.Error != nil {
			t.Fatalf("request %d within the burst: %+v", i+1, m.Error)
		}
	}
	// b shares acme's bucket.
	m := request(b, 10)
	if m.Error == nil || m.Error.Code != protocol.ErrRateLimited || m.Error.RetryAfterMs < 1 || m.Error.RetryAfterMs > 500 {
		t.Fatalf("request over the rate: %+v %+v", m, m.Error)
	}
	b.send(protocol.Message{Type: protocol.TypePublish, ID: 11, Topic: "news", Data: []byte(`1`)})
	if m := b.next(protocol.TypeResponse, time.Second); m.ID != 11 || m.Error == nil || m.Error.Code != protocol.ErrRateLimited || m.Error.RetryAfterMs < 1 {
		t.Fatalf("publish over the rate: %+v %+v", m, m.Error)
	}
	b.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "news"})
	if m := b.next(protocol.TypeError, time.Second); m.Topic != "news" || m.Error.Code != protocol.ErrRateLimited || m.Error.RetryAfterMs < 1 {
		t.Fatalf("subscribe over the rate: %+v %+v", m, m.Error)
	}
	b.send(protocol.Message{Type: protocol.TypeProbe, ID: 12})
	if m := b.next(protocol.TypeProbeAck, time.Second); m.ID != 12 {
		t.Fatalf("probe: %+v", m)
	}
	// Another tenant is not slowed.
	if m := request(g, 20); m.Error != nil {
		t.Fatalf("globex: %+v", m.Error)
	}
	// After the wait acme is served again, on the same sockets.
	clock.advance(time.Duration(m.Error.RetryAfterMs) * time.Millisecond)
	if m := request(b, 13); m.Error != nil {
		t.Fatalf("after retryAfterMs: %+v", m.Error)
	}
	if strings.Contains(scrapeMetrics(t, f), "wsready_tenant_rate_limited_total 3") == false {
		t.Error("metrics: want 3 rate-limited frames")
	}
	select {
	case err := <-b.closed:
		t.Fatalf("the socket closed: %v", err)
	default:
	}
}

// The tenants tracked are bounded: those with open connections (at most
// MaxConns), and at most maxIdleTenants more whose buckets are refilling,
// forgotten first when a new tenant comes.
func TestTenantsTrackedAreBounded(t *testing.T) {
	tn := newTenants(&Options{MaxConns: 2, TenantMsgRate: 1, TenantMsgBurst: 1})
	tn.max = 4 // MaxConns + 2 idle, for the test
	now := time.Now()
	tn.join(1, "a", now)
	tn.join(2, "b", now)
	for i, name := range []string{"c", "d", "e", "f", "g"} {
		id := uint64(10 + i)
		if !tn.join(id, name, now) {
			t.Fatalf("join %s refused", name)
		}
		tn.allow(name, now) // its bucket is drawn: it stays after leaving
		tn.leave(id, now)
		if len(tn.m) > tn.max {
			t.Fatalf("%d tenants tracked, bound %d", len(tn.m), tn.max)
		}
	}
	if tn.m["a"] == nil || tn.m["b"] == nil || tn.m["a"].conns != 1 {
		t.Fatal("a tenant with an open connection was forgotten")
	}
	// A refilled, idle tenant goes when its last connection leaves.
	later := now.Add(2 * time.Second)
	tn.allow("a", now)
	tn.leave(1, later)
	if tn.m["a"] != nil || len(tn.byConn) != 1 {
		t.Fatalf("after a's last connection left with its bucket full: %v", tn.m["a"])
	}
}
