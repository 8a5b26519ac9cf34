//go:build !js

package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// mounted serves mux, an application's own, with the server's handlers
// mounted on it, and returns its base URL.
func mounted(t *testing.T, mux *http.ServeMux) string {
	t.Helper()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL
}

// Mounting Handler once mounted /api/token, /api/stats and /metrics on
// the application's mux too. Handler is the WebSocket endpoint only, at the
// path the application chose; a request that is not an upgrade gets 426
// and is not counted as a handshake.
func TestHandlerIsTheWebSocketEndpointOnly(t *testing.T) {
	srv := mustNew(t, &Options{Logger: discard()})
	t.Cleanup(func() { srv.Close() })
	mux := http.NewServeMux()
	mux.Handle("/realtime", srv.Handler())
	mux.HandleFunc("/api/stats", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("the app's own")) })
	base := mounted(t, mux)

	resp, err := http.Get(base + "/realtime")
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != "websocket" || !strings.Contains(e.Error, "WebSocket endpoint") {
		t.Fatalf("plain GET: %d, Upgrade %q, error %q", resp.StatusCode, resp.Header.Get("Upgrade"), e.Error)
	}
	if n := srv.Stats().Handshakes; n != 0 {
		t.Fatalf("a plain GET counted as %d handshakes", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/realtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	_, b, err := ws.Read(ctx)
	if m, _ := protocol.Decode(b); err != nil || m.Type != protocol.TypePing {
		t.Fatalf("first frame %s, %v; want a ping", b, err)
	}

	// The application's routes are its own: nothing of the server's
	// answers beside Handler.
	for path, want := range map[string]int{"/api/stats": http.StatusOK, "/api/token": http.StatusNotFound, "/metrics": http.StatusNotFound, "/healthz": http.StatusNotFound} {
		if code := getStatus(t, base+path, ""); code != want {
			t.Errorf("GET %s on the app's mux: %d, want %d", path, code, want)
		}
	}
	// Handler keeps the Host check wherever it is mounted.
	_, resp, err = websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/realtime", &websocket.DialOptions{Host: "evil.example"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign Host: %v %+v", err, resp)
	}
}

// Each separate handler applies the guards it needs, wherever it is
// mounted: the Host check for all, the method, and for the ticket
// endpoint (it issues credentials) same origin and JSON only.
func TestSeparateHandlersGuardThemselves(t *testing.T) {
	srv := mustNew(t, &Options{Auth: AuthOptional, IssueTickets: true, Logger: discard()})
	t.Cleanup(func() { srv.Close() })
	mux := http.NewServeMux()
	mux.Handle("/auth/ticket", srv.TicketHandler())
	mux.Handle("/ops/stats", srv.StatsHandler())
	mux.Handle("/ops/metrics", srv.MetricsHandler())
	mux.Handle("/ops/health", srv.HealthHandler())
	base := mounted(t, mux)
	host := strings.TrimPrefix(base, "http://")
	cases := []struct {
		name, path, ctype string
		hdr               map[string]string
		want              int
	}{
		{"a ticket", "/auth/ticket", "application/json", nil, http.StatusOK},
		{"a ticket, same origin", "/auth/ticket", "application/json", map[string]string{"Origin": "http://" + host}, http.StatusOK},
		{"a ticket, foreign origin", "/auth/ticket", "application/json", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"a ticket, text/plain", "/auth/ticket", "text/plain", nil, http.StatusUnsupportedMediaType},
		{"a ticket, foreign host", "/auth/ticket", "application/json", map[string]string{"Host": "evil.example"}, http.StatusMisdirectedRequest},
		{"POST stats", "/ops/stats", "application/json", nil, http.StatusMethodNotAllowed},
		{"POST metrics", "/ops/metrics", "application/json", nil, http.StatusMethodNotAllowed},
	}
	for _, c := range cases {
		if code, msg := post(t, base+c.path, c.ctype, c.hdr, `{"clientId":"app-user"}`); code != c.want {
			t.Errorf("%s: %d %q, want %d", c.name, code, msg, c.want)
		}
	}
	for _, path := range []string{"/auth/ticket", "/ops/stats", "/ops/metrics", "/ops/health"} {
		if code := getStatus(t, base+path, "evil.example"); code != http.StatusMisdirectedRequest {
			t.Errorf("GET %s with a foreign Host: %d", path, code)
		}
	}
	resp, err := http.Get(base + "/auth/ticket")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Fatalf("GET the ticket endpoint: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	var st Stats
	getJSON(t, base+"/ops/stats", &st)
	if st.Auth.Accepted != 0 || st.Auth.Mode != AuthOptional {
		t.Fatalf("stats through the mounted handler: %+v", st.Auth)
	}
}

// AllowedHosts adds to the loopback names, as wsready serve's -hosts does
// (it replaced them before); "*" allows any host.
func TestAllowedHostsAddToLoopback(t *testing.T) {
	status := func(f *fixture, host string) int { t.Helper(); return getStatus(t, f.hs.URL+"/healthz", host) }
	f := newFixture(t, &Options{AllowedHosts: []string{"demo.example"}}, DemoOptions{NoFeed: true})
	for host, want := range map[string]int{"demo.example:8080": 200, "DEMO.example": 200, "localhost:1234": 200, "127.0.0.1": 200, "[::1]:80": 200, "other.example": 421} {
		if got := status(f, host); got != want {
			t.Errorf("AllowedHosts demo.example, Host %q: %d, want %d", host, got, want)
		}
	}
	star := newFixture(t, &Options{AllowedHosts: []string{"*"}}, DemoOptions{NoFeed: true})
	if got := status(star, "anything.example"); got != 200 {
		t.Errorf(`AllowedHosts "*": %d`, got)
	}
}
