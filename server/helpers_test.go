//go:build !js

package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
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

// getJSON GETs url and decodes its JSON body into v; a transport error,
// a status other than 200 or a body that does not decode fails t.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
