//go:build !js

package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/examples/app/app"
	"github.com/wsready/wsready/server"
)

// start runs the app on a loopback httptest server.
func start(t *testing.T, cfg app.Config) (*app.App, *httptest.Server) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(a)
	t.Cleanup(func() { hs.Close(); a.Close() })
	return a, hs
}

// user is a signed-in browser: an HTTP client with the session cookie.
type user struct {
	name string
	hc   *http.Client
	base string
}

func login(t *testing.T, base, name string) *user {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	u := &user{name: name, hc: &http.Client{Jar: jar, Timeout: 5 * time.Second}, base: base}
	if code, body := u.post(t, "/login", `{"user":"`+name+`"}`); code != http.StatusOK {
		t.Fatalf("login %s: %d %s", name, code, body)
	}
	return u
}

func (u *user) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := u.hc.Post(u.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// token is what the page's token hook does: POST /auth/token with the cookie.
func (u *user) token(ctx context.Context, _ bool) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.base+"/auth/token", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := u.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct{ Token, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		return "", errors.New("no token: " + resp.Status + " " + r.Error)
	}
	return r.Token, nil
}

// dial connects the real client (the same core the browser runs) as u.
func (u *user) dial(t *testing.T, opts native.Options) *native.Client {
	t.Helper()
	opts.Token = u.token
	c, err := native.Dial(t.Context(), "ws"+strings.TrimPrefix(u.base, "http")+"/realtime", &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("%s not READY: %v", u.name, err)
	}
	return c
}

