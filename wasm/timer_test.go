//go:build js && wasm

package main

import (
	"strconv"
	"testing"
)

// A stream of updates does not re-arm the browser timer per update: each
// frame moves the core's deadline (the silence watchdog) later, which the
// one armed timer checks when it fires, instead of a clearTimeout and a
// setTimeout per frame (measured at 19 us of the main thread per update).
func TestTimerNotReArmedPerUpdate(t *testing.T) {
	a := leadingTab(t)
	// Counted per callback: the Go runtime's own setTimeouts (a sleeping
	// goroutine) pass a new function each time, the driver's timer its one.
	js(t, nil, `const st = globalThis.setTimeout, ct = globalThis.clearTimeout;
		globalThis.__savedTimers = [st, ct];
		const by = new Map();
		globalThis.__armed = () => Math.max(0, ...by.values());
		globalThis.__cleared = 0;
		globalThis.setTimeout = function (f, ...rest) { by.set(f, (by.get(f) || 0) + 1); return st.call(this, f, ...rest); };
		globalThis.clearTimeout = function (id) { globalThis.__cleared++; return ct.call(this, id); };`)
	t.Cleanup(func() {
		js(t, nil, `[globalThis.setTimeout, globalThis.clearTimeout] = globalThis.__savedTimers;`)
	})
	const n = 100
	for i := 1; i <= n; i++ {
		frame(t, 0, `{"type":"update","topic":"feed","seq":`+strconv.Itoa(i)+`,"data":{"v":1}}`)
	}
	waitFor(t, "every update", func() bool { u, _ := a.got(); return len(u) == n })
	armed, _ := js(t, nil, `return globalThis.__armed()`).Int()
	cleared, _ := js(t, nil, `return globalThis.__cleared`).Int()
	if armed > 5 || cleared > 5 {
		t.Fatalf("%d updates armed the driver's timer %d times and cleared a timer %d times, want at most 5 each", n, armed, cleared)
	}
}
