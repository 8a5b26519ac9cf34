//go:build !js

// The README's Go server snippet ("Run the server for real"): the lines
// between the snippet markers are copied into the README, and
// readme_test.go (go test ./, in make test) fails when the copy and these
// lines differ. go vet ./... compiles it, and the same test runs it with
// ../client.

// snippet:begin server
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/wsready/wsready/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the address to listen on")
	flag.Parse()
	srv, err := server.New(&server.Options{
		AllowedHosts:   []string{"app.example.com"}, // the names clients use, besides loopback's
		OriginPatterns: []string{"app.example.com"}, // pages of other origins that may connect
		Methods: map[string]server.Method{ // what the app answers; its errors reach clients typed
			"echo": func(ctx context.Context, call *server.Call) (any, error) {
				return call.Params, nil // json.RawMessage: sent as it is
			},
		},
		// Subscribes and requests: anyone (an Authorize hook would decide).
		// Publishes: on, but only where AuthorizePublish allows; Authorize
		// is never asked about them. Who is signed in comes from Identify
		// (your own session cookie on the upgrade) or a ticket, as
		// docs/auth.md shows; here everyone is anonymous, so no one may.
		Publish: true,
		AuthorizePublish: func(ctx context.Context, id server.Identity, a server.Action) error {
			if id.Anonymous() || a.Topic != "notes."+id.User { // each signed-in user posts to its own topic
				return &server.Error{Code: "forbidden", Message: "post to your own notes topic"}
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err) // names every option it refuses
	}
	defer srv.Close()

	go func() { // the application's own data, on a topic clients subscribe to
		for t := range time.Tick(time.Second) {
			srv.Publish(context.Background(), "clock", fmt.Appendf(nil, `{"unixMs":%d}`, t.UnixMilli()))
		}
	}()

	mux := http.NewServeMux()
	rt := srv.Handler() // the WebSocket endpoint, and under /realtime/ the HTTP fallback for blocked WebSockets
	mux.Handle("/realtime", rt)
	mux.Handle("/realtime/", rt)
	mux.Handle("GET /healthz", srv.HealthHandler())
	hs := srv.HTTPServer(mux) // with the Options' header and idle timeouts
	hs.Addr = *addr
	log.Fatal(hs.ListenAndServe())
}

// snippet:end server
