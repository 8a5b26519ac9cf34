//go:build !js

package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/server"
)

// Mount the WebSocket endpoint at /realtime on the application's own mux,
// beside its own routes, and at /realtime/ for its HTTP transport (for
// clients whose WebSocket is blocked: /realtime/probe, /session, /sse,
// /send). A plain GET of the endpoint gets 426, and nothing else of the
// server's is mounted with it.
func ExampleServer_Handler() {
	srv, err := server.New(&server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the app's own route") })
	mux.Handle("/realtime", srv.Handler())
	mux.Handle("/realtime/", srv.Handler())
	hs := httptest.NewServer(mux) // in production: srv.HTTPServer(mux).ListenAndServe()
	defer hs.Close()

	resp, err := http.Get(hs.URL + "/hello")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))

	resp, err = http.Get(hs.URL + "/realtime")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("plain GET /realtime:", resp.StatusCode)

	resp, err = http.Get(hs.URL + "/realtime/probe")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("GET /realtime/probe:", resp.StatusCode)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/realtime", nil)
	if err != nil {
		panic(err)
	}
	defer ws.CloseNow()
	_, first, err := ws.Read(ctx)
	fmt.Println(string(first), err)
	// Output:
	// the app's own route
	// plain GET /realtime: 426
	// GET /realtime/probe: 204
	// {"type":"ping","intervalMs":25000} <nil>
}

