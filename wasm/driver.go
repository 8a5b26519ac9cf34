//go:build js && wasm

package main

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
)

// driver runs one core in the browser. JS callbacks (socket events, the
// timer, online/offline, API calls) only push onto the queue; one goroutine
// drains it, steps the core and carries out its effects.
type driver struct {
	urls     []string
	nextURL  int
	core     *client.Core
	q        *bridge.Queue[func(now time.Time)]
	onState  safejs.Value
	onUpdate safejs.Value
	onEvent  safejs.Value
	onRecord safejs.Value
	onLost   safejs.Value
	onTopic  safejs.Value
	tokenFn  safejs.Value

	sockets  map[client.SocketID]*jsSocket
	timerID  safejs.Value
	timerFn  safejs.Func
	promises map[uint64]promise
	tickets  map[float64]uint64 // JS ticket -> request id, while pending
	aborted  map[float64]bool   // tickets aborted before their request step ran (at most 1024)
	funcs    []safejs.Func      // released on stop
	handle   []safejs.Func      // the page's handle: released by its dispose, so state() works after close()
	netFns   map[string]safejs.Func
	doc      safejs.Value
	docFn    safejs.Func
	stopped  bool
	onStop   []safejs.Value // resolve functions of close() promises
}

type jsSocket struct {
	ws    safejs.Value
	funcs []safejs.Func
}

type promise struct {
	resolve safejs.Value
	ticket  float64
}

// errAborted settles a request whose AbortSignal fired.
var errAborted = &client.RequestError{Kind: client.ErrAborted, Detail: "the AbortSignal fired"}

// cancel settles the request with ticket as Aborted: the core forgets it
// (a late response is dropped) or, if it was not sent yet, it never is.
func (d *driver) cancel(ticket float64, now time.Time) {
	id, ok := d.tickets[ticket]
	if !ok {
		if len(d.aborted) < 1024 {
			d.aborted[ticket] = true // its request step is still queued
		}
		return
	}
	delete(d.tickets, ticket)
	if p, ok := d.promises[id]; ok {
		delete(d.promises, id)
		d.core.Cancel(id, now)
		d.call(p.resolve, bridge.SettleValue(nil, errAborted))
	}
}

func newDriver(o bridge.Options, onState, onUpdate, onEvent, onRecord, onLost, onTopic, tokenFn safejs.Value) (*driver, error) {
	cfg, err := client.StageConfig(o.Stage, rand.Float64)
	if err != nil {
		return nil, err
	}
	cfg = o.Config(cfg)
	cfg.Trace = isFunc(onEvent)
	cfg.Auth = isFunc(tokenFn)
	core, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	d := &driver{urls: o.URLs, core: core, q: bridge.NewQueue[func(time.Time)](),
		onState: onState, onUpdate: onUpdate, onEvent: onEvent, onRecord: onRecord, onLost: onLost, onTopic: onTopic, tokenFn: tokenFn,
		sockets: map[client.SocketID]*jsSocket{}, promises: map[uint64]promise{},
		tickets: map[float64]uint64{}, aborted: map[float64]bool{}}
	d.timerFn, err = funcOf(func(safejs.Value, []safejs.Value) any {
		d.q.Push(func(now time.Time) { d.core.Tick(now) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.funcs = append(d.funcs, d.timerFn)
	if err := d.watchNetworkAndVisibility(); err != nil {
		return nil, err
	}
	go d.loop()
	d.q.Push(func(now time.Time) { d.core.Start(now) })
	return d, nil
}

func isFunc(v safejs.Value) bool { return v.Type() == safejs.TypeFunction }

// watchNetworkAndVisibility feeds window online/offline events and the
// page's visibility (watchVisibility) to the core.
func (d *driver) watchNetworkAndVisibility() error {
	win := safejs.Global()
	if nav, err := win.Get("navigator"); err == nil && !nav.IsUndefined() {
		if on, err := nav.Get("onLine"); err == nil {
			if b, err := on.Bool(); err == nil && !b {
				d.q.Push(func(now time.Time) { d.core.Offline(now) })
			}
		}
	}
	if err := d.watchVisibility(); err != nil {
		return err
	}
	for name, step := range map[string]func(*client.Core, time.Time){
		"online":  (*client.Core).Online,
		"offline": (*client.Core).Offline,
	} {
		fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
			d.q.Push(func(now time.Time) { step(d.core, now) })
			return nil
		})
		if err != nil {
			return err
		}
		d.funcs = append(d.funcs, fn)
		if d.netFns == nil {
			d.netFns = map[string]safejs.Func{}
		}
		d.netFns[name] = fn
		if _, err := win.Call("addEventListener", name, fn.Value()); err != nil {
			return err
		}
	}
	return nil
}

// watchVisibility feeds the page's visibility to the core: no reconnect is
// scheduled while the page is hidden (stage 6).
func (d *driver) watchVisibility() error {
	doc, err := safejs.Global().Get("document")
	if err != nil || doc.IsUndefined() || doc.IsNull() {
		return nil // a worker: no page to be hidden
	}
	step := func() {
		hidden := false
		if v, err := doc.Get("hidden"); err == nil {
			hidden, _ = v.Bool()
		}
		d.q.Push(func(now time.Time) {
			if hidden {
				d.core.Hidden(now)
			} else {
				d.core.Visible(now)
			}
		})
	}
	fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
		step()
		return nil
	})
	if err != nil {
		return err
	}
	d.funcs = append(d.funcs, fn)
	d.docFn, d.doc = fn, doc
	if _, err := doc.Call("addEventListener", "visibilitychange", fn.Value()); err != nil {
		return err
	}
	step()
	return nil
}

