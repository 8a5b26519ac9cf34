//go:build js && wasm

// Command wasm is wsready's browser client: the client core driven by the
// browser's WebSocket, timers and online/offline events, exposed to pages
// as globalThis.__wsready (wrapped by web/static/wsready.js).
package main

import (
	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready"
)

func main() {
	api, err := safejs.Global().Get("Object")
	if err == nil {
		api, err = api.New()
	}
	if err != nil {
		consoleError("wsready: cannot create the API object: " + err.Error())
		return
	}
	connect, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		return connectJS(args)
	})
	if err != nil {
		consoleError("wsready: " + err.Error())
		return
	}
	api.Set("connect", connect)
	api.Set("version", wsready.Version)
	safejs.Global().Set("__wsready", api)
	if cb, err := safejs.Global().Get("__wsreadyLoaded"); err == nil && isFunc(cb) {
		cb.Invoke()
	}
	select {} // keep the callbacks alive
}

type jsGetter struct{ v safejs.Value }

func (g jsGetter) get(name string) (safejs.Value, bool) {
	x, err := g.v.Get(name)
	if err != nil || x.IsUndefined() || x.IsNull() {
		return x, false
	}
	return x, true
}

func (g jsGetter) String(name string) (string, bool, error) {
	x, ok := g.get(name)
	if !ok {
		return "", false, nil
	}
	if x.Type() != safejs.TypeString {
		return "", true, errNotA("string")
	}
	s, err := x.String()
	return s, true, err
}

func (g jsGetter) Bool(name string) (bool, bool, error) {
	x, ok := g.get(name)
	if !ok {
		return false, false, nil
	}
	if x.Type() != safejs.TypeBoolean {
		return false, true, errNotA("boolean")
	}
	b, err := x.Bool()
	return b, true, err
}

func (g jsGetter) Number(name string) (float64, bool, error) {
	x, ok := g.get(name)
	if !ok {
		return 0, false, nil
	}
	if x.Type() != safejs.TypeNumber {
		return 0, true, errNotA("number")
	}
	f, err := x.Float()
	return f, true, err
}

type errNotA string

func (e errNotA) Error() string { return "not a " + string(e) }

func errorValue(msg string) any {
	v, _ := safejs.ValueOf(map[string]any{"error": msg})
	return v
}
