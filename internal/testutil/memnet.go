//go:build !js

package testutil

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// memListener is an in-memory network: each dial is one net.Pipe, whose
// other end Accept returns. Reads and writes on a pipe block on channels,
// which a testing/synctest bubble counts as durably blocked, so a test
// that runs the real server and the real client in a bubble over it runs
// on the bubble's fake clock: a 30 s wait takes no real time.
type memListener struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case l.conns <- b:
		return a, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// StartMemServer is StartServer on an in-memory network, for a test inside
// testing/synctest.Test (call it there): the server, its HTTP server and
// every connection live in the bubble. HTTPClient reaches it (pass it as
// the native client's websocket.DialOptions.HTTPClient, and for the API);
// Base and URL name it (http://127.0.0.1, ws://127.0.0.1/ws: a loopback
// name, which the server allows; no packet reaches the loopback). tb's cleanup closes it.
func StartMemServer(tb testing.TB, o server.Options, d ...demo.Options) (*Server, *http.Client) {
	tb.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := server.New(&o)
	if err != nil {
		tb.Fatal(err)
	}
	dm := newDemo(tb, srv, d)
	l := &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
	hs := &http.Server{Handler: dm.Handler()}
	served := make(chan struct{})
	go func() { defer close(served); hs.Serve(l) }()
	tr := &http.Transport{DialContext: l.dial}
	tb.Cleanup(func() {
		srv.Close()
		hs.Close()
		tr.CloseIdleConnections()
		<-served
	})
	return &Server{Server: srv, Demo: dm, Base: "http://127.0.0.1", URL: "ws://127.0.0.1/ws", tb: tb}, &http.Client{Transport: tr}
}