// askToken calls the page's token hook with {force} and reports its answer
// (a string, or a promise of one) to the core. It never waits: a promise
// is followed with callbacks.
func (d *driver) askToken(force bool) {
	failed := func(why string) {
		consoleError("wsready: token hook: " + why)
		d.q.Push(func(now time.Time) { d.core.TokenFailed(now) })
	}
	arg, err := safejs.ValueOf(map[string]any{"force": force})
	if err != nil {
		failed(err.Error())
		return
	}
	v, err := d.tokenFn.Invoke(arg)
	if err != nil {
		failed("it threw")
		return
	}
	ready := func(v safejs.Value) {
		if v.Type() != safejs.TypeString {
			failed("it did not give a string")
			return
		}
		tok, _ := v.String()
		d.q.Push(func(now time.Time) { d.core.TokenReady(tok, now) })
	}
	if v.Type() == safejs.TypeString {
		ready(v)
		return
	}
	then, err := v.Get("then")
	if err != nil || then.Type() != safejs.TypeFunction {
		failed("it gave neither a string nor a promise")
		return
	}
	var onOK, onErr safejs.Func
	release := func() {
		onOK.Release()
		onErr.Release()
	}
	onOK, err = funcOf(func(_ safejs.Value, args []safejs.Value) any {
		release()
		if len(args) == 0 {
			failed("it resolved to nothing")
		} else {
			ready(args[0])
		}
		return nil
	})
	if err != nil {
		failed(err.Error())
		return
	}
	onErr, err = funcOf(func(safejs.Value, []safejs.Value) any {
		release()
		failed("its promise rejected")
		return nil
	})
	if err != nil {
		onOK.Release()
		failed(err.Error())
		return
	}
	if _, err := v.Call("then", onOK.Value(), onErr.Value()); err != nil {
		release()
		failed(err.Error())
	}
}

func (d *driver) loop() {
	for range d.q.Ready() {
		for _, step := range d.q.Take() {
			step(time.Now())
			d.apply()
		}
		if d.stopped {
			// Steps queued behind the stop still run against the stopped
			// core, so every request made meanwhile settles (NotReady).
			for _, step := range d.q.Close() {
				step(time.Now())
				d.apply()
			}
			d.release()
			return
		}
	}
}

func (d *driver) apply() {
	for _, e := range d.core.Effects() {
		switch e.Kind {
		case client.EffDial:
			d.dial(e.Socket)
		case client.EffSend:
			if s := d.sockets[e.Socket]; s != nil {
				if _, err := s.ws.Call("send", string(e.Frame)); err != nil {
					d.event("send-failed", e.Socket, err.Error())
				}
			}
		case client.EffClose:
			if s := d.sockets[e.Socket]; s != nil {
				if _, err := s.ws.Call("close", e.Code, e.Reason); err != nil {
					d.event("close-failed", e.Socket, err.Error())
				}
			}
		case client.EffTimer:
			d.setTimer(e.At)
		case client.EffSettle:
			if p, ok := d.promises[e.ID]; ok {
				delete(d.promises, e.ID)
				delete(d.tickets, p.ticket)
				d.call(p.resolve, bridge.SettleValue(e.Result, e.Err))
			}
		case client.EffState:
			d.call(d.onState, bridge.StateValue(e.State))
			if e.State.Ended == client.Stopped {
				d.stopped = true
			}
		case client.EffUpdate:
			d.call(d.onUpdate, bridge.UpdateValue(e.Update))
		case client.EffLog:
			d.call(d.onEvent, bridge.EventValue(e.Event))
		case client.EffRecord:
			d.call(d.onRecord, bridge.RecordValue(e.Record))
		case client.EffToken:
			d.askToken(e.Force)
		case client.EffContinuityLost:
			d.call(d.onLost, bridge.LostValue(e.Lost))
		case client.EffTopicError:
			d.call(d.onTopic, map[string]any{"topic": e.TopicError.Topic, "code": e.TopicError.Code})
		}
	}
}

