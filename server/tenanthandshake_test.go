//go:build !js

package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// closeOf dials f with header and returns how the server ended the
// connection: its close code and reason, or the HTTP status of a refused
// upgrade with its Retry-After, or zeros for a connection served (a first
// frame) or still open after a second (waiting for a token).
func (f *fixture) closeOf(header http.Header) (code int, reason string, status int, retryAfter string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, f.url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		if resp == nil {
			f.t.Fatalf("dial: %v", err)
		}
		return 0, "", resp.StatusCode, resp.Header.Get("Retry-After")
	}
	defer ws.CloseNow()
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	defer rcancel()
	_, _, err = ws.Read(rctx)
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return int(ce.Code), ce.Reason, 0, ""
	}
	if err != nil && rctx.Err() == nil {
		f.t.Fatalf("read: %v", err)
	}
	return 0, "", 0, "" // a frame (served), or still open (waiting for a token)
}

// TenantHandshakeRate before the upgrade: Identify names the tenant from
// the request's cookie, so a handshake over the tenant's bucket is refused
// before the upgrade, as the server's other tenant refusals are (1013 with
// a retry-after; 503 with Retry-After with RefuseWith "http"); another
// tenant is not affected, and once the bucket refills the tenant is served
// again. Counted in the metrics without naming the tenant.
func TestTenantHandshakeRateBeforeTheUpgrade(t *testing.T) {
	for _, mode := range []RefuseMode{RefuseClose, RefuseHTTP} {
		t.Run(string(mode), func(t *testing.T) {
			clock := newTestClock() // the buckets refill by Options.Now
			f := newFixture(t, &Options{Identify: cookieIdentify, TenantHandshakeRate: 1, TenantHandshakeBurst: 2, RefuseWith: mode, Now: clock.now})
			for i := range 2 {
				if code, _, status, _ := f.closeOf(cookie("s-alice")); code != 0 || status != 0 {
					t.Fatalf("acme's handshake %d within the burst: close %d, status %d", i+1, code, status)
				}
			}
			code, reason, status, ra := f.closeOf(cookie("s-alice"))
			switch mode {
			case RefuseClose:
				d, ok := protocol.ParseRetryAfter(reason)
				if code != protocol.CloseTryAgainLater || !ok || d < time.Second || d > 3*time.Second {
					t.Fatalf("acme's third handshake: close %d %q; want 1013 with a retry-after of 1 to 3 s", code, reason)
				}
			case RefuseHTTP:
				if status != http.StatusServiceUnavailable || ra == "" || ra == "0" {
					t.Fatalf("acme's third handshake: status %d, Retry-After %q; want 503 with one", status, ra)
				}
			}
			if code, _, status, _ := f.closeOf(cookie("s-bob")); code != 0 || status != 0 {
				t.Fatalf("globex: close %d, status %d", code, status)
			}
			if code, _, status, _ := f.closeOf(nil); code != 0 || status != 0 {
				t.Fatalf("no tenant: close %d, status %d", code, status)
			}
			clock.advance(time.Second)
			if code, _, status, _ := f.closeOf(cookie("s-alice")); code != 0 || status != 0 {
				t.Fatalf("acme after a second: close %d, status %d", code, status)
			}
			m := scrapeMetrics(t, f)
			for _, want := range []string{"wsready_tenant_handshakes_refused_total 1", `wsready_handshakes_total{outcome="tenant_refused",transport="ws"} 1`} {
				if !strings.Contains(m, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
			if strings.Contains(m, "acme") || strings.Contains(m, "globex") {
				t.Error("a tenant's name reached the metrics")
			}
		})
	}
}

// TenantHandshakeRate after the upgrade: a token names the tenant, so
// the connection is closed with 1013 and a retry-after when its auth frame
// would be one handshake over the tenant's bucket, before it is counted
// against MaxConnsPerTenant; another tenant is not affected.
func TestTenantHandshakeRateOnceTheTokenNamesTheTenant(t *testing.T) {
	clock := newTestClock()
	f := newFixture(t, &Options{Auth: AuthRequired, TenantHandshakeRate: 0.5, TenantHandshakeBurst: 1, Now: clock.now})
	f.tenantPeer("u1", "acme-corp")
	tok, _, _ := f.srv.IssueTicket(Identity{User: "u2", Tenant: "acme-corp"})
	_, a, ce := f.authWith(tok)
	if a.Type == protocol.TypeAuthenticated || ce.Code != protocol.CloseTryAgainLater {
		t.Fatalf("acme-corp's second handshake: authenticated %v, close %d %q; want 1013", a.Type != "", ce.Code, ce.Reason)
	}
	if d, ok := protocol.ParseRetryAfter(ce.Reason); !ok || d < time.Second || d > 3*time.Second {
		t.Fatalf("reason %q: want retry-after-ms of 1 to 3 s (the bucket's next token at 0.5/s: 2 s)", ce.Reason)
	}
	f.tenantPeer("u3", "globex")
	clock.advance(2 * time.Second)
	f.tenantPeer("u2", "acme-corp")
	f.srv.tenants.mu.Lock()
	conns := f.srv.tenants.m["acme-corp"].conns
	f.srv.tenants.mu.Unlock()
	if conns != 2 {
		t.Fatalf("acme-corp counts %d connections, want 2 (the refused one never joined)", conns)
	}
}

// The HTTP transport's handshake (POST /session) is held to the same
// ceiling: Identify names the tenant, and one over its bucket is answered
// 503 with Retry-After and the close a WebSocket would get (1013 with the
// retry-after); no session is made.
func TestTenantHandshakeRateOverHTTP(t *testing.T) {
	clock := newTestClock()
	f := newFixture(t, &Options{Identify: cookieIdentify, TenantHandshakeRate: 1, TenantHandshakeBurst: 1, Now: clock.now})
	if a := f.post(t, "/session", "application/json", "{}", "Cookie", "session=s-alice"); a.status != http.StatusOK {
		t.Fatalf("acme's first session: %d %+v", a.status, a)
	}
	a := f.post(t, "/session", "application/json", "{}", "Cookie", "session=s-alice")
	if a.status != http.StatusServiceUnavailable || a.retryAfter == "" || a.Session != "" || a.Close == nil ||
		a.Close.Code != protocol.CloseTryAgainLater || !strings.HasPrefix(a.Close.Reason, "retry-after-ms=") || a.RetryMs < 1 {
		t.Fatalf("acme's second session: %d %+v (Retry-After %q)", a.status, a, a.retryAfter)
	}
	if a := f.post(t, "/session", "application/json", "{}", "Cookie", "session=s-bob"); a.status != http.StatusOK {
		t.Fatalf("globex: %d %+v", a.status, a)
	}
	m := scrapeMetrics(t, f)
	if want := `wsready_handshakes_total{outcome="tenant_refused",transport="sse"} 1`; !strings.Contains(m, want) {
		t.Errorf("metrics lack %q", want)
	}
}
