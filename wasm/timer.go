//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
)

// timer is the driver's one browser timer: the core asks for its earliest
// deadline with EffTimer and set re-arms it (an early Tick is harmless).
// Its callback only pushes a Tick onto the driver's queue.
type timer struct {
	id safejs.Value // setTimeout's id while armed
	fn safejs.Func
}

// newTimer returns a disarmed timer whose expiry calls fire.
func newTimer(fire func()) (*timer, error) {
	fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
		fire()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &timer{id: safejs.Undefined(), fn: fn}, nil
}

// set arms the timer for at, replacing any earlier arming; a zero at
// disarms it.
func (t *timer) set(at time.Time) {
	win := safejs.Global()
	if !t.id.IsUndefined() && !t.id.IsNull() {
		win.Call("clearTimeout", t.id)
		t.id = safejs.Undefined()
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
	id, err := win.Call("setTimeout", t.fn.Value(), ms+1)
	if err != nil {
		consoleError("wsready: setTimeout failed: " + err.Error())
		return
	}
	t.id = id
}

// release disarms the timer and drops its callback.
func (t *timer) release() {
	t.set(time.Time{})
	t.fn.Release()
}