// waitSubscribed waits for the server's subscribed for topic. Not
// WaitReady: native.Client.Subscribe answers before the client's state
// turns Pending for the new topic, so a WaitReady right after it can see
// the READY from before and return before the server has the subscribe.
func waitSubscribed(t *testing.T, c *native.Client, topic string) {
	t.Helper()
	if !eventually(5*time.Second, func() bool {
		for _, ts := range c.Topics() {
			if ts.Topic == topic && ts.Subscribed {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no subscribed for %s: %+v", topic, c.Topics())
	}
}

// eventually waits up to d for cond to hold, looking every 10 ms: for what
// the client's goroutines do and nothing announces.
func eventually(d time.Duration, cond func() bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
	return true
}

func serverCode(err error) string {
	var se *client.ServerError
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

// The Authorize hook's rules, for every kind of action.
func TestAuthorizeRules(t *testing.T) {
	a, err := app.New(app.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	alice := server.Identity{User: "alice"}
	cases := []struct {
		id    server.Identity
		act   server.Action
		allow bool
	}{
		{alice, server.Action{Kind: server.ActSubscribe, Topic: "user:alice.cart"}, true},
		{alice, server.Action{Kind: server.ActSubscribe, Topic: "user:alice.orders"}, true},
		{alice, server.Action{Kind: server.ActSubscribe, Topic: "user:bob.cart"}, false},
		{alice, server.Action{Kind: server.ActSubscribe, Topic: "user:alice"}, false},
		{alice, server.Action{Kind: server.ActSubscribe, Topic: "user:alicex.cart"}, false},
		{alice, server.Action{Kind: server.ActSubscribe, Topic: "room:lobby"}, true},
		{alice, server.Action{Kind: server.ActSubscribe, Topic: "room:other"}, false},
		{alice, server.Action{Kind: server.ActPresence, Topic: "room:lobby"}, true},
		{alice, server.Action{Kind: server.ActPresence, Topic: "user:alice.cart"}, false},
		{alice, server.Action{Kind: server.ActPublish, Topic: "room:lobby"}, true},
		{alice, server.Action{Kind: server.ActPublish, Topic: "user:alice.cart"}, false},
		{alice, server.Action{Kind: server.ActRequest, Method: "cart.add"}, true},
		{alice, server.Action{Kind: server.ActRequest, Method: "cart.get"}, true},
		{alice, server.Action{Kind: server.ActRequest, Method: "echo"}, false},
		{server.Identity{}, server.Action{Kind: server.ActSubscribe, Topic: "room:lobby"}, false},
		{server.Identity{}, server.Action{Kind: server.ActRequest, Method: "cart.add"}, false},
	}
	for _, c := range cases {
		err := app.Authorize(a, c.id, c.act)
		var se *server.Error
		switch {
		case c.allow && err != nil:
			t.Errorf("%q %v: refused (%v), want allowed", c.id.User, c.act, err)
		case !c.allow && (!errors.As(err, &se) || se.Code != "forbidden"):
			t.Errorf("%q %v: %v, want a forbidden *server.Error", c.id.User, c.act, err)
		}
	}
}

// Through the real server: each user gets its own cart's updates and never
// another's; a subscribe to another's topic, a publish to a private topic
// and an unlisted method are refused with forbidden, and the socket stays.
func TestPrivateTopicsAndForbidden(t *testing.T) {
	_, hs := start(t, app.Config{})
	alice, bob := login(t, hs.URL, "alice"), login(t, hs.URL, "bob")

	var mu sync.Mutex
	got := map[string][]string{} // user -> topics of the updates it received
	topicErrs := map[string]string{}
	record := func(who string) native.Options {
		return native.Options{
			OnUpdate: func(u client.Update) { mu.Lock(); got[who] = append(got[who], u.Topic); mu.Unlock() },
			OnTopicError: func(topic, code string) {
				mu.Lock()
				topicErrs[who+" "+topic] = code
				mu.Unlock()
			},
		}
	}
	ca, cb := alice.dial(t, record("alice")), bob.dial(t, record("bob"))
	ctx := t.Context()
	aliceCart := make(chan app.Cart, 4)
	if _, err := ca.Subscribe(ctx, app.CartTopic("alice"), nil, func(u client.Update) {
		var c app.Cart
		json.Unmarshal(u.Data, &c)
		aliceCart <- c
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Subscribe(ctx, app.CartTopic("bob"), nil, func(client.Update) {}); err != nil {
		t.Fatal(err)
	}
	// Bob asks for Alice's cart: refused (Subscribe says so with the
	// server's code, as OnTopicError does); his connection stays, and
	// READY waits until he gives the topic up (WaitReady says why).
	var refused *native.SubscribeError
	leave, err := cb.Subscribe(ctx, app.CartTopic("alice"), nil, func(client.Update) { t.Error("bob got an update of alice's cart") })
	if !errors.As(err, &refused) || refused.Code != "forbidden" {
		t.Fatalf("bob's subscribe to alice's cart: %v, want a *native.SubscribeError forbidden", err)
	}
	if err := cb.WaitReady(ctx); !errors.As(err, &refused) || refused.Topic != app.CartTopic("alice") {
		t.Fatalf("bob's WaitReady with alice's cart refused: %v, want its *native.SubscribeError", err)
	}
	leave()
	if err := cb.WaitReady(ctx); err != nil {
		t.Fatalf("bob's WaitReady once he gave alice's cart up: %v", err)
	}
	waitSubscribed(t, ca, app.CartTopic("alice"))
	waitSubscribed(t, cb, app.CartTopic("bob"))
	code := ""
	if !eventually(5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		code = topicErrs["bob "+app.CartTopic("alice")]
		return code == "forbidden"
	}) {
		t.Fatalf("bob's subscribe to alice's cart: %q, want forbidden", code)
	}

	res, err := ca.Request(ctx, "cart.add", []byte(`{"sku":"apple","qty":2}`))
	if err != nil {
		t.Fatal(err)
	}
	var answer app.Cart
	if err := json.Unmarshal(res, &answer); err != nil || answer.User != "alice" || answer.Version != 1 ||
		len(answer.Lines) != 1 || answer.Lines[0] != (app.Line{SKU: "apple", Name: "Apple", Qty: 2}) {
		t.Fatalf("cart.add answered %s (%v)", res, err)
	}
	select {
	case c := <-aliceCart:
		if c.Version != 1 || c.Lines[0].Qty != 2 {
			t.Fatalf("alice's topic carried %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("alice's cart update never came")
	}
	// cart.get answers the same cart; bob's is still empty.
	if res, err := cb.Request(ctx, "cart.get", nil); err != nil || !strings.Contains(string(res), `"lines":[]`) {
		t.Fatalf("bob's cart.get: %s %v", res, err)
	}

	if _, err := cb.Publish(ctx, app.CartTopic("bob"), []byte(`{"lines":[]}`)); serverCode(err) != "forbidden" {
		t.Fatalf("bob publishing to his own cart topic: %v, want forbidden", err)
	}
	if _, err := cb.Publish(ctx, app.Lobby, []byte(`{"text":"hi"}`)); err != nil {
		t.Fatalf("bob publishing to the lobby: %v", err)
	}
	if _, err := cb.Request(ctx, "echo", []byte(`1`)); serverCode(err) != "forbidden" {
		t.Fatalf("echo: %v, want forbidden", err)
	}
	if _, err := cb.Presence(ctx, app.CartTopic("alice")); serverCode(err) != "forbidden" {
		t.Fatalf("presence of alice's cart: %v, want forbidden", err)
	}
	if !cb.State().Ready || !ca.State().Ready {
		t.Fatalf("a refusal cost a connection: alice %+v bob %+v", ca.State(), cb.State())
	}
	// Bob joins the lobby and takes an update on it: his connection writes
	// in order, so anything misrouted to him before (alice's cart update
	// came long before) has arrived by then.
	lobby := make(chan struct{}, 1)
	if _, err := cb.Subscribe(ctx, app.Lobby, nil, func(client.Update) {
		select {
		case lobby <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, cb, app.Lobby)
	if _, err := ca.Publish(ctx, app.Lobby, []byte(`{"text":"after"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lobby:
	case <-time.After(5 * time.Second):
		t.Fatal("bob's lobby update never came")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, topic := range got["bob"] {
		if topic == app.CartTopic("alice") {
			t.Fatalf("bob received alice's cart: %v", got["bob"])
		}
	}
}

// cart.add's refusals arrive as typed errors with the app's code and
// message, and change nothing.
func TestCartAddErrors(t *testing.T) {
	_, hs := start(t, app.Config{})
	c := login(t, hs.URL, "carol").dial(t, native.Options{})
	ctx := t.Context()
	for _, tc := range []struct{ params, code, msg string }{
		{`{"sku":"apple","qty":0}`, "invalid_qty", "qty must be 1 to 10"},
		{`{"sku":"apple","qty":11}`, "invalid_qty", "qty must be 1 to 10"},
		{`{"sku":"apple","qty":-1}`, "invalid_qty", "qty must be 1 to 10"},
		{`{"sku":"kiwi","qty":1}`, "unknown_sku", "no such product"},
		{`{"sku":"apple","qty":"two"}`, "bad_params", `params are {"sku": string, "qty": number}`},
		{`[1,2]`, "bad_params", `params are {"sku": string, "qty": number}`},
	} {
		_, err := c.Request(ctx, "cart.add", []byte(tc.params))
		var se *client.ServerError
		if !errors.As(err, &se) || se.Code != tc.code || se.Message != tc.msg {
			t.Errorf("cart.add %s: %v, want %s: %s", tc.params, err, tc.code, tc.msg)
		}
	}
	// 9 adds of 10 fill a line to 90; a tenth is over MaxQtyPerLine.
	for i := range 9 {
		if _, err := c.Request(ctx, "cart.add", []byte(`{"sku":"fig","qty":10}`)); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if _, err := c.Request(ctx, "cart.add", []byte(`{"sku":"fig","qty":10}`)); serverCode(err) != "cart_full" {
		t.Fatalf("a line past %d: %v, want cart_full", app.MaxQtyPerLine, err)
	}
	res, err := c.Request(ctx, "cart.get", nil)
	if err != nil {
		t.Fatal(err)
	}
	var cart app.Cart
	json.Unmarshal(res, &cart)
	if cart.Version != 9 || len(cart.Lines) != 1 || cart.Lines[0].Qty != 90 {
		t.Fatalf("after the refusals the cart is %+v, want 90 figs at version 9", cart)
	}
}

// Who gets a ticket: only a signed-in user with a good cookie, through the
// app's guarded endpoints.
func TestLoginAndTickets(t *testing.T) {
	_, hs := start(t, app.Config{})
	hc := &http.Client{Timeout: 5 * time.Second}
	post := func(path, ct, body string, cookie *http.Cookie) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post("/login", "application/json", `{"user":"mallory"}`, nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login of an unknown user: %d", r.StatusCode)
	}
	if r := post("/login", "application/x-www-form-urlencoded", `user=alice`, nil); r.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("a form login (what a cross-site form sends): %d", r.StatusCode)
	}
	r := post("/login", "application/json", `{"user":"alice"}`, nil)
	var sess *http.Cookie
	for _, c := range r.Cookies() {
		if c.Name == app.SessionCookie {
			sess = c
		}
	}
	if r.StatusCode != http.StatusOK || sess == nil || !sess.HttpOnly || sess.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d, cookie %+v", r.StatusCode, sess)
	}
	if r := post("/auth/token", "application/json", `{}`, nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a ticket without a cookie: %d", r.StatusCode)
	}
	forged := *sess
	forged.Value = strings.Replace(sess.Value, "alice.", "bob.", 1)
	if r := post("/auth/token", "application/json", `{}`, &forged); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a ticket with a cookie edited to name bob: %d", r.StatusCode)
	}
	if r := post("/auth/token", "application/json", `{}`, sess); r.StatusCode != http.StatusOK {
		t.Fatalf("a ticket with the cookie: %d", r.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/auth/token", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	req.AddCookie(sess)
	if resp, err := hc.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a ticket asked from another origin: %v %v", resp, err)
	}
	// Without a token a connection is never served (Auth required).
	c, err := native.Dial(t.Context(), "ws"+strings.TrimPrefix(hs.URL, "http")+"/realtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if err := c.WaitReady(ctx); err == nil {
		t.Fatal("a connection without a token got READY")
	}
}

// Logout ends the user's realtime connections with 4003 (terminal for the
// client) and its cookie no longer gets a ticket.
func TestLogoutDisconnects(t *testing.T) {
	_, hs := start(t, app.Config{})
	u := login(t, hs.URL, "alice")
	c := u.dial(t, native.Options{})
	if code, body := u.post(t, "/logout", `{}`); code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := c.WaitState(ctx, func(s client.State) bool { return s.Ended == client.Forbidden }); err != nil {
		t.Fatalf("after logout: %v (state %+v)", err, c.State())
	}
	if _, err := u.token(t.Context(), false); err == nil {
		t.Fatal("a ticket after logout")
	}
}

// JWT mode: the app mints HS256 JWTs that wsready verifies, and before
// their exp the client fetches a fresh one and sends it on the live
// connection (in-band refresh; a 4001 at exp if that failed), going on
// without losing an update.
func TestJWTRefresh(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	a, hs := start(t, app.Config{Tokens: app.TokensJWT, JWTLife: 2 * time.Second, JWTSecret: secret})
	u := login(t, hs.URL, "bob")
	tok, err := u.token(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{"HS256"})); err != nil || claims["sub"] != "bob" {
		t.Fatalf("the app's JWT: %v %v", claims, err)
	}
	var mu sync.Mutex
	var seqs []int64
	c := u.dial(t, native.Options{})
	if _, err := c.Subscribe(t.Context(), app.Lobby, nil, func(up client.Update) {
		mu.Lock()
		seqs = append(seqs, up.Seq)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, c, app.Lobby)
	// Publish, one every 100 ms, across two expiries of the 2 s JWTs
	// (about 5 s; 20 s at most).
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	n := 0
	refreshes := func() int { st := c.Stats(); return st.Refreshes + st.TokenRefreshes }
	for ; refreshes() < 2; n++ {
		if n == 200 {
			t.Fatalf("token refreshes %d over %d s of %v JWTs, want 2 or more", refreshes(), n/10, 2*time.Second)
		}
		if _, err := a.Server().Publish(t.Context(), app.Lobby, []byte(`{"text":"tick"}`)); err != nil {
			t.Fatalf("publish %d: %v", n, err)
		}
		<-tick.C
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitState(ctx, func(s client.State) bool { return s.Ready }); err != nil {
		t.Fatal(err)
	}
	var got []int64
	if !eventually(5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		got = append(got[:0], seqs...)
		return len(got) >= n
	}) {
		t.Fatalf("got %d of %d lobby updates: %v", len(got), n, got)
	}
	for i, s := range got {
		if s != int64(i+1) || len(got) != n {
			t.Fatalf("lobby seqs %v, want 1..%d once each", got, n)
		}
	}
}

// The page is served by wsready's StaticHandler: the .br the Vite plugin
// writes beside the wasm goes to a browser that takes brotli, the file
// itself to one that does not, each with its ETag.
func TestPagePrecompressed(t *testing.T) {
	_, hs := start(t, app.Config{Static: fstest.MapFS{
		"index.html":         {Data: []byte("<title>shop</title>")},
		"assets/app.wasm":    {Data: []byte("\x00asm raw")},
		"assets/app.wasm.br": {Data: []byte("brotli")},
		"assets/app.wasm.gz": {Data: []byte("gzipped")},
	}})
	for _, tc := range []struct{ path, accept, body, encoding string }{
		{"/", "br", "<title>shop</title>", ""},
		{"/assets/app.wasm", "gzip, deflate, br", "brotli", "br"},
		{"/assets/app.wasm", "gzip", "gzipped", "gzip"},
		{"/assets/app.wasm", "identity", "\x00asm raw", ""},
	} {
		req, _ := http.NewRequest("GET", hs.URL+tc.path, nil)
		req.Header.Set("Accept-Encoding", tc.accept)
		resp, err := http.DefaultTransport.RoundTrip(req) // not the client's transparent gzip
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != tc.body || resp.Header.Get("Content-Encoding") != tc.encoding || resp.Header.Get("ETag") == "" {
			t.Errorf("GET %s (Accept-Encoding %s): %d %q, Content-Encoding %q, ETag %q; want 200 %q, %q and an ETag",
				tc.path, tc.accept, resp.StatusCode, body, resp.Header.Get("Content-Encoding"), resp.Header.Get("ETag"), tc.body, tc.encoding)
		}
	}
}

// The app's routes beside wsready's: the page, the socket's path, the
// methods each answers.
func TestRoutes(t *testing.T) {
	_, hs := start(t, app.Config{Static: fstest.MapFS{"index.html": {Data: []byte("<title>shop</title>")}}})
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", http.StatusOK},
		{"HEAD", "/", http.StatusOK},
		{"POST", "/", http.StatusMethodNotAllowed},
		{"GET", "/missing.js", http.StatusNotFound},
		{"GET", "/realtime", http.StatusUpgradeRequired},
		{"GET", "/realtime/probe", http.StatusNoContent},
		{"GET", "/me", http.StatusUnauthorized},
		{"GET", "/login", http.StatusNotFound}, // POST only: a GET is the page's, which has no such file
		{"GET", "/auth/token", http.StatusNotFound},
		{"POST", "/me", http.StatusMethodNotAllowed},
		{"GET", "/healthz", http.StatusOK},
		{"GET", "/api/token", http.StatusNotFound}, // the demo's endpoints are not the app's
		{"GET", "/metrics", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, hs.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestConfigRefused(t *testing.T) {
	for _, cfg := range []app.Config{
		{SessionKey: []byte("short")},
		{SessionLife: -time.Second},
		{Tokens: "basic"},
		{Tokens: app.TokensJWT},
		{Tokens: app.TokensJWT, JWTLife: 25 * time.Hour},
		{Tokens: app.TokensJWT, JWTLife: time.Minute, JWTSecret: []byte("short")},
		{JWTLife: time.Minute},
	} {
		if a, err := app.New(cfg); err == nil {
			a.Close()
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// Cookie mode (the default): the WebSocket upgrade's session cookie says
// who connects, through wsready's Identify hook; no token is sent. Through
// the real server with the cookie the app's login set: the welcome names
// the user, its own cart topic is served and another's refused; without a
// cookie (and no ticket) nothing is served.
func TestCookieModeNeedsNoToken(t *testing.T) {
	_, hs := start(t, app.Config{})
	u := login(t, hs.URL, "alice")
	wsURL := "ws" + strings.TrimPrefix(hs.URL, "http") + "/realtime"
	base, _ := url.Parse(hs.URL)
	hdr := http.Header{}
	for _, c := range u.hc.Jar.Cookies(base) {
		hdr.Add("Cookie", c.String())
	}
	if len(hdr) == 0 {
		t.Fatal("the login set no cookie")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	read := func(ws *websocket.Conn, typ string) map[string]any {
		t.Helper()
		for {
			var m map[string]any
			if err := wsjson.Read(ctx, ws, &m); err != nil {
				t.Fatalf("waiting for %s: %v", typ, err)
			}
			if m["type"] == typ {
				return m
			}
		}
	}
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if w := read(ws, "welcome"); w["user"] != "alice" {
		t.Fatalf("welcome %v, want alice", w)
	}
	wsjson.Write(ctx, ws, map[string]string{"type": "subscribe", "topic": app.CartTopic("alice")})
	if m := read(ws, "subscribed"); m["topic"] != app.CartTopic("alice") {
		t.Fatalf("subscribed %v", m)
	}
	wsjson.Write(ctx, ws, map[string]string{"type": "subscribe", "topic": app.CartTopic("bob")})
	if m := read(ws, "error"); m["topic"] != app.CartTopic("bob") || m["code"] != "forbidden" {
		t.Fatalf("bob's cart: %v", m)
	}

	anon, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.CloseNow()
	wsjson.Write(ctx, anon, map[string]string{"type": "subscribe", "topic": app.Lobby})
	var m map[string]any
	for err == nil {
		err = wsjson.Read(ctx, anon, &m)
		if err == nil && m["type"] == "welcome" {
			t.Fatalf("served without a cookie or a token: %v", m)
		}
	}
	if code := websocket.CloseStatus(err); code != 4003 {
		t.Fatalf("without a cookie: %v, want 4003", err)
	}
}
