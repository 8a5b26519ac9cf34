//go:build js && wasm

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hack-pad/safejs"
)

// A frame reaches the core byte for byte through wsready.js's frameOnly
// (its UTF-8 in the shared buffer, Go handed the count): non-ASCII text, an
// empty frame, one of exactly the buffer's 64 KiB, one past it (handed over
// as its string, so the core still sees it whole and refuses it as too
// large), and a binary frame (empty); frames of different lengths in turn
// leave nothing of the one before.
func TestFrameBytesReachTheCore(t *testing.T) {
	g := safejs.Global()
	fn, _ := g.Get("Function")
	orig, _ := g.Get("WebSocket")
	mk, err := fn.New(`globalThis.__sockets = [];
		return class { constructor(url) { this.url = url; globalThis.__sockets.push(this); } send() {} close() {} };`)
	if err != nil {
		t.Fatal(err)
	}
	class, err := mk.Invoke()
	if err != nil {
		t.Fatal(err)
	}
	g.Set("WebSocket", class)
	t.Cleanup(func() { g.Set("WebSocket", orig) })
	wrap, err := fn.New("onmessage", frameOnlyJS)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	tr, err := openWebSocket("ws://frames.test/ws", socketEvents{
		opened:  func() {},
		message: func(frame []byte) bool { got = append(got, frame); return false },
		closed:  func(int, string) {},
		run:     func(step func()) { step() },
	}, safejs.Undefined(), wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.release()
	ws := tr.(*wsTransport).ws
	big := `{"type":"ping","intervalMs":1000,"pad":"` + strings.Repeat("x", 64*1024-len(`{"type":"ping","intervalMs":1000,"pad":""}`)) + `"}`
	frames := []string{
		`{"type":"ping","intervalMs":1000,"note":"é ✓ 😀"}`,
		``,
		`{}`,
		big,       // 65,536 bytes: fits
		big + " ", // one past: goes as its string
		`"é"`,     // shorter after longer: nothing of the one before
	}
	for _, f := range frames {
		ev, err := jsObject(map[string]any{"data": f})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ws.Call("onmessage", ev); err != nil {
			t.Fatal(err)
		}
	}
	u8, _ := g.Get("Uint8Array")
	bin, _ := u8.New(3)
	ev, _ := jsObject(map[string]any{"data": bin})
	if _, err := ws.Call("onmessage", ev); err != nil {
		t.Fatal(err)
	}
	if len(big) != 64*1024 {
		t.Fatalf("test frame is %d bytes, want 65536", len(big))
	}
	if len(got) != len(frames)+1 {
		t.Fatalf("%d frames reached the core, want %d", len(got), len(frames)+1)
	}
	for i, f := range frames {
		if string(got[i]) != f {
			t.Errorf("frame %d: got %d bytes %.40q, want %d bytes %.40q", i, len(got[i]), got[i], len(f), f)
		}
	}
	if len(got[len(frames)]) != 0 {
		t.Errorf("a binary frame reached the core as %q, want empty", got[len(frames)])
	}
}

// frameOnlyJS (the benchmark's and the test's copy) is what
// web/static/wsready.js's frameOnly does: its statements are there.
func TestFrameOnlyIsWsreadyJS(t *testing.T) {
	b, err := os.ReadFile("../web/static/wsready.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(frameOnlyBody, "\n") {
		line = strings.TrimSpace(line)
		if line == "return h;" || line == "const h = (e) => {" {
			continue // wsready.js's wrapper is a function of its own
		}
		if !strings.Contains(string(b), line) {
			t.Errorf("web/static/wsready.js has no %q: frameOnlyJS differs from its frameOnly", line)
		}
	}
}
