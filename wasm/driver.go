//go:build js && wasm

package main

import (
	"math/rand/v2"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
)

// driver runs one core in the browser. JS callbacks (socket events, the
// timer, online/offline, visibility, API calls) only push onto the queue;
// one goroutine (loop) drains it, steps the core and carries out its
// effects (apply). The concerns live in their own files: transport.go,
// websocket.go and http.go (sockets), buffered.go (send-side liveness),
// timer.go, network.go (online/offline and
// visibility), token.go, promise.go (requests as Promises), js.go.
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
	token    string // the token hook's answer, until the dial it is for

	open     opener // how sockets reach the server
	sockets  map[client.SocketID]transport
	buf      bufWatch
	timer    *timer
	watch    watcher
	promises map[uint64]promise
	tickets  map[float64]uint64 // JS ticket -> request id, while pending
	aborted  map[float64]bool   // tickets aborted before their request step ran (at most maxAborted)
	handle   []safejs.Func      // the page's handle: released by its dispose, so state() works after close()
	stopped  bool
	onStop   []safejs.Value // resolve functions of close() promises
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
		open: openTransport, sockets: map[client.SocketID]transport{}, promises: map[uint64]promise{},
		tickets: map[float64]uint64{}, aborted: map[float64]bool{}}
	d.buf.on = cfg.Features.WhereUsersAre
	d.timer, err = newTimer(func() { d.q.Push(func(now time.Time) { d.core.Tick(now) }) })
	if err != nil {
		return nil, err
	}
	if err := d.watchNetworkAndVisibility(); err != nil {
		d.watch.release()
		d.timer.release()
		return nil, err
	}
	go d.loop()
	d.q.Push(func(now time.Time) { d.core.Start(now) })
	return d, nil
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

// apply carries out the core's effects. The sockets sent on are looked at
// for their buffered bytes after the batch: that steps the core again,
// which must not happen while its effects are being read.
func (d *driver) apply() {
	for {
		var sentOn []client.SocketID
		for _, e := range d.core.Effects() {
			switch e.Kind {
			case client.EffDial:
				d.dial(e.Socket, e.Transport)
			case client.EffSend:
				if d.send(e.Socket, e.Frame) && d.buf.on {
					sentOn = append(sentOn, e.Socket)
				}
			case client.EffClose:
				d.closeSocket(e.Socket, e.Code, e.Reason)
			case client.EffTimer:
				d.timer.set(e.At)
			case client.EffSettle:
				d.settle(e.ID, e.Result, e.Err)
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
			case client.EffProbeHTTP:
				d.probeHTTP()
			}
		}
		if len(sentOn) == 0 {
			return
		}
		for _, id := range sentOn {
			d.noteBuffered(id)
		}
	}
}

// event reports a driver-side trace event (a failed send or close).
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

// release runs after Stop: it closes every socket the driver still knows
// (the current one is already closing; at stages 0-2 replaced sockets may
// still be open), drops every callback but the page's handle, and resolves
// the close() promises.
func (d *driver) release() {
	for id := range d.sockets {
		d.closeSocket(id, 1000, "client stopped")
		d.forget(id)
	}
	d.buf.release()
	d.timer.release()
	d.watch.release()
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
