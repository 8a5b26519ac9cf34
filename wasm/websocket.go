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
}

var errNoWebSocket = errors.New("no WebSocket in this environment")

// openWebSocket is the WebSocket opener: new WebSocket(url), its onopen,
// onmessage and onclose handed to ev. onerror is not listened to: it is
// always followed by onclose, which carries what the core needs.
func openWebSocket(url string, ev socketEvents) (transport, error) {
	ctor, err := safejs.Global().Get("WebSocket")
	if err != nil || ctor.Type() != safejs.TypeFunction {
		return nil, errNoWebSocket
	}
	ws, err := ctor.New(url)
	if err != nil {
		return nil, errors.New("WebSocket constructor failed: " + err.Error())
	}
	t := &wsTransport{ws: ws}
	t.on("onopen", func([]safejs.Value) { ev.opened() })
	t.on("onmessage", func(args []safejs.Value) {
		var frame []byte
		if len(args) > 0 {
			if data, err := args[0].Get("data"); err == nil && data.Type() == safejs.TypeString {
				str, _ := data.String()
				frame = []byte(str)
			}
		}
		ev.message(frame)
	})
	t.on("onclose", func(args []safejs.Value) {
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
	})
	return t, nil
}

// on sets the socket's handler name to fn, which must only report (push
// onto the driver's queue).
func (t *wsTransport) on(name string, fn func(args []safejs.Value)) {
	f, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		fn(args)
		return nil
	})
	if err != nil {
		return
	}
	t.funcs = append(t.funcs, f)
	t.ws.Set(name, f.Value())
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
	for _, name := range []string{"onopen", "onmessage", "onclose"} {
		t.ws.Set(name, safejs.Null())
	}
	for _, f := range t.funcs {
		f.Release()
	}
	t.funcs = nil
}
