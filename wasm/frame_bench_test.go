//go:build js && wasm

package main

import (
	"testing"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/internal/poll"
)

// BenchmarkFrameStep is a frame's way in: the socket's onmessage (a fake
// WebSocket's, called from JavaScript as the browser would) to the core
// stepped with it and its effects applied; a ping, so the step itself is
// small and the way there is what is measured (the JS/wasm crossings, the
// hop to the driver's goroutine if there is one). FrameOnly: the socket's
// handler wrapped to hand Go event.data, the frame as a JS string.
// FrameBytes: wrapped by wsready.js's frameOnly, as in a page: the frame's
// UTF-8 in a shared buffer, Go handed its byte count.
func BenchmarkFrameStep(b *testing.B) {
	b.Run("event", func(b *testing.B) { benchFrameStep(b, "") })
	b.Run("frameOnly", func(b *testing.B) {
		benchFrameStep(b, "return (e) => onmessage(typeof e.data === 'string' ? e.data : undefined);")
	})
	b.Run("frameBytes", func(b *testing.B) { benchFrameStep(b, frameOnlyJS) })
}

// frameOnlyJS is web/static/wsready.js's frameOnly, the body of a function
// of onmessage (TestFrameOnlyIsWsreadyJS keeps the two the same), after
// frameOnlyExports, which stands in for what load() sets: the instance's
// exports, here globalThis.__goExports when a test gives them (a test
// cannot reach its own instance's).
const frameOnlyJS = frameOnlyExports + frameOnlyBody

const frameOnlyExports = `const x = globalThis.__goExports;
let goFrame = x?.wsreadyFrame, goMem = x?.mem, goFrameAt = x ? x.wsreadyFrameBuffer() : 0, goFrameView, frameText;
`

const frameOnlyBody = `const frameBytes = new Uint8Array(64 * 1024);
const frameEncoder = new TextEncoder();
const h = (e) => {
  const d = e.data;
  if (typeof d !== 'string') return onmessage(undefined);
  if (h.sink > 0 && goFrame) {
    if (goFrameView?.buffer !== goMem.buffer) goFrameView = new Uint8Array(goMem.buffer, goFrameAt, frameBytes.length);
    const r = frameEncoder.encodeInto(d, goFrameView);
    if (r.read === d.length) {
      const text = r.written === d.length; // ASCII: an offset in bytes is one in characters
      if (text) frameText = d;
      const k = goFrame(h.sink, r.written, text ? 1 : 0);
      frameText = undefined;
      if (k === 2) h.resume();
      if (k !== 0) return undefined;
    }
  }
  const r = frameEncoder.encodeInto(d, frameBytes);
  return onmessage(r.read === d.length ? r.written : d);
};
h.bytes = frameBytes;
return h;`

func benchFrameStep(b *testing.B, wrap string) {
	g := safejs.Global()
	orig, _ := g.Get("WebSocket")
	fn, _ := g.Get("Function")
	mk, err := fn.New(`globalThis.__sockets = [];
		return class { constructor(url) { this.url = url; this.sent = []; globalThis.__sockets.push(this); }
			send(s) { this.sent.push(s); if (this.sent.length > 64) this.sent = []; } close() {} };`)
	if err != nil {
		b.Fatal(err)
	}
	class, err := mk.Invoke()
	if err != nil {
		b.Fatal(err)
	}
	g.Set("WebSocket", class)
	defer g.Set("WebSocket", orig)
	for _, name := range []string{"addEventListener", "removeEventListener"} { // Node has no window
		if v, _ := g.Get(name); v.Type() != safejs.TypeFunction {
			noop, _ := fn.New("")
			g.Set(name, noop)
			defer g.Delete(name)
		}
	}
	o, err := bridge.ParseOptions(fakeGetter{"url": "ws://bench.test/ws"})
	if err != nil {
		b.Fatal(err)
	}
	var cb callbacks
	if wrap != "" {
		cb.frameOnly, err = fn.New("onmessage", wrap)
		if err != nil {
			b.Fatal(err)
		}
	}
	d, err := newDriver(o, cb)
	if err != nil {
		b.Fatal(err)
	}
	defer d.stop()
	var ws safejs.Value
	poll.Until(2*time.Second, func() bool { // the loop goroutine dials
		arr, _ := g.Get("__sockets")
		if n, _ := arr.Length(); n > 0 {
			ws, _ = arr.Index(n - 1)
			return true
		}
		return false
	})
	if ws.Type() != safejs.TypeObject {
		b.Fatal("no WebSocket was opened")
	}
	if _, err := ws.Call("onopen"); err != nil {
		b.Fatal(err)
	}
	ev, err := jsObject(map[string]any{"data": `{"type":"ping","intervalMs":1000}`})
	if err != nil {
		b.Fatal(err)
	}
	before := d.core.Stats().Pings
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ws.Call("onmessage", ev); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := d.core.Stats().Pings - before; n != b.N {
		b.Fatalf("%d pings stepped, want %d", n, b.N)
	}
}
