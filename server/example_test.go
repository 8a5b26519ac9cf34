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
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/server"
)

// Mount the WebSocket endpoint at /realtime on the application's own mux,
// beside its own routes. Handler serves the WebSocket only: a plain GET
// gets 426, and nothing else of the server's is mounted with it.
func ExampleServer_Handler() {
	srv, err := server.New(&server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the app's own route") })
	mux.Handle("/realtime", srv.Handler())
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
	// {"type":"ping","intervalMs":1000} <nil>
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
	fmt.Println("metrics:", resp.StatusCode, strings.Contains(string(body), "wsready_connections_open 0"))
	// Output:
	// ticket: 200 true
	// a form-like POST: 415
	// metrics: 200 true
}

// An application's method: cart.add answers from the application's own
// state, and refuses with a typed error the client can read (an
// *server.Error's code and message; any other error would reach it as
// internal, its text kept from the client).
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

// ticketClient dials the server at base as user, with a ticket from its
// ticket endpoint at base+"/ticket" (Options.IssueTickets: the demo's way;
// an application issues its own).
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

// ticketServer serves srv's WebSocket at /realtime and its ticket endpoint
// at /ticket.
func ticketServer(srv *server.Server) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/realtime", srv.Handler())
	mux.Handle("/ticket", srv.TicketHandler())
	return httptest.NewServer(mux)
}

// Presence: who is subscribed to a topic, with each user's connection
// count, as the application reads it (clients ask with the wsready.presence
// request, and get join and leave events with subscribe's presence: true).
// Anonymous connections are not counted. With several nodes on one NATS
// (Options.NATS, or a JetStream History) it is every node's.
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
		if err := c.WaitReady(ctx); err != nil { // the subscribe acknowledged
			panic(err)
		}
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

// Disconnect closes every connection of a user, on every node sharing
// the server's NATS, with 4003 and the application's reason: a client
// (stage 6 and later) stops, forbidden, and does not reconnect. Revoke
// does the same and also refuses the user's tickets for a while.
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

// Publish from the application's own code: every subscriber of the topic,
// on every node sharing its History, gets the update, in seq order.
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
