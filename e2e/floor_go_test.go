//go:build !js

package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/web"
)

// Two floors under the floor page's (measureFloorLoad), measured the same
// way (LoadBreakdownURL, loadTrials cold loads per link): how much of a
// load to READY is the browser's, the server's and the socket's with no
// wasm at all, and how much any Go program compiled to wasm costs before
// it runs a line of wsready. What the floor page spends beyond them is
// wsready's own.

// noWasmPage does by hand, in a plain browser WebSocket, the least the
// client does to be READY at stage 7 without a token: dial the endpoint,
// send on open the subscribe the core sends for the demo's topic (cold: no
// cursor; the bytes protocol.Encode writes), and wait for the server's
// first ping (the protocol layer) and subscribed (the service layer). It
// puts the marks wsready.js puts at those moments, so BreakdownTable and
// readyMs read it as they read the floor page.
const noWasmPage = `<!doctype html>
<meta charset="utf-8">
<title>wsready: the floor without wasm</title>
<script type="module">
  const mark = (name) => performance.mark('wsready:' + name);
  const seen = new Set();
  const step = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    mark(name);
    if (!seen.has('ready') && ['event:open', 'event:ping', 'event:subscribed'].every((n) => seen.has(n))) {
      seen.add('ready');
      mark('ready');
    }
  };
  const url = new URLSearchParams(location.search).get('ws');
  mark('event:dial');
  const ws = new WebSocket(url);
  ws.onopen = () => {
    step('event:open');
    ws.send('{"type":"subscribe","topic":"feed"}');
  };
  ws.onmessage = (e) => {
    let m;
    try { m = JSON.parse(e.data); } catch { return; }
    if (m.type === 'ping') step('event:ping');
    else if (m.type === 'subscribed' && m.topic === 'feed') step('event:subscribed');
  };
</script>
`

// helloGo is Go's hello world for the browser: it marks that it started
// and blocks (select{}: in js/wasm the runtime then returns to the event
// loop; it is not a deadlock). Only syscall/js: the least any Go client
// compiled to wasm carries.
const helloGo = `package main

import "syscall/js"

func main() {
	js.Global().Get("performance").Call("mark", "wsready:go-started")
	select {}
}
`

// helloWasm is helloGo's wasm's name: collectMarks reads the resource
// timing of /wsready*.wasm, so the name starts with wsready.
const helloWasm = "wsready-hello.wasm"

// helloPage loads helloWasm as floorPage loads wsready.wasm (compiled,
// streaming, from an inline script in the head) and runs it as wsready.js's
// load() does (wasm_exec.js imported, the module instantiated with its
// imports, go.run), with load()'s marks. go.run runs main until it blocks,
// so the program's mark is in when it returns; the page then marks
// 'wsready:ready' only to end LoadBreakdownURL's wait (measureHelloLoad
// drops it: this floor's READY is Go started).
const helloPage = `<!doctype html>
<meta charset="utf-8">
<title>wsready: Go's hello world</title>
<script>
  window.helloWasm = WebAssembly.compileStreaming(fetch('` + helloWasm + `').then((r) => { performance.mark('wsready:wasm-response'); return r; }));
  window.helloWasm.catch(() => {});
</script>
<script type="module">
  performance.mark('wsready:load');
  await import('./wasm_exec.js');
  performance.mark('wsready:wasm-exec');
  const go = new Go();
  const instance = await WebAssembly.instantiate(await window.helloWasm, go.importObject);
  performance.mark('wsready:instantiated');
  go.run(instance);
  if (performance.getEntriesByName('wsready:go-started').length === 0) throw new Error('the Go program returned without its mark');
  performance.mark('wsready:ready');
</script>
`

