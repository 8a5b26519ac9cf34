//go:build js && wasm

package main

import (
	"math"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
)

// The page's requests and publishes are Promises: the JS call returns one
// at once, the request step is queued, and EffSettle resolves it (with
// bridge.SettleValue: the JS wrapper turns a failure into a rejection).

// promise is a pending request's resolve function and the JS ticket that
// names it for an AbortSignal.
type promise struct {
	resolve safejs.Value
	ticket  uint64 // ticketKey's
}

// ticketKey is a JS ticket's key in d.tickets and d.aborted: the
// float's bits, so the maps are keyed by uint64 (a float64 key linked the
// runtime's generic map code into the wasm beside the uint64 and string
// variants every other map uses). NaN and ±0 are no ticket: 0, as a NaN
// could never be found again in a float-keyed map.
func ticketKey(t float64) uint64 {
	if t != t || t == 0 {
		return 0
	}
	return math.Float64bits(t)
}

// maxAborted bounds d.aborted: tickets aborted before their request step
// ran. Past it an early abort is not remembered and the request is sent.
const maxAborted = 1024

// errAborted settles a request whose AbortSignal fired.
var errAborted = &client.RequestError{Kind: client.ErrAborted, Detail: "the AbortSignal fired"}

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
func (d *driver) request(method string, params []byte, o client.RequestOptions, ticket uint64) (safejs.Value, error) {
	return d.callPromise(ticket, func(now time.Time) uint64 { return d.core.RequestWith(method, params, o, now) })
}

// publish is request's twin for a publish.
func (d *driver) publish(topic string, data []byte, o client.RequestOptions, ticket uint64) (safejs.Value, error) {
	return d.callPromise(ticket, func(now time.Time) uint64 { return d.core.PublishWith(topic, data, o, now) })
}

// callPromise starts a request or publish (start returns its id) and returns a
// Promise of its settle value.
func (d *driver) callPromise(ticket uint64, start func(now time.Time) uint64) (safejs.Value, error) {
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

// settle carries out EffSettle: the request's Promise resolves.
func (d *driver) settle(id uint64, result []byte, err error) {
	if p, ok := d.promises[id]; ok {
		delete(d.promises, id)
		delete(d.tickets, p.ticket)
		d.call(p.resolve, bridge.SettleValue(result, err))
	}
}

// cancel settles the request with ticket as Aborted: the core forgets it
// (a late response is dropped) or, if it was not sent yet, it never is.
func (d *driver) cancel(ticket uint64, now time.Time) {
	if ticket == 0 {
		return // no ticket names no request
	}
	id, ok := d.tickets[ticket]
	if !ok {
		if len(d.aborted) < maxAborted {
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
