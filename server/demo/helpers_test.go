//go:build !js

package demo

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/fetch"
	"github.com/wsready/wsready/server"
)

// fixture is a real server with the demo attached, its site served on
// loopback as wsready serve serves it.
type fixture struct {
	t    *testing.T
	srv  *server.Server
	demo *Demo
	hs   *httptest.Server
}

// newFixture serves the demo's site over a server with o (nil: the
// fixture's defaults) and the demo with do (nil: a feed every 20ms),
// without files.
func newFixture(t *testing.T, o *server.Options, do *Options) *fixture {
	t.Helper()
	if o == nil {
		o = &server.Options{}
	}
	if do == nil {
		do = &Options{FeedInterval: 20 * time.Millisecond}
	}
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(srv, nil, do)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return &fixture{t: t, srv: srv, demo: d, hs: hs}
}

// set flips a demo switch (Demo.Set); an error fails the test.
func (f *fixture) set(name string, value any) {
	f.t.Helper()
	if err := f.demo.Set(name, value); err != nil {
		f.t.Fatal(err)
	}
}

// getJSON GETs url into v; an error or a status other than 200 fails t.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := fetch.JSON(context.Background(), nil, url, v); err != nil {
		t.Fatal(err)
	}
}

// post POSTs body to url with content type ctype and returns the status
// and the answer's {"error"}.
func post(t *testing.T, url, ctype, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, ctype, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}
