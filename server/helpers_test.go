//go:build !js

package server

import (
	"io"
	"log/slog"
	"testing"
)

// Helpers the server's tests share.

// mustNew is New for tests: an error fails tb.
func mustNew(tb testing.TB, o *Options) *Server {
	tb.Helper()
	s, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// discard is a logger that drops every line.
func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
