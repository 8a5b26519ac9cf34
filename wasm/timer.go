//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
)

// timer is the driver's one browser timer: the core asks for its earliest
// deadline with EffTimer and set records it. A deadline that moves later
// (the silence watchdog does with every frame) re-arms nothing: the armed
// setTimeout fires at the old one, sees the deadline is not due yet and
// arms itself for the rest. Only a deadline earlier than the armed one
// re-arms at once, so a stream of updates costs no clearTimeout and
// setTimeout per frame (measured at about 19 us of the main thread per
// update, docs/browser-bench.md). An early Tick is harmless; a due one
// only pushes a Tick onto the driver's queue.
//
// The callback reads and writes the fields the loop's set writes: in
// WebAssembly the loop is parked while a browser callback runs.
type timer struct {
	id      safejs.Value // setTimeout's id while armed
	fn      safejs.Func
	due     time.Time // the core's deadline; zero: none
	firesAt time.Time // when the armed setTimeout fires; zero: not armed
}

// newTimer returns a disarmed timer whose deadline, once due, calls fire.
func newTimer(fire func()) (*timer, error) {
	t := &timer{id: safejs.Undefined()}
	fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
		t.id, t.firesAt = safejs.Undefined(), time.Time{}
		if t.due.IsZero() {
			return nil // disarmed since it was armed
		}
		if time.Until(t.due) > 0 {
			t.arm(t.due) // moved later meanwhile
			return nil
		}
		fire()
		return nil
	})
	if err != nil {
		return nil, err
	}
	t.fn = fn
	return t, nil
}

// set makes at the deadline, replacing any earlier one; a zero at
// disarms it (the armed setTimeout, if any, then fires and does nothing).
func (t *timer) set(at time.Time) {
	t.due = at
	if at.IsZero() || (!t.firesAt.IsZero() && !t.firesAt.After(at)) {
		return // none, or the armed one fires in time and looks again
	}
	t.arm(at)
}

// arm replaces the armed setTimeout with one for at.
func (t *timer) arm(at time.Time) {
	win := safejs.Global()
	t.clear(win)
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
	t.id, t.firesAt = id, time.Now().Add(time.Duration(ms+1)*time.Millisecond)
}

func (t *timer) clear(win safejs.Value) {
	if !t.id.IsUndefined() && !t.id.IsNull() {
		win.Call("clearTimeout", t.id)
	}
	t.id, t.firesAt = safejs.Undefined(), time.Time{}
}

// release disarms the timer and drops its callback.
func (t *timer) release() {
	t.due = time.Time{}
	t.clear(safejs.Global())
	t.fn.Release()
}