// Say who is connecting from the application's own session: Identify
// reads the upgrade request's cookie (the HTTP transport's session request
// too), after the Origin check, so a page signed in by cookie needs no
// ticket. A connection it names is served at once as that user; one it does
// not name still needs a token (Auth is required by default with the hook),
// which is how a page of another origin connects; an error refuses with
// 4003.
func ExampleServer_Handler_identify() {
	sessions := map[string]string{"c00kie": "alice"} // the application's sessions, by cookie
	srv, err := server.New(&server.Options{
		Identify: func(r *http.Request) (server.Identity, error) {
			c, err := r.Cookie("session")
			if err != nil {
				return server.Identity{}, nil // no cookie: no one (a ticket may still come)
			}
			user, ok := sessions[c.Value]
			if !ok {
				return server.Identity{}, &server.Error{Code: "session_expired", Message: "sign in again"}
			}
			return server.Identity{User: user}, nil
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	mux := http.NewServeMux()
	mux.Handle("/realtime", srv.Handler())
	mux.Handle("/realtime/", srv.Handler())
	hs := httptest.NewServer(mux)
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dial := func(cookie string) {
		hdr := http.Header{"Cookie": {"session=" + cookie}} // a browser sends the page's cookie itself
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/realtime", &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			panic(err)
		}
		defer ws.CloseNow()
		for { // no auth frame is sent
			var m struct{ Type, User string }
			err := wsjson.Read(ctx, ws, &m)
			if ce := (websocket.CloseError{}); errors.As(err, &ce) {
				fmt.Println("closed", int(ce.Code), ce.Reason)
				return
			}
			if err != nil {
				panic(err)
			}
			if m.Type == "welcome" {
				fmt.Println("welcome", m.User)
				return
			}
		}
	}
	dial("c00kie")
	dial("stale")
	// Output:
	// welcome alice
	// closed 4003 sign in again
}

// Mount the ticket endpoint and the metrics where the application wants
// them. Each handler guards itself: the ticket endpoint takes only a
// same-origin POST of JSON, and every handler only the allowed Host names.
func ExampleServer_TicketHandler() {
	srv, err := server.New(&server.Options{
		Auth:         server.AuthRequired,
		IssueTickets: true, // or issue tickets from the application itself, signed with AuthKey
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	mux := http.NewServeMux()
	mux.Handle("/realtime", srv.Handler())
	mux.Handle("/auth/realtime-ticket", srv.TicketHandler())
	mux.Handle("/internal/metrics", srv.MetricsHandler())
	hs := httptest.NewServer(mux)
	defer hs.Close()

	resp, err := http.Post(hs.URL+"/auth/realtime-ticket", "application/json", strings.NewReader(`{"clientId":"user-42"}`))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("ticket:", resp.StatusCode, strings.Contains(string(body), `"token":`))

	resp, err = http.Post(hs.URL+"/auth/realtime-ticket", "text/plain", strings.NewReader(`{"clientId":"user-42"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("a form-like POST:", resp.StatusCode)

	resp, err = http.Get(hs.URL + "/internal/metrics")
	if err != nil {
		panic(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("metrics:", resp.StatusCode, strings.Contains(string(body), `wsready_connections_open{transport="ws"} 0`))
	// Output:
	// ticket: 200 true
	// a form-like POST: 415
	// metrics: 200 true
}

// Tell wsready who is connecting: Authenticate reads the application's own
// login cookie when the page asks for a ticket, and the ticket carries
// that Identity to the WebSocket connection that sends it (Auth is
// required by default with the hook). Authorize then sees it.
func ExampleOptions_authenticate() {
	logins := map[string]server.Identity{ // the application's sessions, by cookie
		"c00kie": {User: "alice", Tenant: "acme", Claims: map[string]string{"role": "admin"}},
	}
	srv, err := server.New(&server.Options{
		Authenticate: func(r *http.Request) (server.Identity, error) {
			c, err := r.Cookie("session")
			if err != nil {
				return server.Identity{}, errors.New("not logged in")
			}
			id, ok := logins[c.Value]
			if !ok {
				return server.Identity{}, &server.Error{Code: "session_expired", Message: "log in again"}
			}
			return id, nil
		},
		Authorize: func(_ context.Context, id server.Identity, a server.Action) error {
			if a.Kind == server.ActSubscribe && a.Topic != "user-"+id.User {
				return &server.Error{Code: "forbidden", Message: "not your topic"}
			}
			return nil
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	mux := http.NewServeMux()
	mux.Handle("/realtime", srv.Handler())
	mux.Handle("/realtime/ticket", srv.TicketHandler())
	hs := httptest.NewServer(mux)
	defer hs.Close()

	// The page asks for a ticket with its cookie (fetch sends it).
	post := func(cookie string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/realtime/ticket", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "session", Value: cookie})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var v struct{ Token, Error string }
		json.NewDecoder(resp.Body).Decode(&v)
		if v.Token == "" {
			return resp.StatusCode, v.Error
		}
		return resp.StatusCode, v.Token
	}
	fmt.Println(post(""))
	fmt.Println(post("stale"))
	_, ticket := post("c00kie")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/realtime", nil)
	if err != nil {
		panic(err)
	}
	defer ws.CloseNow()
	// A Go program speaks the protocol with coder/websocket's wsjson:
	// every frame is one JSON text message.
	wsjson.Write(ctx, ws, map[string]string{"type": "auth", "token": ticket})
	wsjson.Write(ctx, ws, map[string]string{"type": "subscribe", "topic": "user-alice"})
	wsjson.Write(ctx, ws, map[string]string{"type": "subscribe", "topic": "user-bob"})
	for range 10 {
		var m struct{ Type, User, Topic, Code string }
		if err := wsjson.Read(ctx, ws, &m); err != nil {
			panic(err)
		}
		switch m.Type {
		case "welcome":
			fmt.Println("welcome", m.User)
		case "subscribed":
			fmt.Println("subscribed", m.Topic)
		case "error":
			fmt.Println("refused", m.Topic, m.Code)
			return
		}
	}
	// Output:
	// 401 not authenticated
	// 401 log in again
	// welcome alice
	// subscribed user-alice
	// refused user-bob forbidden
}

// Let clients publish, by rules of the application's: Publish turns
// publishing on and AuthorizePublish says who may publish where (here each
// user to its own notes.<user> topic). Authorize is never asked about a
// publish, so rules written for subscribes do not let anyone post; with
// Authorize set and no AuthorizePublish every publish is refused.
func ExampleOptions_authorizePublish() {
	srv, err := server.New(&server.Options{
		Auth: server.AuthRequired,
		Authorize: func(_ context.Context, id server.Identity, a server.Action) error {
			if a.Kind == server.ActSubscribe && a.Topic != "notes."+id.User {
				return &server.Error{Code: "forbidden", Message: "not your topic"}
			}
			return nil
		},
		Publish: true,
		AuthorizePublish: func(_ context.Context, id server.Identity, a server.Action) error {
			if a.Topic != "notes."+id.User { // a.Kind is server.ActPublish
				return &server.Error{Code: "not_yours", Message: "post to your own notes"}
			}
			return nil
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ticket, _, err := srv.IssueTicket(server.Identity{User: "bob"}) // the application's sign-in hands it out
	if err != nil {
		panic(err)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		panic(err)
	}
	defer ws.CloseNow()
	wsjson.Write(ctx, ws, map[string]string{"type": "auth", "token": ticket})
	wsjson.Write(ctx, ws, map[string]any{"type": "publish", "id": 1, "topic": "notes.alice", "data": "hi"})
	wsjson.Write(ctx, ws, map[string]any{"type": "publish", "id": 2, "topic": "notes.bob", "data": "hi"})
	for answered := 0; answered < 2; {
		var m struct {
			Type   string
			ID     int
			Result json.RawMessage
			Error  *struct{ Code string }
		}
		if err := wsjson.Read(ctx, ws, &m); err != nil {
			panic(err)
		}
		if m.Type != "response" {
			continue
		}
		answered++
		if m.Error != nil {
			fmt.Println("publish", m.ID, "refused:", m.Error.Code)
		} else {
			fmt.Println("publish", m.ID, "stored:", string(m.Result))
		}
	}
	// Output:
	// publish 1 refused: not_yours
	// publish 2 stored: {"seq":1}
}

// Take JWTs from the application's identity provider instead of wsready's
// tickets: here HS256 with a shared secret (PublicKeyPEM takes an RSA or
// P-256 key, JWKSFile a key set). sub is the user, the tenant claim the
// tenant; exp closes the connection with 4001 when it passes, which makes
// the client fetch a new token.
func ExampleOptions_jwt() {
	secret := []byte("the identity provider's HS256 secret, 32+ bytes")
	srv, err := server.New(&server.Options{
		JWT:    &server.JWTOptions{HS256Secret: secret, TenantClaim: "org", Issuer: "https://id.example"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	mux := http.NewServeMux()
	mux.Handle("/realtime", srv.Handler())
	hs := httptest.NewServer(mux)
	defer hs.Close()

	// What the identity provider mints (github.com/golang-jwt/jwt/v5).
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "alice", "org": "acme", "iss": "https://id.example", "exp": exp.Unix(),
	}).SignedString(secret)
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/realtime", nil)
	if err != nil {
		panic(err)
	}
	defer ws.CloseNow()
	wsjson.Write(ctx, ws, map[string]string{"type": "auth", "token": token})
	for range 3 {
		var m struct {
			Type, User string
			ExpiresAt  int64
		}
		if err := wsjson.Read(ctx, ws, &m); err != nil {
			panic(err)
		}
		switch m.Type {
		case "welcome":
			fmt.Println("welcome", m.User)
		case "authenticated":
			fmt.Println("authenticated until exp:", m.ExpiresAt == exp.UnixMilli())
			return
		}
	}
	// Output:
	// welcome alice
	// authenticated until exp: true
}

// Behind a reverse proxy every client arrives from the proxy's address:
// list the proxy's network in TrustedProxies and the per-address limits
// (here MaxConnsPerIP) key by the client it names in X-Forwarded-For
// (or Forwarded). Here the proxy is httputil.ReverseProxy on loopback.
func ExampleOptions_trustedProxies() {
	srv, err := server.New(&server.Options{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		MaxConnsPerIP:  1,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	backend := httptest.NewServer(srv.Handler())
	defer backend.Close()
	target, _ := url.Parse(backend.URL)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target)) // appends to X-Forwarded-For
	defer proxy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var open []*websocket.Conn
	defer func() {
		for _, ws := range open {
			ws.Close(websocket.StatusNormalClosure, "")
		}
	}()
	// Each client as the proxy's own client would be: X-Forwarded-For
	// holds what came before it (here, the address this example claims).
	connect := func(client string) string {
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(proxy.URL, "http"), &websocket.DialOptions{
			HTTPHeader: http.Header{"X-Forwarded-For": {client}}})
		if err != nil {
			panic(err)
		}
		open = append(open, ws)
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return client + ": closed " + strconv.Itoa(int(websocket.CloseStatus(err)))
			}
			if strings.Contains(string(b), `"welcome"`) {
				return client + ": served"
			}
		}
	}
	fmt.Println(connect("203.0.113.1"))
	fmt.Println(connect("203.0.113.2"))
	fmt.Println(connect("203.0.113.1"))
	// Output:
	// 203.0.113.1: served
	// 203.0.113.2: served
	// 203.0.113.1: closed 1013
}

func ExampleMethod() {
	var (
		mu   sync.Mutex
		cart = map[string]int{} // the application's state
	)
	addToCart := func(ctx context.Context, call *server.Call) (any, error) {
		var p struct {
			Item string `json:"item"`
			Qty  int    `json:"qty"`
		}
		if err := json.Unmarshal(call.Params, &p); err != nil || p.Item == "" || p.Qty < 1 {
			return nil, &server.Error{Code: "bad_item", Message: "an item and a quantity of 1 or more"}
		}
		mu.Lock()
		defer mu.Unlock()
		if cart[p.Item]+p.Qty > 3 {
			return nil, &server.Error{Code: "out_of_stock", Message: "3 of each at most"}
		}
		cart[p.Item] += p.Qty
		return map[string]int{p.Item: cart[p.Item]}, nil // json.Marshal'ed
	}
	srv, err := server.New(&server.Options{
		Methods: map[string]server.Method{"cart.add": addToCart},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	res, err := c.Request(ctx, "cart.add", []byte(`{"item":"apple","qty":2}`))
	fmt.Println(string(res), err)
	_, err = c.Request(ctx, "cart.add", []byte(`{"item":"apple","qty":2}`))
	var se *client.ServerError
	fmt.Println(errors.As(err, &se), se.Code, se.Message)
	// Output:
	// {"apple":2} <nil>
	// true out_of_stock 3 of each at most
}

func ticketClient(ctx context.Context, base, user string, o *native.Options) *native.Client {
	if o == nil {
		o = &native.Options{}
	}
	o.Token = func(ctx context.Context, _ bool) (string, error) {
		resp, err := http.Post(base+"/ticket", "application/json", strings.NewReader(`{"clientId":"`+user+`"}`))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var v struct{ Token string }
		err = json.NewDecoder(resp.Body).Decode(&v)
		return v.Token, err
	}
	c, err := native.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/realtime", o)
	if err != nil {
		panic(err)
	}
	return c
}

// waitSubscribed waits until the server acknowledged c's subscription to
// topic. READY alone does not say it: a topic joined while the client is
// READY does not take READY away on its way (its TopicStats do say it).
func waitSubscribed(ctx context.Context, c *native.Client, topic string) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, t := range c.Topics() {
			if t.Topic == topic && t.Subscribed {
				return
			}
		}
		select {
		case <-ctx.Done():
			panic("not subscribed to " + topic)
		case <-tick.C:
		}
	}
}

func ticketServer(srv *server.Server) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/realtime", srv.Handler())
	mux.Handle("/ticket", srv.TicketHandler())
	return httptest.NewServer(mux)
}

func ExampleServer_Presence() {
	srv, err := server.New(&server.Options{Auth: server.AuthRequired, IssueTickets: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	hs := ticketServer(srv)
	defer func() { srv.Close(); hs.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, user := range []string{"bob", "alice", "alice"} {
		c := ticketClient(ctx, hs.URL, user, nil)
		defer c.Close()
		if _, err := c.Subscribe(ctx, "room:lobby", nil, nil); err != nil {
			panic(err)
		}
		waitSubscribed(ctx, c, "room:lobby")
	}
	res, err := srv.Presence(ctx, "room:lobby")
	for _, u := range res.Users {
		fmt.Println(u.User, u.Conns)
	}
	fmt.Println("users:", res.Total, "truncated:", res.Truncated, err)
	// Output:
	// alice 2
	// bob 1
	// users: 2 truncated: false <nil>
}

func ExampleServer_Disconnect() {
	srv, err := server.New(&server.Options{Auth: server.AuthRequired, IssueTickets: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	hs := ticketServer(srv)
	defer func() { srv.Close(); hs.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := ticketClient(ctx, hs.URL, "mallory", nil)
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	if err := srv.Disconnect(ctx, "mallory", "account suspended"); err != nil {
		panic(err)
	}
	c.WaitState(ctx, func(s client.State) bool { return s.Ended != client.NotEnded })
	var ended *native.EndedError
	if err := c.WaitReady(ctx); errors.As(err, &ended) {
		fmt.Println(ended.Ended, ended.Code)
	}
	// Output: forbidden 4003
}

func ExampleServer_Publish() {
	srv, err := server.New(&server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	got := make(chan client.Update, 1)
	if _, err := c.Subscribe(ctx, "orders/eu", nil, func(u client.Update) { got <- u }); err != nil {
		panic(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	seq, err := srv.Publish(ctx, "orders/eu", []byte(`{"order":7,"status":"shipped"}`))
	fmt.Println("published", seq, err)
	u := <-got
	fmt.Println(u.Topic, u.Seq, string(u.Data))
	// Output:
	// published 1 <nil>
	// orders/eu 1 {"order":7,"status":"shipped"}
}
