//go:build !js

package e2e

import (
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

// The Vite example, built by make example from the npm tarball, served
// from its own origin: the package's wasm and wasm_exec.js were emitted by
// Vite, and the app reaches READY, gets the feed and a request's answer
// from the real server on another origin. The example's build preloads the
// wasm and precompresses it: the page asks for it once (load's fetch takes
// the preload) and gets the brotli file.
func TestViteExample(t *testing.T) {
	const dist = "../examples/vite/dist"
	if _, err := os.Stat(dist + "/index.html"); err != nil {
		t.Fatal("examples/vite/dist is missing: run make example (make test does)")
	}
	env, err := StartServer(&server.Options{OriginPatterns: []string{"127.0.0.1:*"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wasmGets atomic.Int32
	static := precompressedStatic(dist)
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".wasm") {
			wasmGets.Add(1)
		}
		static.ServeHTTP(w, r)
	})}
	go app.Serve(ln)
	t.Cleanup(func() { app.Close() })
	b, err := NewBrowser(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ws := "ws" + env.Base[len("http"):] + "/ws"
	if err := b.Navigate("http://" + ln.Addr().String() + "/?ws=" + ws); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.exampleResult && (exampleResult.error || (exampleResult.echo && exampleResult.updates > 0))", 30*time.Second); err != nil {
		r, _ := Eval[map[string]any](b, "window.exampleResult")
		t.Fatalf("%v: %v", err, r)
	}
	r, err := Eval[map[string]any](b, "exampleResult")
	if err != nil {
		t.Fatal(err)
	}
	echo, _ := r["echo"].(map[string]any)
	if r["error"] != nil || r["ready"] != true || echo["from"] != "vite" || r["version"] != r["wasmVersion"] {
		t.Fatalf("example result %v", r)
	}
	if n := wasmGets.Load(); n != 1 {
		t.Errorf("the wasm was asked for %d times, want 1 (the preload, taken by load's fetch)", n)
	}
	wasmFetchedOnceBrotli(t, b)
}

// wasmFetchedOnceBrotli checks, from the page's resource timing, that it
// fetched the wasm once, by the preload link, and brotli-compressed (under a
// quarter of its size): the preload wsready/vite adds, taken by load's
// fetch, and the .br it writes, served.
func wasmFetchedOnceBrotli(t *testing.T, b *Browser) {
	t.Helper()
	enc, err := Eval[[]any](b, `performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.wasm')).flatMap((e) => [e.initiatorType, e.encodedBodySize, e.decodedBodySize])`)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != 3 || enc[0] != "link" || enc[1].(float64) <= 0 || enc[1].(float64) > 0.25*enc[2].(float64) {
		t.Errorf("the wasm's resource timing [initiator encoded decoded] = %v: want one fetch, by the preload link, brotli (under a quarter of its size)", enc)
	}
}
