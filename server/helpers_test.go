//go:build !js

package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/fetch"
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

// testClock is an Options.Now a test moves by hand (advance), so a test
// of a rate, a window or a check interval waits on no wall time. It starts
// at the wall clock's now, so tokens minted by the real clock are current.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// discard is a logger that drops every line.
func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// getJSON GETs url and decodes its JSON body into v; a transport error,
// a status other than 200 or a body that does not decode fails t.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := fetch.JSON(context.Background(), nil, url, v); err != nil {
		t.Fatal(err)
	}
}

// getText GETs url and returns its body; a transport error or a status
// other than 200 fails t.
func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return string(body)
}

// getStatus GETs url with Host header host ("": the URL's) and returns
// the status; a transport error fails t.
func getStatus(t *testing.T, url, host string) int {
	t.Helper()
	code, err := fetch.Status(context.Background(), nil, url, host)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// logBuf collects a logger's text lines.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines returns the lines at level (ERROR, WARN, ...) holding every one of
// the given strings.
func (b *logBuf) lines(level string, with ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if !strings.Contains(l, "level="+level) {
			continue
		}
		all := true
		for _, w := range with {
			all = all && strings.Contains(l, w)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
