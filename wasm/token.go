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
// logged (it may hold a credential), only that it failed. The driver
// keeps no copy of the answer: the core takes it for whichever ask waits
// (a dial's, an in-band refresh's, the re-probe's), and each dial names
// the ticket it is made with (Effect.Token, for the HTTP session's POST).
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
		d.q.Push(func(now time.Time) { d.core.TokenReady(tok, now) })
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
