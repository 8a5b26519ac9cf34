//go:build !js

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/protocol"
)

// -tenant-handshake-rate and -tenant-handshake-burst set the server's
// per-tenant handshake ceiling (Options.TenantHandshakeRate and
// TenantHandshakeBurst), which serve had no flags for: with a JWT's org
// claim naming the tenant, a burst of 2 at 0.01/s (no refill within the
// test) authenticates acme's first two connections and closes the third
// with 1013 and a retry-after once its token names acme; globex, another
// tenant, still gets in. /metrics counts the refusal without naming the
// tenant.
func TestServeTenantHandshakeFlags(t *testing.T) {
	secret := "an HS256 secret for wsready serve, 32 bytes or more"
	file := filepath.Join(t.TempDir(), "jwt-secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, freeAddr(t), "-jwt-hs256-secret-file", file, "-jwt-tenant-claim", "org",
		"-tenant-handshake-rate", "0.01", "-tenant-handshake-burst", "2")
	// auth dials, sends a JWT naming org, and returns whether the server
	// authenticated it or, if it closed the connection, its close error.
	auth := func(org string) (bool, websocket.CloseError) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, n.url(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.CloseNow() })
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"sub": "user-of-" + org, "org": org, "exp": time.Now().Add(time.Hour).Unix(),
		}).SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Write(ctx, websocket.MessageText, protocol.Encode(protocol.Message{Type: protocol.TypeAuth, Token: tok})); err != nil {
			t.Fatal(err)
		}
		for {
			_, b, err := ws.Read(ctx)
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return false, ce
			}
			if err != nil {
				t.Fatalf("%s: neither authenticated nor closed: %v", org, err)
			}
			if m, err := protocol.Decode(b); err == nil && m.Type == protocol.TypeAuthenticated {
				return true, ce
			}
		}
	}
	for i := range 2 {
		if ok, ce := auth("acme"); !ok {
			t.Fatalf("acme's handshake %d within -tenant-handshake-burst 2: closed %d %q", i+1, ce.Code, ce.Reason)
		}
	}
	ok, ce := auth("acme")
	if ok {
		t.Fatal("acme's third handshake past -tenant-handshake-burst 2 at 0.01/s was authenticated; want 1013")
	}
	if d, has := protocol.ParseRetryAfter(ce.Reason); ce.Code != protocol.CloseTryAgainLater || !has || d < time.Second {
		t.Fatalf("acme's third handshake: closed %d %q; want 1013 with a retry-after of at least 1 s", ce.Code, ce.Reason)
	}
	if ok, ce := auth("globex"); !ok {
		t.Fatalf("globex, another tenant: closed %d %q; want authenticated", ce.Code, ce.Reason)
	}
	m := get(t, "http://"+n.addr+"/metrics", 200)
	if !strings.Contains(m, "\nwsready_tenant_handshakes_refused_total 1\n") {
		t.Error("/metrics has no wsready_tenant_handshakes_refused_total 1")
	}
	if strings.Contains(m, "acme") || strings.Contains(m, "globex") {
		t.Error("a tenant's name reached /metrics")
	}
}
