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
// is set) and the demo over it with d (at most one; none: the demo's
// defaults); tb's cleanup closes it. An error from server.New or demo.New
// fails tb.
func StartServer(tb testing.TB, o server.Options, d ...demo.Options) *Server {
	tb.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := server.New(&o)
	if err != nil {
		tb.Fatal(err)
	}
	dm := newDemo(tb, srv, d)
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

// newDemo attaches the demo to srv with d (at most one); an error fails tb
// and closes srv.
func newDemo(tb testing.TB, srv *server.Server, d []demo.Options) *demo.Demo {
	tb.Helper()
	if len(d) > 1 {
		srv.Close()
		tb.Fatalf("testutil: %d demo.Options, want at most one", len(d))
	}
	var o *demo.Options
	if len(d) == 1 {
		o = &d[0]
	}
	dm, err := demo.New(srv, nil, o)
	if err != nil {
		srv.Close()
		tb.Fatal(err)
	}
	return dm
}
