//go:build js && wasm

package main

import (
	"unsafe"

	"github.com/hack-pad/safejs"
)

// A frame in through a wasm export. A js.FuncOf callback is the dearest
// way into Go: syscall/js reads the pending event, its this and args across
// the boundary (each a js.Value with a finalizer), runs it on the event
// goroutine and then every runnable goroutine before it returns. A
// //go:wasmexport function is a plain call of the instance's export. So
// wsready.js's frameOnly writes a text frame's UTF-8 straight into
// frameIn, in Go's memory, and calls wsreadyFrame with the socket's sink
// and the byte count: no js.Value, no callback, no copy across the
// boundary. Go then steps the frame there and then (stepNow) when the
// driver is idle, or queues it.
//
// An export returns to JavaScript without running other goroutines, so
// when the frame left the loop work (it was queued, or the page called
// the client meanwhile, or the client stopped) wsreadyFrame says so and
// frameOnly calls the no-op callback resume, which lets them run as
// every callback does.
//
// When the frame is ASCII (each character one byte: encodeInto wrote as
// many bytes as the string has characters) frameOnly says so (text) and
// keeps the string while Go steps it; inText is then the frame, and an
// update's data found in it goes to the page as its offset there: the page
// takes a substring of the frame's own string, with no bytes copied out of
// Go and none decoded (deliver).
//
// frameIn holds one frame: 64 KiB, the most the server sends (a longer
// one comes as its string through the callback, and the core refuses
// it). It is a global: Go's collector does not move it.
var frameIn [64 << 10]byte

// sinks are the open WebSockets' message handlers by the number frameOnly
// knows them by (its sink property); released with their socket.
var (
	inText   []byte // the frame wsreadyFrame is stepping, when frameOnly holds it as text; else nil
	sinks    = map[int32]func(frame []byte) bool{}
	lastSink int32
	resume   safejs.Func // the no-op callback frameOnly calls to let goroutines run
)

// Results of wsreadyFrame.
const (
	frameNotTaken = 0 // no such sink, or a bad count: frameOnly hands the frame to the callback
	frameTaken    = 1 // stepped, or queued with the loop already called back
	frameWake     = 2 // taken, and goroutines are waiting to run: frameOnly calls resume
)

//go:wasmexport wsreadyFrameBuffer
func wsreadyFrameBuffer() uint32 { return uint32(uintptr(unsafe.Pointer(&frameIn[0]))) }

//go:wasmexport wsreadyFrame
func wsreadyFrame(sink, n, text int32) int32 {
	h := sinks[sink]
	if h == nil || n < 0 || int(n) > len(frameIn) {
		return frameNotTaken
	}
	frame := make([]byte, n)
	copy(frame, frameIn[:n])
	if text == 1 {
		inText = frame
	}
	wake := h(frame)
	inText = nil
	if wake {
		return frameWake
	}
	return frameTaken
}

// addSink registers a socket's message handler for wsreadyFrame and sets
// its number and resume on w, the handler frameOnly returned. It returns
// the number (0: none, the callback carries every frame).
func addSink(w safejs.Value, h func(frame []byte) bool) int32 {
	if resume.Value().Type() != safejs.TypeFunction {
		f, err := funcOf(func(safejs.Value, []safejs.Value) any { return nil })
		if err != nil {
			return 0
		}
		resume = f
	}
	for range len(sinks) + 1 { // a free number (2^31 sockets before one wraps)
		lastSink++
		if lastSink <= 0 {
			lastSink = 1
		}
		if sinks[lastSink] == nil {
			break
		}
	}
	if err := w.Set("resume", resume.Value()); err != nil {
		return 0
	}
	if err := w.Set("sink", int(lastSink)); err != nil {
		return 0
	}
	sinks[lastSink] = h
	return lastSink
}

// dropSink forgets sink: a frame frameOnly still carries for it goes by
// the callback, which its socket's release has let go.
func dropSink(sink int32) { delete(sinks, sink) }
