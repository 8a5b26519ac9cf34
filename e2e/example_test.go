//go:build !js

package e2e

import (
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

// The Vite example, built by make example from the npm tarball, served
// from its own origin: the package's wasm and wasm_exec.js were emitted by
// Vite, and the app reaches READY, gets the feed and a request's answer
// from the real server on another origin.
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
	app := &http.Server{Handler: http.FileServer(http.Dir(dist))}
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
}
