//go:build js && wasm

package main

import (
	"errors"

	"github.com/hack-pad/safejs"
)

// wsTransport is a socket over the browser's WebSocket.
type wsTransport struct {
	ws    safejs.Value
	funcs []safejs.Func
	sink  int32 // its number for wsreadyFrame (export.go), 0 none
}

var errNoWebSocket = errors.New("no WebSocket in this environment")

// openWebSocket is the WebSocket opener: new WebSocket(url), its onopen,
// onmessage and onclose handed to ev. onerror is not listened to: it is
// always followed by onclose, which carries what the core needs. warm,
// when a function (wsready.js's takeWarm, on the client's first dial),
// is asked first for the socket the page preconnected to url: it gives
// that socket the handlers, in a task of its own, after replaying to them
// what came so far.
//
// wrap, when a function (wsready.js's frameOnly), is given the message
// handler once per socket and returns the one to set: it hands the
// handler event.data when a string (undefined otherwise) instead of the
// event, so a frame crosses into Go once, with no js.Value for the event
// nor a Get for its data. Without it the handler reads the event's data.
// When the handler it returns has a Uint8Array as its bytes, a text frame
// that fits is written there (UTF-8) and the handler is handed its byte
// count, read once per socket: the frame is copied into Go with no JS
// string made a js.Value (each is one with a finalizer, registered and
// later run, per frame) and one Go allocation instead of two.
func openWebSocket(url string, ev socketEvents, warm, wrap safejs.Value) (transport, error) {
	ctor, err := safejs.Global().Get("WebSocket")
	if err != nil || ctor.Type() != safejs.TypeFunction {
		return nil, errNoWebSocket
	}
	t := &wsTransport{}
	var in safejs.Value // the wrapper's buffer (wrap's bytes), once known
	inLen := 0
	h := [len(wsHandlers)]safejs.Value{t.fn(func([]safejs.Value) { ev.opened() }), t.fn(func(args []safejs.Value) {
		var frame []byte
		if len(args) > 0 {
			v := args[0]
			switch v.Type() {
			case safejs.TypeNumber: // the frame's UTF-8 byte count in the wrapper's buffer
				if n, _ := v.Int(); n >= 0 && n <= inLen {
					frame = make([]byte, n)
					safejs.CopyBytesToGo(frame, in)
				}
			case safejs.TypeObject: // the event, unwrapped
				v, _ = v.Get("data")
			}
			if v.Type() == safejs.TypeString { // a binary frame is not one of the protocol's: empty
				str, _ := v.String()
				frame = []byte(str)
			}
		}
		ev.message(frame)
	}), t.fn(func(args []safejs.Value) {
		code, reason := 1006, ""
		if len(args) > 0 {
			if v, err := args[0].Get("code"); err == nil {
				code, _ = v.Int()
			}
			if v, err := args[0].Get("reason"); err == nil && v.Type() == safejs.TypeString {
				reason, _ = v.String() // safejs gives "<T>" for a non-string: checked above
			}
		}
		ev.closed(code, reason)
	})}
	if isFunc(wrap) {
		if w, err := wrap.Invoke(h[1]); err == nil && isFunc(w) {
			h[1] = w
			if b, err := w.Get("bytes"); err == nil && b.Type() == safejs.TypeObject {
				if n, ok := getNumber(b, "length"); ok && n > 0 {
					in, inLen = b, int(n)
				}
				t.sink = addSink(w, ev.message)
			}
		}
	}
	if isFunc(warm) {
		if ws, err := warm.Invoke(url, h[0], h[1], h[2]); err == nil && ws.Type() == safejs.TypeObject {
			t.ws = ws
			return t, nil
		}
	}
	ws, err := ctor.New(url)
	if err != nil {
		t.release()
		return nil, errors.New("WebSocket constructor failed: " + err.Error())
	}
	t.ws = ws
	for i, name := range wsHandlers {
		ws.Set(name, h[i])
	}
	return t, nil
}

// wsHandlers are the socket's handlers openWebSocket sets, in its order.
var wsHandlers = [...]string{"onopen", "onmessage", "onclose"}

// fn wraps fn, which must only report (push onto the driver's queue), as
// one of the socket's handlers, released with it.
func (t *wsTransport) fn(fn func(args []safejs.Value)) safejs.Value {
	f, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		fn(args)
		return nil
	})
	if err != nil {
		return safejs.Null()
	}
	t.funcs = append(t.funcs, f)
	return f.Value()
}

func (t *wsTransport) send(frame []byte) error {
	_, err := t.ws.Call("send", string(frame))
	return err
}

func (t *wsTransport) close(code int, reason string) error {
	_, err := t.ws.Call("close", code, reason)
	return err
}

func (t *wsTransport) buffered() int {
	v, err := t.ws.Get("bufferedAmount")
	if err != nil || v.Type() != safejs.TypeNumber {
		return 0
	}
	n, _ := v.Int()
	return n
}

func (t *wsTransport) release() {
	if t.sink != 0 {
		dropSink(t.sink)
		t.sink = 0
	}
	if t.ws.Type() == safejs.TypeObject {
		for _, name := range wsHandlers {
			t.ws.Set(name, safejs.Null())
		}
	}
	for _, f := range t.funcs {
		f.Release()
	}
	t.funcs = nil
}