func (d *driver) event(kind string, s client.SocketID, detail string) {
	d.call(d.onEvent, bridge.EventValue(client.Event{Kind: kind, Socket: s, Detail: detail}))
}

// call invokes a page callback; a callback that throws is reported on the
// console, never allowed to stop the driver.
func (d *driver) call(fn safejs.Value, arg map[string]any) {
	if !isFunc(fn) {
		return
	}
	v, err := jsObject(arg)
	if err == nil {
		_, err = fn.Invoke(v)
	}
	if err != nil {
		consoleError("wsready: callback failed: " + err.Error())
	}
}

func (d *driver) setTimer(at time.Time) {
	win := safejs.Global()
	if !d.timerID.IsUndefined() && !d.timerID.IsNull() {
		win.Call("clearTimeout", d.timerID)
		d.timerID = safejs.Undefined()
	}
	if at.IsZero() {
		return
	}
	ms := time.Until(at).Milliseconds()
	if ms < 0 {
		ms = 0
	}
	// Browsers may fire a timer a little early; the core ignores deadlines
	// not yet due, so ask for one millisecond more.
	id, err := win.Call("setTimeout", d.timerFn.Value(), ms+1)
	if err != nil {
		consoleError("wsready: setTimeout failed: " + err.Error())
		return
	}
	d.timerID = id
}

func (d *driver) dial(id client.SocketID) {
	fail := func(reason string) {
		d.q.Push(func(now time.Time) { d.core.Closed(id, 1006, reason, now) })
	}
	ctor, err := safejs.Global().Get("WebSocket")
	if err != nil {
		fail("no WebSocket in this environment")
		return
	}
	url := d.urls[d.nextURL]
	d.nextURL = (d.nextURL + 1) % len(d.urls) // the next dial follows a failure: try the next server
	ws, err := ctor.New(url)
	if err != nil {
		fail("WebSocket constructor failed: " + err.Error())
		return
	}
	s := &jsSocket{ws: ws}
	d.sockets[id] = s
	on := func(name string, fn func(args []safejs.Value)) {
		f, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
			fn(args)
			return nil
		})
		if err != nil {
			return
		}
		s.funcs = append(s.funcs, f)
		ws.Set(name, f.Value())
	}
	on("onopen", func([]safejs.Value) {
		d.q.Push(func(now time.Time) { d.core.Opened(id, now) })
	})
	on("onmessage", func(args []safejs.Value) {
		var frame []byte
		if len(args) > 0 {
			if data, err := args[0].Get("data"); err == nil && data.Type() == safejs.TypeString {
				str, _ := data.String()
				frame = []byte(str)
			}
		}
		d.q.Push(func(now time.Time) { d.core.Received(id, frame, now) })
	})
	on("onclose", func(args []safejs.Value) {
		code, reason := 1006, ""
		if len(args) > 0 {
			if v, err := args[0].Get("code"); err == nil {
				code, _ = v.Int()
			}
			if v, err := args[0].Get("reason"); err == nil && v.Type() == safejs.TypeString {
				reason, _ = v.String() // safejs gives "<T>" for a non-string: checked above
			}
		}
		d.q.Push(func(now time.Time) {
			d.forget(id)
			d.core.Closed(id, code, reason, now)
		})
	})
	// onerror is always followed by onclose, which carries what we need.
}

// forget drops a closed socket and releases its callbacks.
func (d *driver) forget(id client.SocketID) {
	s := d.sockets[id]
	if s == nil {
		return
	}
	delete(d.sockets, id)
	for _, name := range []string{"onopen", "onmessage", "onclose"} {
		s.ws.Set(name, safejs.Null())
	}
	for _, f := range s.funcs {
		f.Release()
	}
}

// release runs after Stop: it closes every socket the driver still knows
// (the current one is already closing; at stages 0-2 replaced sockets may
// still be open), drops every callback but the page's handle, and resolves
// the close() promises.
func (d *driver) release() {
	d.setTimer(time.Time{})
	for id, s := range d.sockets {
		if _, err := s.ws.Call("close", 1000, "client stopped"); err != nil {
			d.event("close-failed", id, err.Error())
		}
		d.forget(id)
	}
	win := safejs.Global()
	for name, fn := range d.netFns {
		win.Call("removeEventListener", name, fn.Value())
	}
	if !d.doc.IsUndefined() && !d.doc.IsNull() {
		d.doc.Call("removeEventListener", "visibilitychange", d.docFn.Value())
	}
	for _, f := range d.funcs {
		f.Release()
	}
	d.funcs = nil
	for _, resolve := range d.onStop {
		resolve.Invoke()
	}
	d.onStop = nil
}

