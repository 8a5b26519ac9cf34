//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/internal/bridge"
)

// Helpers for every JS call the driver makes, all through safejs.

func isFunc(v safejs.Value) bool { return v.Type() == safejs.TypeFunction }

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

// random is the page's Math.random(), in [0, 1): Config.Rand (the
// reconnect jitter, the idempotency keys of queued requests, the session
// ref), the tab's id and its silence jitter. The browser seeds it per
// page, which is what each of these needs: a fleet's spread, and values
// unique per page; none of them is a secret (Math.random is not a
// cryptographic source). math/rand's code stays out of the wasm. Should
// JavaScript fail to answer (it does not), the clock's nanoseconds: never
// one constant for every page.
func random() float64 {
	if m, err := safejs.Global().Get("Math"); err == nil {
		if v, err := m.Call("random"); err == nil {
			if f, err := v.Float(); err == nil && f >= 0 && f < 1 {
				return f
			}
		}
	}
	return float64(time.Now().Nanosecond()) / 1e9
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
	bridge.SortStrings(keys)
	for _, k := range keys {
		if err := obj.Set(k, m[k]); err != nil {
			return safejs.Undefined(), err
		}
	}
	return obj, nil
}

// then follows the JS promise p: ok or fail gets its value or its reason.
// Both callbacks are released when either runs; they must only report
// (push onto the driver's queue). An error means p is not a promise.
func then(p safejs.Value, ok, fail func(v safejs.Value)) error {
	var onOK, onErr safejs.Func
	release := func() {
		onOK.Release()
		onErr.Release()
	}
	arg := func(args []safejs.Value) safejs.Value {
		if len(args) == 0 {
			return safejs.Undefined()
		}
		return args[0]
	}
	var err error
	onOK, err = funcOf(func(_ safejs.Value, args []safejs.Value) any {
		release()
		ok(arg(args))
		return nil
	})
	if err != nil {
		return err
	}
	onErr, err = funcOf(func(_ safejs.Value, args []safejs.Value) any {
		release()
		fail(arg(args))
		return nil
	})
	if err != nil {
		onOK.Release()
		return err
	}
	if _, err := p.Call("then", onOK.Value(), onErr.Value()); err != nil {
		release()
		return err
	}
	return nil
}

// getString reads v[name] as a string; ok is false when it is not one.
func getString(v safejs.Value, name string) (string, bool) {
	x, err := v.Get(name)
	if err != nil || x.Type() != safejs.TypeString {
		return "", false
	}
	s, err := x.String()
	return s, err == nil
}

// getNumber reads v[name] as a number; ok is false when it is not one.
func getNumber(v safejs.Value, name string) (float64, bool) {
	x, err := v.Get(name)
	if err != nil || x.Type() != safejs.TypeNumber {
		return 0, false
	}
	f, err := x.Float()
	return f, err == nil
}
