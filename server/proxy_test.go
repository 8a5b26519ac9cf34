//go:build !js

package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// The client address, from the TCP peer and the forwarding headers: only
// a trusted peer's headers are read, right to left to the first address
// that is not a trusted proxy; anything malformed is the peer's address.
func TestClientIPBehindTrustedProxies(t *testing.T) {
	s := mustNew(t, &Options{Logger: discard(),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}})
	defer s.Close()
	for _, c := range []struct {
		name, peer string
		xff, fwd   []string
		want       string
	}{
		{"untrusted peer, headers ignored", "198.51.100.7:4000", []string{"203.0.113.1"}, []string{"for=203.0.113.2"}, "198.51.100.7"},
		{"trusted peer, no header", "10.0.0.1:4000", nil, nil, "10.0.0.1"},
		{"xff", "10.0.0.1:4000", []string{"203.0.113.1"}, nil, "203.0.113.1"},
		{"xff: the client's own entries left of the real one", "10.0.0.1:4000", []string{"1.1.1.1, 2.2.2.2, 203.0.113.1"}, nil, "203.0.113.1"},
		{"xff: trusted hops skipped", "10.0.0.1:4000", []string{"203.0.113.1, 10.0.0.9", "10.1.2.3"}, nil, "203.0.113.1"},
		{"xff: every hop trusted, the leftmost", "10.0.0.1:4000", []string{"10.0.0.5, 10.0.0.9"}, nil, "10.0.0.5"},
		{"xff with a port", "10.0.0.1:4000", []string{"203.0.113.1:5555"}, nil, "203.0.113.1"},
		{"xff ipv6, in brackets with a port", "10.0.0.1:4000", []string{"[2001:db8::7]:443"}, nil, "2001:db8::7"},
		{"xff ipv4-mapped", "10.0.0.1:4000", []string{"::ffff:203.0.113.9"}, nil, "203.0.113.9"},
		{"xff garbage", "10.0.0.1:4000", []string{"not-an-ip"}, nil, "10.0.0.1"},
		{"xff garbage left of the client", "10.0.0.1:4000", []string{"junk, 203.0.113.1"}, nil, "203.0.113.1"},
		{"xff empty entry", "10.0.0.1:4000", []string{"203.0.113.1,,"}, nil, "10.0.0.1"},
		{"xff empty", "10.0.0.1:4000", []string{""}, nil, "10.0.0.1"},
		{"xff too many trusted hops", "10.0.0.1:4000", []string{"203.0.113.1" + strings.Repeat(", 10.0.0.2", 40)}, nil, "10.0.0.1"},
		{"forwarded", "10.0.0.1:4000", nil, []string{"for=203.0.113.4;proto=https"}, "203.0.113.4"},
		{"forwarded quoted ipv6 with port", "10.0.0.1:4000", nil, []string{`For="[2001:db8::9]:1234", for=10.0.0.3`}, "2001:db8::9"},
		{"forwarded two lines", "10.0.0.1:4000", nil, []string{"for=203.0.113.4", "for=10.0.0.3;by=10.0.0.1"}, "203.0.113.4"},
		{"forwarded unknown", "10.0.0.1:4000", nil, []string{"for=unknown"}, "10.0.0.1"},
		{"forwarded obfuscated", "10.0.0.1:4000", nil, []string{"for=_hidden, for=10.0.0.3"}, "10.0.0.1"},
		{"forwarded element without for", "10.0.0.1:4000", nil, []string{"proto=https"}, "10.0.0.1"},
		{"forwarded unclosed quote", "10.0.0.1:4000", nil, []string{`for="203.0.113.4`}, "10.0.0.1"},
		{"forwarded quoted comma", "10.0.0.1:4000", nil, []string{`for=203.0.113.4;x="a,b"`}, "203.0.113.4"},
		{"both agree", "10.0.0.1:4000", []string{"203.0.113.1"}, []string{"for=203.0.113.1"}, "203.0.113.1"},
		{"both disagree: one was the client's", "10.0.0.1:4000", []string{"203.0.113.1"}, []string{"for=192.0.2.66"}, "10.0.0.1"},
		{"trusted ipv6 peer", "[2001:db8:ffff::1]:4000", []string{"2001:db8::5"}, nil, "2001:db8::5"},
		{"ipv4-mapped trusted peer", "[::ffff:10.0.0.1]:4000", []string{"203.0.113.1"}, nil, "203.0.113.1"},
		{"not an IP peer", "@pipe", []string{"203.0.113.1"}, nil, "@pipe"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/ws", nil)
		r.RemoteAddr = c.peer
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		for _, v := range c.fwd {
			r.Header.Add("Forwarded", v)
		}
		if got := s.clientIP(r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// New refuses a TrustedProxies entry that is not a network.
func TestNewRefusesBadTrustedProxies(t *testing.T) {
	for _, p := range []netip.Prefix{{}, netip.MustParsePrefix("::ffff:10.0.0.0/104")} {
		if _, err := New(&Options{TrustedProxies: []netip.Prefix{p}, Logger: discard()}); err == nil || !strings.Contains(err.Error(), "Options.TrustedProxies") {
			t.Errorf("%v: %v", p, err)
		}
	}
	s := mustNew(t, &Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}, Logger: discard()})
	defer s.Close()
	if s.opts.TrustedProxies[0] != netip.MustParsePrefix("10.0.0.0/8") {
		t.Fatalf("prefix kept as %v", s.opts.TrustedProxies[0])
	}
}

// behindProxy serves f's site through a real reverse proxy on loopback
// (httputil.ReverseProxy, which appends the address it got the request
// from to X-Forwarded-For, as nginx's $proxy_add_x_forwarded_for does) and
// returns the proxy's URL.
func behindProxy(t *testing.T, f *fixture) string {
	t.Helper()
	target, _ := url.Parse(f.hs.URL)
	ps := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(ps.Close)
	return ps.URL
}

// dialAs dials the WebSocket at base (http URL) claiming X-Forwarded-For
// xff, and returns the close code the server ends it with within d, or 0
// if it stays open.
func dialAs(t *testing.T, base, xff string) (*websocket.Conn, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h := http.Header{}
	if xff != "" {
		h.Set("X-Forwarded-For", xff)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, b, err := ws.Read(rctx)
		rcancel()
		var ce websocket.CloseError
		switch {
		case errors.As(err, &ce):
			return ws, int(ce.Code)
		case err != nil:
			return ws, 0 // still open after 300 ms
		case strings.Contains(string(b), `"welcome"`):
			return ws, 0
		}
	}
}

// Behind one reverse proxy the whole site once shared 256
// connections and 20 handshakes/s. Behind a trusted proxy two clients
// with different X-Forwarded-For are limited separately (MaxConnsPerIP 1
// each) and so is the ticket endpoint's rate; behind an untrusted one the
// header is ignored and they share the proxy's address.
func TestLimitsKeyByTheClientBehindATrustedProxy(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	trusted := newFixture(t, &Options{MaxConnsPerIP: 1, TrustedProxies: loopback, Demo: true, Auth: AuthOptional, TicketBurst: 1, TicketRate: 0.01})
	viaTrusted := behindProxy(t, trusted)
	if _, code := dialAs(t, viaTrusted, "203.0.113.1"); code != 0 {
		t.Fatalf("client 1 via a trusted proxy: closed with %d", code)
	}
	if _, code := dialAs(t, viaTrusted, "203.0.113.2"); code != 0 {
		t.Fatalf("client 2 via a trusted proxy: closed with %d, want its own limit", code)
	}
	if _, code := dialAs(t, viaTrusted, "203.0.113.1"); code != protocol.CloseTryAgainLater {
		t.Fatalf("client 1 again via a trusted proxy: closed with %d, want 1013 (its limit of 1)", code)
	}
	ticket := func(base, xff string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/token", strings.NewReader(`{"clientId":"c"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b, c := ticket(viaTrusted, "203.0.113.1"), ticket(viaTrusted, "203.0.113.2"), ticket(viaTrusted, "203.0.113.1"); a != 200 || b != 200 || c != 429 {
		t.Fatalf("tickets via a trusted proxy: %d %d %d, want 200 200 429", a, b, c)
	}

	untrusted := newFixture(t, &Options{MaxConnsPerIP: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	viaUntrusted := behindProxy(t, untrusted)
	if _, code := dialAs(t, viaUntrusted, "203.0.113.1"); code != 0 {
		t.Fatalf("client 1 via an untrusted proxy: closed with %d", code)
	}
	if _, code := dialAs(t, viaUntrusted, "203.0.113.2"); code != protocol.CloseTryAgainLater {
		t.Fatalf("client 2 via an untrusted proxy: closed with %d, want 1013 (the proxy's address at its limit)", code)
	}
}
