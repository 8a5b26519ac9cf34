//go:build js && wasm

// Command wasm is wsready's browser client: the client core driven by the
// browser's WebSocket, timers and online/offline events, exposed to pages
// as globalThis.__wsready (wrapped by web/static/wsready.js).
package main

import (
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/protocol"
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

// connectJS implements __wsready.connect({url, stage, onState, onUpdate,
// onEvent}). It returns a handle {request, state, stats, close} or
// {error} for bad options; it never throws.
func connectJS(args []safejs.Value) any {
	if len(args) < 1 || args[0].Type() != safejs.TypeObject {
		return errorValue("wsready.connect: pass an options object {url, stage}")
	}
	g := jsGetter{args[0]}
	o, err := bridge.ParseOptions(g)
	if err != nil {
		return errorValue(err.Error())
	}
	cb := func(name string) safejs.Value {
		v, _ := g.get(name)
		return v
	}
	d, err := newDriver(o, callbacks{onState: cb("onState"), onUpdate: cb("onUpdate"), onEvent: cb("onEvent"), onRecord: cb("onRecord"),
		onLost: cb("onContinuityLost"), onTopic: cb("onTopicError"), onPresence: cb("onPresence"), token: cb("token")})
	if err != nil {
		return errorValue("wsready.connect: " + err.Error())
	}
	h, err := safejs.Global().Get("Object")
	if err == nil {
		h, err = h.New()
	}
	if err != nil {
		return errorValue("wsready.connect: " + err.Error())
	}
	fn := func(f func(args []safejs.Value) any) safejs.Func {
		jf, _ := funcOf(func(_ safejs.Value, a []safejs.Value) any { return f(a) })
		d.handle = append(d.handle, jf)
		return jf
	}
	h.Set("request", fn(func(a []safejs.Value) any {
		method, params := "", []byte(nil)
		if len(a) > 0 && a[0].Type() == safejs.TypeString {
			method, _ = a[0].String()
		}
		if len(a) > 1 && a[1].Type() == safejs.TypeString {
			s, _ := a[1].String()
			params = []byte(s)
		}
		if method == "" {
			return errorValue("request: method must be a non-empty string")
		}
		if params != nil && !protocol.Valid(params) {
			return errorValue("request: params must be a JSON string")
		}
		var timeout time.Duration
		if len(a) > 2 && a[2].Type() == safejs.TypeNumber {
			ms, _ := a[2].Float()
			if ms < 0 || ms > 1e9 || ms != float64(int64(ms)) {
				return errorValue("request: timeoutMs must be a whole number of milliseconds, 0 to 1e9")
			}
			timeout = time.Duration(ms) * time.Millisecond
		}
		var ticket float64
		if len(a) > 3 && a[3].Type() == safejs.TypeNumber {
			ticket, _ = a[3].Float()
		}
		p, err := d.request(method, params, timeout, ticket)
		if err != nil {
			return errorValue("request: " + err.Error())
		}
		return p
	}))
	h.Set("publish", fn(func(a []safejs.Value) any {
		topic, data := "", []byte(nil)
		if len(a) > 0 && a[0].Type() == safejs.TypeString {
			topic, _ = a[0].String()
		}
		if len(a) > 1 && a[1].Type() == safejs.TypeString {
			s, _ := a[1].String()
			data = []byte(s)
		}
		if !protocol.ValidTopic(topic) {
			return errorValue("publish: " + protocol.ErrBadTopic.Error())
		}
		if data == nil || !protocol.Valid(data) {
			return errorValue("publish: data must be a JSON string")
		}
		var timeout time.Duration
		if len(a) > 2 && a[2].Type() == safejs.TypeNumber {
			ms, _ := a[2].Float()
			if ms < 0 || ms > 1e9 || ms != float64(int64(ms)) {
				return errorValue("publish: timeoutMs must be a whole number of milliseconds, 0 to 1e9")
			}
			timeout = time.Duration(ms) * time.Millisecond
		}
		var ticket float64
		if len(a) > 3 && a[3].Type() == safejs.TypeNumber {
			ticket, _ = a[3].Float()
		}
		p, err := d.publish(topic, data, timeout, ticket)
		if err != nil {
			return errorValue("publish: " + err.Error())
		}
		return p
	}))
	// subscribe(topic, since?) and unsubscribe(topic): the JS wrapper keeps
	// the per-topic callbacks and calls these for the first and the last.
	h.Set("subscribe", fn(func(a []safejs.Value) any {
		topic := ""
		if len(a) > 0 && a[0].Type() == safejs.TypeString {
			topic, _ = a[0].String()
		}
		if !protocol.ValidTopic(topic) {
			return errorValue("subscribe: " + protocol.ErrBadTopic.Error())
		}
		var s bridge.TabSub
		if len(a) > 1 && a[1].Type() == safejs.TypeNumber {
			f, _ := a[1].Float()
			if f < 0 || f > 1<<53 || f != float64(int64(f)) {
				return errorValue("subscribe: since must be a whole number >= 0")
			}
			s.Since, s.HasSince = int64(f), true
		}
		d.q.Push(func(now time.Time) { d.subscribe(topic, s, now) })
		return nil
	}))
	h.Set("unsubscribe", fn(func(a []safejs.Value) any {
		if len(a) > 0 && a[0].Type() == safejs.TypeString {
			topic, _ := a[0].String()
			d.q.Push(func(now time.Time) { d.unsubscribe(topic, now) })
		}
		return nil
	}))
	h.Set("topics", fn(func([]safejs.Value) any {
		ts := d.core.Topics()
		arr, err := safejs.Global().Get("Array")
		if err == nil {
			arr, err = arr.New()
		}
		if err != nil {
			return nil
		}
		for _, t := range ts {
			v, _ := jsObject(bridge.TopicValue(t))
			arr.Call("push", v)
		}
		return arr
	}))
	h.Set("cursors", fn(func([]safejs.Value) any {
		return bridge.FormatCursors(d.core.Cursors())
	}))
	// state and stats read the core from the JS thread. In WebAssembly Go
	// and JS share one thread, and the loop goroutine only runs while JS is
	// not, so the read cannot race a step. After close they keep returning
	// the final values (stopped: true).
	h.Set("state", fn(func([]safejs.Value) any {
		v, _ := jsObject(bridge.StateValue(d.core.State(), d.tabsMode))
		return v
	}))
	h.Set("stats", fn(func([]safejs.Value) any {
		v, _ := jsObject(bridge.StatsValue(d.core.Stats()))
		return v
	}))
	h.Set("close", fn(func([]safejs.Value) any {
		p, err := d.stop()
		if err != nil {
			return errorValue("close: " + err.Error())
		}
		return p
	}))
	h.Set("cancel", fn(func(a []safejs.Value) any {
		if len(a) > 0 && a[0].Type() == safejs.TypeNumber {
			ticket, _ := a[0].Float()
			d.q.Push(func(now time.Time) { d.cancel(ticket, now) })
		}
		return nil
	}))
	h.Set("reconnect", fn(func([]safejs.Value) any {
		d.q.Push(func(now time.Time) { d.core.Reconnect(now) })
		return nil
	}))
	h.Set("dispose", fn(func([]safejs.Value) any {
		d.dispose()
		return nil
	}))
	return h
}