// stop asks the core to stop and returns a Promise that resolves once every
// socket is closed and every callback released.
func (d *driver) stop() (safejs.Value, error) {
	p, resolve, err := newPromise()
	if err != nil {
		return safejs.Undefined(), err
	}
	if !d.q.Push(func(now time.Time) {
		d.onStop = append(d.onStop, resolve)
		d.core.Stop(now)
	}) {
		resolve.Invoke() // already stopped
	}
	return p, nil
}

// dispose releases the page's handle; the JS wrapper calls it when the
// handle is garbage collected.
func (d *driver) dispose() {
	for _, f := range d.handle {
		f.Release()
	}
	d.handle = nil
}

// newPromise returns a Promise and its resolve function.
func newPromise() (p, resolve safejs.Value, err error) {
	exec, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		resolve = args[0]
		return nil
	})
	if err != nil {
		return safejs.Undefined(), safejs.Undefined(), err
	}
	defer exec.Release()
	ctor, err := safejs.Global().Get("Promise")
	if err != nil {
		return safejs.Undefined(), safejs.Undefined(), err
	}
	p, err = ctor.New(exec.Value()) // the executor runs synchronously
	return p, resolve, err
}

// request starts a request and returns a Promise of its settle value.
// A ticket (chosen by the JS wrapper, non-zero) names the request for an
// AbortSignal's cancel; the map holds only requests still pending.
func (d *driver) request(method string, params []byte, timeout time.Duration, ticket float64) (safejs.Value, error) {
	return d.callPromise(ticket, func(now time.Time) uint64 { return d.core.RequestWithTimeout(method, params, timeout, now) })
}

// publish is request's twin for a publish.
func (d *driver) publish(topic string, data []byte, timeout time.Duration, ticket float64) (safejs.Value, error) {
	return d.callPromise(ticket, func(now time.Time) uint64 { return d.core.Publish(topic, data, timeout, now) })
}

// callPromise starts a request or publish (start returns its id) and returns a
// Promise of its settle value.
func (d *driver) callPromise(ticket float64, start func(now time.Time) uint64) (safejs.Value, error) {
	p, resolve, err := newPromise()
	if err != nil {
		return safejs.Undefined(), err
	}
	if !d.q.Push(func(now time.Time) {
		if ticket != 0 && d.aborted[ticket] {
			delete(d.aborted, ticket) // aborted before it was sent: it never is
			d.call(resolve, bridge.SettleValue(nil, errAborted))
			return
		}
		id := start(now)
		d.promises[id] = promise{resolve: resolve, ticket: ticket}
		if ticket != 0 {
			d.tickets[ticket] = id
		}
	}) {
		d.call(resolve, bridge.SettleValue(nil, &client.RequestError{Kind: client.ErrNotReady, Detail: "client closed"}))
	}
	return p, nil
}

// funcOf is safejs.FuncOf for every callback the driver hands to
// JavaScript, with one thing added: a panic in fn is reported on the
// console and the call returns undefined. safejs.FuncOf lets a callback's
// panic through, and one that reaches syscall/js leaves the Go side of the
// page dead (under Node the JS call never returns): every handle with it.
func funcOf(fn func(this safejs.Value, args []safejs.Value) any) (safejs.Func, error) {
	return safejs.FuncOf(func(this safejs.Value, args []safejs.Value) (out any) {
		defer func() {
			if r := recover(); r != nil {
				consoleError("wsready: a callback panicked: " + describe(r))
				out = safejs.Undefined()
			}
		}()
		return fn(this, args)
	})
}

// describe names a recovered panic value without fmt.
func describe(r any) string {
	switch x := r.(type) {
	case error:
		return x.Error()
	case string:
		return x
	}
	return "a panic"
}

func consoleError(msg string) {
	if c, err := safejs.Global().Get("console"); err == nil {
		c.Call("error", msg)
	}
}

// jsObject builds a plain JS object with m's keys in a stable (sorted)
// order, so state(), stats() and the callbacks' objects always list their
// keys the same way (safejs.ValueOf, like js.ValueOf, ranges over the map
// in random order).
func jsObject(m map[string]any) (safejs.Value, error) {
	ctor, err := safejs.Global().Get("Object")
	if err != nil {
		return safejs.Undefined(), err
	}
	obj, err := ctor.New()
	if err != nil {
		return safejs.Undefined(), err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := obj.Set(k, m[k]); err != nil {
			return safejs.Undefined(), err
		}
	}
	return obj, nil
}
