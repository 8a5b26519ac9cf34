//go:build !js

package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/coder/websocket"
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
	fmt.Println("metrics:", resp.StatusCode, strings.Contains(string(body), `wsready_connections_open{transport="ws"} 0`))
	// Output:
	// ticket: 200 true
	// a form-like POST: 415
	// metrics: 200 true
}
