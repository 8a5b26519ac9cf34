//go:build js && wasm

package main

import "time"

// stepClock is the time each step of the core is given. time.Now in
// WebAssembly is two calls into JavaScript (the runtime's walltime, a
// Date, and its nanotime, performance.now), per frame on the update path
// (docs/browser-bench.md). A frame's step reads only the monotonic clock:
// its time is the last full reading plus the monotonic time since then,
// one call (time.Since of a Time that carries a monotonic reading asks
// for nothing else). The monotonic part, which the core's deadlines and
// its clock-jump check compare, is exactly time.Now's; the wall part,
// which only a token's expiry is compared with, is read afresh by every
// step the loop runs (a timer, the page's calls, the browser's events)
// and at least once per every of monotonic time, so a frame's wall time
// lags the system's only when the system clock is set, or across a sleep
// that stopped performance.now (Chromium's, but on Windows), and then
// until the next full reading: within every of awake time, at most.
type stepClock struct {
	base  time.Time     // the last full reading; zero: none yet
	every time.Duration // the longest a frame's time goes without one
}

// fullEvery is stepClock's every in the driver.
const fullEvery = time.Second

// now reads the clock in full (Date and performance.now), for the loop's
// steps.
func (c *stepClock) now() time.Time {
	c.base = time.Now()
	return c.base
}

// frame reads the monotonic clock only, for a frame's step, unless a full
// reading is due.
func (c *stepClock) frame() time.Time {
	if c.base.IsZero() {
		return c.now()
	}
	d := time.Since(c.base)
	if d < 0 || d >= c.every {
		return c.now()
	}
	return c.base.Add(d)
}