// measureNoWasmLoad loads noWasmPage as measureFloorLoad loads floorPage
// at stage 7: the page from one origin, the demo server's endpoint on
// another.
func measureNoWasmLoad() (string, error) {
	env, err := StartServer(&server.Options{OriginPatterns: []string{"127.0.0.1:*"}})
	if err != nil {
		return "", err
	}
	defer env.Close()
	base, stop, err := serveApp(htmlPage(noWasmPage))
	if err != nil {
		return "", err
	}
	defer stop()
	url := fmt.Sprintf("%s/nowasm.html?ws=ws%s/ws", base, env.Base[len("http"):])
	fast, slow, err := loadLinks(url, []string{"wsready:event:dial", "wsready:event:open", "wsready:event:ping", "wsready:event:subscribed", "wsready:ready"})
	if err != nil {
		return "", fmt.Errorf("the page without wasm: %w", err)
	}
	fm, fw := medianWorst(readyMs(fast))
	sm, sw := medianWorst(readyMs(slow))
	var md strings.Builder
	fmt.Fprintf(&md, "\n#### No wasm\n\nThe browser, server and socket floor (e2e's noWasmPage): an inline module script opens a plain WebSocket to the same endpoint, sends on open the subscribe the client sends for the demo's topic and marks READY at the first ping and the subscribed (stage 7's layers), with no wasm and no wsready.js; what the floor page spends beyond it at stage 7 is the wasm's and the client's. READY on loopback: median %d ms, worst %d ms (%v); on 10 Mbit/s, 40 ms: median %d ms, worst %d ms (%v).\n\n", fm, fw, readyMs(fast), sm, sw, readyMs(slow))
	md.WriteString(BreakdownTable(LoadRun{"no wasm, loopback", fast}) + "\n" + BreakdownTable(LoadRun{"no wasm, 10 Mbit/s, 40 ms", slow}))
	return md.String(), nil
}

