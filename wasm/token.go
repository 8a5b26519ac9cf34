//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
)

// askToken carries out EffToken: it calls the page's token hook with
// {force} and reports its answer (a string, or a promise of one) to the
// core. It never waits: a promise is followed with callbacks that only
// push onto the driver's queue. What the hook threw or rejected with is not
// logged (it may hold a credential), only that it failed. refresh says
// the token is for an in-band refresh of the live connection: the core
// sends it in a refresh frame on whichever transport is up (the HTTP
// transport POSTs it like any frame), so the driver keeps no copy for a
// session to be made with.
func (d *driver) askToken(force, refresh bool) {
	failed := func(why string) {
		consoleError("wsready: token hook: " + why)
		d.q.Push(func(now time.Time) { d.core.TokenFailed(now) })
	}
	arg, err := safejs.ValueOf(map[string]any{"force": force})
	if err != nil {
		failed(err.Error())
		return
	}
	v, err := d.cb.token.Invoke(arg)
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
		d.q.Push(func(now time.Time) {
			// The core keeps the ticket until a socket opens (it goes in
			// the auth frame then), and dials again with it, without asking
			// the hook, when an attempt fails first; the driver keeps it as
			// long, for the HTTP transport, which sends it in POST
			// <base>/session (eventsOf clears it at the next open).
			if !refresh {
				d.token = tok
			}
			d.core.TokenReady(tok, now)
		})
	}
	if v.Type() == safejs.TypeString {
		ready(v)
		return
	}
	thenFn, err := v.Get("then")
	if err != nil || thenFn.Type() != safejs.TypeFunction {
		failed("it gave neither a string nor a promise")
		return
	}
	if err := then(v, func(r safejs.Value) { ready(r) }, func(safejs.Value) { failed("its promise rejected") }); err != nil {
		failed(err.Error())
	}
}
