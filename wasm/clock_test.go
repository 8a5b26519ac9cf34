//go:build js && wasm

package main

import (
	"strconv"
	"testing"
	"time"
)

// countDates makes the page's Date count its constructions (the Go
// runtime's walltime makes one per read of the wall clock) and returns a
// func that reads the count; the Date is put back when the test ends.
func countDates(t *testing.T) func() int {
	t.Helper()
	js(t, nil, `const D = globalThis.Date;
		globalThis.__savedDate = D;
		globalThis.__dates = 0;
		globalThis.Date = class extends D { constructor(...a) { super(...a); globalThis.__dates++; } };`)
	t.Cleanup(func() { js(t, nil, `globalThis.Date = globalThis.__savedDate;`) })
	return func() int {
		n, _ := js(t, nil, `return globalThis.__dates`).Int()
		return n
	}
}

// A frame's time is the last full reading plus the monotonic clock since
// it: no read of the wall clock until every has passed, and the monotonic
// part is time.Now's own.
func TestStepClockFrameReadsOnlyTheMonotonicClock(t *testing.T) {
	c := stepClock{every: time.Hour}
	dates := countDates(t)
	base := c.frame() // the first is a full reading
	if n := dates(); n != 1 {
		t.Fatalf("the first frame read the wall clock %d times, want 1", n)
	}
	prev := base
	for range 50 {
		at := c.frame()
		if at.Before(prev) {
			t.Fatalf("a frame's time went back: %v after %v", at, prev)
		}
		prev = at
	}
	if n := dates(); n != 1 {
		t.Fatalf("50 more frames read the wall clock %d times more, want none", n-1)
	}
	if after := time.Now(); after.Before(prev) || after.Sub(prev) > time.Second {
		t.Fatalf("time.Now %v is not just after the last frame's time %v", after, prev)
	}
	if !c.base.Equal(base) {
		t.Fatal("the base moved without a full reading")
	}
	// Every full reading is due at once with every 0; the loop's now is
	// always one.
	c.every = 0
	before := dates()
	c.frame()
	c.now()
	if n := dates() - before; n != 2 {
		t.Fatalf("with every 0 a frame and a now read the wall clock %d times, want 2", n)
	}
}

// On the update path the driver reads the wall clock about once a second,
// not twice per frame (the other read, performance.now, stays).
func TestFrameStepsReadTheWallClockRarely(t *testing.T) {
	a := leadingTab(t)
	dates := countDates(t)
	const n = 100
	for i := 1; i <= n; i++ {
		frame(t, 0, `{"type":"update","topic":"feed","seq":`+strconv.Itoa(i)+`,"data":{"v":1}}`)
	}
	waitFor(t, "every update", func() bool { u, _ := a.got(); return len(u) == n })
	if got := dates(); got > n/4 {
		t.Fatalf("%d updates read the wall clock %d times, want at most %d", n, got, n/4)
	}
}

// leadingTab opens a tab at the defaults (stage 8: alone, it leads) on a
// fake WebSocket and fake tabs, serves its socket and waits until it is
// READY and leading.
func leadingTab(t *testing.T) *tab {
	t.Helper()
	fakeWebSocket(t)
	fakeTabs(t)
	a := openTab(t)
	waitFor(t, "the socket", func() bool { return socketCount(t) == 1 })
	serve(t, 0)
	waitFor(t, "READY and leading", func() bool { s := a.last(); return s["ready"] == true && s["leader"] == true })
	return a
}
