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
// logged (it may hold a credential), only that it failed.
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
