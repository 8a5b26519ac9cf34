//go:build !js

// Package testutil holds what the tests of several packages share: the
// real server on a loopback port with the demo's switches.
package testutil

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// Server is the real server behind httptest on loopback, serving the
// demo's site as wsready serve does (demo.Demo.Handler): the WebSocket at
// /ws, the HTTP API under /api/, /metrics, /healthz.
type Server struct {
	*server.Server
	Demo *demo.Demo
	Base string // http://127.0.0.1:PORT
	URL  string // the WebSocket endpoint, ws://127.0.0.1:PORT/ws
	tb   testing.TB
}

// StartServer starts a server with o (its logs discarded unless o.Logger
// is set); tb's cleanup closes it. An error from server.New fails tb.
func StartServer(tb testing.TB, o server.Options) *Server {
	tb.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := server.New(&o)
	if err != nil {
		tb.Fatal(err)
	}
	dm := demo.New(srv, nil)
	hs := httptest.NewServer(dm.Handler())
	tb.Cleanup(func() { srv.Close(); hs.Close() })
	return &Server{Server: srv, Demo: dm, Base: hs.URL, URL: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", tb: tb}
}

// Set flips a demo switch by its name in the server's table
// (demo.Demo.Set); an error fails the test. Call it from the test's own
// goroutine.
func (s *Server) Set(name string, value any) {
	s.tb.Helper()
	if err := s.Demo.Set(name, value); err != nil {
		s.tb.Fatal(err)
	}
}
