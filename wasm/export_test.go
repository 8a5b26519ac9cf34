//go:build js && wasm

package main

import (
	"strings"
	"testing"

	"github.com/hack-pad/safejs"
)

// A frame through wsready.js's frameOnly and the wasm export (export.go):
// its UTF-8 written into Go's memory and handed over by wsreadyFrame with
// the socket's sink, byte for byte (non-ASCII, empty, exactly 64 KiB),
// also after the memory grew (frameOnly's view of it is made again); one
// past 64 KiB and a binary frame by the callback, as before; an ASCII
// frame stepped as text (inText), no other; a frame that
// leaves goroutines work makes frameOnly call resume, no other does; a
// sink that is gone sends the frame by the callback. A test cannot reach
// its own instance's exports, so JavaScript's stand-ins for them write
// into a memory of their own and call wsreadyFrame through a callback.
func TestFrameThroughTheExport(t *testing.T) {
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
	viaExport := false
	viaGo, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		sink, _ := args[0].Int()
		n, _ := args[1].Int()
		text, _ := args[3].Int()
		if _, err := safejs.CopyBytesToGo(frameIn[:n], args[2]); err != nil {
			t.Errorf("copying the frame: %v", err)
		}
		viaExport = true
		defer func() { viaExport = false }()
		return int(wsreadyFrame(int32(sink), int32(n), int32(text)))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer viaGo.Release()
	mkExports, err := fn.New("viaGo", `const mem = new WebAssembly.Memory({ initial: 2, maximum: 8 });
		const at = 1000;
		globalThis.__goExports = { mem, wsreadyFrameBuffer: () => at,
			wsreadyFrame: (sink, n, text) => viaGo(sink, n, new Uint8Array(mem.buffer, at, n), text) };
		return mem;`)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := mkExports.Invoke(viaGo.Value())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Delete("__goExports") })
	wrap, err := fn.New("onmessage", frameOnlyJS)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		frame  string
		export bool
		text   bool // inText was the frame while it was stepped
	}
	var frames []got
	wake := "no frame is this"
	tr, err := openWebSocket("ws://export.test/ws", socketEvents{
		opened: func() {},
		message: func(frame []byte) bool {
			frames = append(frames, got{string(frame), viaExport, inText != nil && string(inText) == string(frame)})
			return string(frame) == wake
		},
		closed: func(int, string) {},
		run:    func(step func()) { step() },
	}, safejs.Undefined(), wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.release()
	wt := tr.(*wsTransport)
	if wt.sink <= 0 || sinks[wt.sink] == nil {
		t.Fatalf("the socket has no sink (%d)", wt.sink)
	}
	h, _ := wt.ws.Get("onmessage")
	if s, _ := h.Get("sink"); func() int { n, _ := s.Int(); return n }() != int(wt.sink) {
		t.Fatal("frameOnly's handler was not given the sink")
	}
	counter, err := fn.New(`const f = () => { f.calls++; }; f.calls = 0; return f;`)
	if err != nil {
		t.Fatal(err)
	}
	resumes, _ := counter.Invoke()
	h.Set("resume", resumes)
	send := func(data any) {
		t.Helper()
		ev, err := jsObject(map[string]any{"data": data})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wt.ws.Call("onmessage", ev); err != nil {
			t.Fatal(err)
		}
	}
	big := `{"type":"ping","pad":"` + strings.Repeat("x", 64*1024-len(`{"type":"ping","pad":""}`)) + `"}`
	want := []got{
		{`{"type":"ping","note":"é ✓ 😀"}`, true, false}, // not ASCII: no text
		{``, true, true},
		{big, true, true},
		{`{}`, true, true}, // after the memory grew
		{big + " ", false, false},
		{``, false, false}, // binary
		{`"wake"`, true, true},
		{`"é"`, true, false},
		{`"gone"`, false, false}, // its sink dropped
	}
	for i, w := range want[:4] {
		if i == 3 {
			if _, err := mem.Call("grow", 1); err != nil {
				t.Fatal(err)
			}
		}
		send(w.frame)
	}
	send(want[4].frame)
	u8, _ := g.Get("Uint8Array")
	bin, _ := u8.New(3)
	send(bin)
	calls := func() int { v, _ := resumes.Get("calls"); n, _ := v.Int(); return n }
	if n := calls(); n != 0 {
		t.Fatalf("resume called %d times for frames that left no work", n)
	}
	wake = `"wake"`
	send(want[6].frame)
	if n := calls(); n != 1 {
		t.Fatalf("resume called %d times after a frame that woke the loop, want 1", n)
	}
	send(want[7].frame)
	dropSink(wt.sink)
	send(want[8].frame)
	if n := calls(); n != 1 {
		t.Fatalf("resume called %d times, want 1", n)
	}
	if len(frames) != len(want) {
		t.Fatalf("%d frames reached the core, want %d", len(frames), len(want))
	}
	for i, w := range want {
		if frames[i] != w {
			t.Errorf("frame %d: got %.40q (by the export: %v, as text: %v), want %.40q (%v, %v)", i, frames[i].frame, frames[i].export, frames[i].text, w.frame, w.export, w.text)
		}
	}
	if inText != nil {
		t.Error("inText outlived the frame's step")
	}
	if wsreadyFrame(wt.sink, 1, 0) != frameNotTaken || wsreadyFrame(-1, 1, 0) != frameNotTaken {
		t.Error("a sink that is gone took a frame")
	}
}
