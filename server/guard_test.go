//go:build !js

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func post(t *testing.T, url, ctype string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}

// Without Demo the switches cannot be changed by anyone, and stats carry no
// remote addresses.
func TestSwitchesNeedDemoMode(t *testing.T) {
	f := newFixture(t, nil)
	f.dial()
	f.waitOpen(1)
	for _, path := range []string{"/api/faults", "/api/reset"} {
		code, msg := post(t, f.hs.URL+path, "application/json", nil, `{"freeze":true}`)
		if code != http.StatusForbidden || !strings.Contains(msg, "-demo") {
			t.Errorf("POST %s without -demo: %d %q", path, code, msg)
		}
	}
	if f.demo.Faults()["freeze"] {
		t.Fatal("a switch changed without -demo")
	}
	body := getText(t, f.hs.URL+"/api/stats")
	if strings.Contains(body, "127.0.0.1:") || strings.Contains(body, `"remote"`) {
		t.Fatalf("stats without -demo show remote addresses: %s", body)
	}
	var st Stats
	json.Unmarshal([]byte(body), &st)
	if st.Demo || st.Open != 1 {
		t.Fatalf("stats: demo %v open %d", st.Demo, st.Open)
	}
	d := newFixture(t, &Options{Demo: true})
	d.dial()
	d.waitOpen(1)
	if st := d.srv.Stats(); !st.Demo || len(st.Connections) != 1 || !strings.HasPrefix(st.Connections[0].Remote, "127.0.0.1:") {
		t.Fatalf("demo stats: %+v", st)
	}
}

// A state-changing request must say application/json (a cross-site form or
// a no-preflight fetch cannot) and must not come from a foreign Origin.
func TestStateChangingRequestsAreGuarded(t *testing.T) {
	f := newFixture(t, &Options{Demo: true})
	url := f.hs.URL + "/api/faults"
	host := strings.TrimPrefix(f.hs.URL, "http://")
	cases := []struct {
		name  string
		ctype string
		hdr   map[string]string
		want  int
	}{
		{"text/plain (no preflight)", "text/plain", nil, http.StatusUnsupportedMediaType},
		{"form", "application/x-www-form-urlencoded", nil, http.StatusUnsupportedMediaType},
		{"no content type", "", nil, http.StatusUnsupportedMediaType},
		{"foreign origin", "application/json", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"foreign origin, same port", "application/json", map[string]string{"Origin": "http://localhost:1"}, http.StatusForbidden},
		{"null origin", "application/json", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"foreign host (DNS rebinding)", "application/json", map[string]string{"Host": "evil.example:80", "Origin": "http://evil.example:80"}, http.StatusMisdirectedRequest},
	}
	for _, c := range cases {
		code, msg := post(t, url, c.ctype, c.hdr, `{"freeze":true}`)
		if code != c.want || msg == "" {
			t.Errorf("%s: %d %q, want %d", c.name, code, msg, c.want)
		}
	}
	if f.demo.Faults()["freeze"] {
		t.Fatal("a refused request changed a switch")
	}
	// Same origin, and no Origin at all (curl), are fine.
	for _, hdr := range []map[string]string{{"Origin": "http://" + host}, nil} {
		if code, msg := post(t, url, "application/json; charset=utf-8", hdr, `{"slowReplies":true}`); code != http.StatusOK {
			t.Fatalf("same-origin POST %v: %d %q", hdr, code, msg)
		}
	}
	// A listed origin pattern may change state too.
	g := newFixture(t, &Options{Demo: true, OriginPatterns: []string{"*.example.com"}})
	if code, msg := post(t, g.hs.URL+"/api/reset", "application/json", map[string]string{"Origin": "https://app.example.com"}, `{}`); code != http.StatusOK {
		t.Fatalf("listed origin: %d %q", code, msg)
	}
}

// The Host header must name an allowed host on every route, the WebSocket
// included: an Origin equal to a hostile Host passes coder/websocket's
// same-origin check, so the Host check is what stops DNS rebinding.
func TestHostMustBeAllowed(t *testing.T) {
	f := newFixture(t, nil)
	hdr := http.Header{"Origin": {"http://evil.example:8080"}}
	_, resp, err := websocket.Dial(context.Background(), f.url, &websocket.DialOptions{HTTPHeader: hdr, Host: "evil.example:8080"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("rebound WebSocket: %v %+v", err, resp)
	}
	for _, path := range []string{"/api/stats", "/healthz", "/api/faults", "/metrics", "/no-such-path"} {
		if code := getStatus(t, f.hs.URL+path, "evil.example"); code != http.StatusMisdirectedRequest {
			t.Errorf("GET %s with a foreign Host: %d", path, code)
		}
	}
	for _, h := range []string{"localhost:1234", "127.0.0.1", "[::1]:80", "LOCALHOST."} {
		if code := getStatus(t, f.hs.URL+"/healthz", h); code != http.StatusOK {
			t.Errorf("Host %q: %d", h, code)
		}
	}
	// A listed host: TestAllowedHostsAddToLoopback.
}

// serveHardened runs the server behind the http.Server HTTPServer returns,
// as wsready serve does.
func serveHardened(t *testing.T, o *Options) string {
	t.Helper()
	srv := mustNew(t, o)
	demo, err := NewTestDemo(srv, nil, DemoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(demo.Handler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return ln.Addr().String()
}

// An unfinished request body, an idle keep-alive and huge headers cannot
// hold a socket: each is cut off by its timeout or limit.
func TestHTTPTimeoutsFreeHeldSockets(t *testing.T) {
	addr := serveHardened(t, &Options{Demo: true, RequestTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond,
		ReadHeaderTimeout: 300 * time.Millisecond, Logger: discard()})
	closedWithin := func(name, send string, d time.Duration) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, send)
		c.SetReadDeadline(time.Now().Add(d))
		start := time.Now()
		_, err = io.Copy(io.Discard, c) // returns at EOF: the server closed it
		if err != nil {
			t.Fatalf("%s: not closed within %v: %v", name, d, err)
		}
		t.Logf("%s: closed after %v", name, time.Since(start).Round(time.Millisecond))
	}
	closedWithin("unfinished POST body", "POST /api/faults HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"fre", 3*time.Second)
	closedWithin("unfinished headers", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 3*time.Second)
	closedWithin("idle keep-alive", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 3*time.Second)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB of headers: %d", resp.StatusCode)
	}
	// net/http lingers 500 ms after half-closing a connection whose request
	// it did not finish reading (rstAvoidanceDelay): let those goroutines
	// end before the leak check.
	time.Sleep(700 * time.Millisecond) // real time: net/http's own timer
}