// measureHelloLoad builds helloGo for js/wasm as make wasm builds the
// client (-trimpath -ldflags=-s; WASM_FLAGS' -gcflags name wsready's
// packages and the runtime's maps, which hello barely uses, and WASM_ENV's
// collector is not taken), compresses it with the tool make wasm runs
// (internal/tools/precompress: brotli 11, gzip), and loads helloPage as
// measureFloorLoad loads floorPage: the files from StaticHandler (brotli,
// as the demo server sends the client's wasm, with the same wasm_exec.js)
// on one origin. Nothing connects: the demo server only serves the files.
func measureHelloLoad() (string, error) {
	dir, err := os.MkdirTemp("", "wsready-hello-")
	if err != nil {
		return "", fmt.Errorf("failed to make a temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	rawBytes, brBytes, err := buildHello(dir)
	if err != nil {
		return "", err
	}
	env, err := StartServer(nil)
	if err != nil {
		return "", err
	}
	defer env.Close()
	base, stop, err := serveApp(env.Srv.StaticHandler(os.DirFS(dir)))
	if err != nil {
		return "", err
	}
	defer stop()
	url := base + "/hello.html"
	fast, slow, err := loadLinks(url, []string{"wsready:load", "wsready:wasm-exec", "wsready:instantiated", "wsready:go-started"})
	if err != nil {
		return "", fmt.Errorf("Go's hello world: %w", err)
	}
	for _, l := range append(slices.Clone(fast), slow...) {
		if l["wasm:bytes"] != float64(brBytes) || l["wasm:fetches"] != 1 {
			return "", fmt.Errorf("Go's hello world: the wasm came in %.0f fetches of %.0f bytes, want 1 of %d (brotli): %v", l["wasm:fetches"], l["wasm:bytes"], brBytes, l)
		}
		// The page's end mark, not a moment of this floor (helloPage).
		delete(l, "wsready:ready")
	}
	fm, fw := medianWorst(goStartedMs(fast))
	sm, sw := medianWorst(goStartedMs(slow))
	var md strings.Builder
	fmt.Fprintf(&md, "\n#### Go's hello world\n\nThe floor of any Go client in wasm (e2e's helloGo: package main, syscall/js only, one `performance.mark` then `select {}`; built at test time as make wasm builds the client, GOOS=js GOARCH=wasm -trimpath -ldflags=-s, compressed by make wasm's precompress, served with the client's wasm_exec.js from StaticHandler and loaded as the floor page loads the client; no socket): what the floor page spends beyond it is wsready's own. Its READY is Go started (the program's first line; the \"load() starts\" row is the page's module script starting): on loopback median %d ms, worst %d ms (%v); on 10 Mbit/s, 40 ms: median %d ms, worst %d ms (%v). The wasm: %d bytes brotli (%d raw).\n\n", fm, fw, goStartedMs(fast), sm, sw, goStartedMs(slow), brBytes, rawBytes)
	md.WriteString(BreakdownTable(LoadRun{"hello world, loopback", fast}) + "\n" + BreakdownTable(LoadRun{"hello world, 10 Mbit/s, 40 ms", slow}))
	return md.String(), nil
}

// buildHello writes into dir helloPage (hello.html), helloGo built for
// js/wasm (helloWasm) with its .br and .gz, and the client's wasm_exec.js,
// and returns the wasm's size and its brotli's, in bytes. The go on PATH builds it, as it
// runs the test.
func buildHello(dir string) (raw, br int64, err error) {
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(helloGo), 0o644); err != nil {
		return 0, 0, fmt.Errorf("failed to write the hello world: %w", err)
	}
	wasm := filepath.Join(dir, helloWasm)
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", wasm, "main.go")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("failed to build the hello world for js/wasm: %w\n%s", err, out)
	}
	// From the root module, where make wasm runs it (its brotli is a
	// dependency of that module, not of this one).
	abs, err := filepath.Abs(wasm)
	if err != nil {
		return 0, 0, fmt.Errorf("failed to resolve %s: %w", wasm, err)
	}
	pre := exec.Command("go", "run", "./internal/tools/precompress", abs)
	pre.Dir = ".."
	if out, err := pre.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("failed to compress the hello world: %w\n%s", err, out)
	}
	wasmExec, err := fs.ReadFile(web.FS(), "wasm_exec.js")
	if err != nil {
		return 0, 0, fmt.Errorf("failed to read wasm_exec.js (make build copies it): %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wasm_exec.js"), wasmExec, 0o644); err != nil {
		return 0, 0, fmt.Errorf("failed to write wasm_exec.js: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.html"), []byte(helloPage), 0o644); err != nil {
		return 0, 0, fmt.Errorf("failed to write hello.html: %w", err)
	}
	if err := os.Remove(src); err != nil {
		return 0, 0, fmt.Errorf("failed to remove main.go: %w", err)
	}
	st, err := os.Stat(wasm)
	if err != nil {
		return 0, 0, fmt.Errorf("failed to find the hello world's wasm: %w", err)
	}
	stBr, err := os.Stat(wasm + ".br")
	if err != nil {
		return 0, 0, fmt.Errorf("failed to find the compressed hello world: %w", err)
	}
	return st.Size(), stBr.Size(), nil
}

// loadLinks loads url loadTrials times on loopback and on TenMbit40ms and
// checks that each load has the marks in order.
func loadLinks(url string, order []string) (fast, slow []Load, err error) {
	if fast, err = LoadBreakdownURL(url, Link{}, loadTrials); err != nil {
		return nil, nil, err
	}
	if slow, err = LoadBreakdownURL(url, TenMbit40ms, loadTrials); err != nil {
		return nil, nil, err
	}
	for _, l := range append(slices.Clone(fast), slow...) {
		if err := l.inOrder(order); err != nil {
			return nil, nil, err
		}
	}
	return fast, slow, nil
}

func goStartedMs(ls []Load) []int64 {
	out := make([]int64, len(ls))
	for i, l := range ls {
		out[i] = int64(l["wsready:go-started"])
	}
	return out
}
