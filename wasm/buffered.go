//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
)

// Send-side liveness (stage 8): the core is told how many bytes each socket
// still holds for sending (Core.Buffered) after every send and, while that
// is not zero, every bufPoll; the poll's timer runs only while some socket
// holds bytes, and is released when none does. A WebSocket reports its
// bufferedAmount; the HTTP transport its queue and the POST in flight (a
// POST the server does not complete counts).

// bufPoll is how often a socket holding bytes is looked at again: the
// core's bound, at most every 250 ms.
const bufPoll = 250 * time.Millisecond

// bufWatch is the poll: the sockets that held bytes at their last look,
// and the timer while there are any.
type bufWatch struct {
	on    bool // stage 8: the core watches sends
	ids   map[client.SocketID]bool
	timer safejs.Value // setInterval's id while running
	fn    safejs.Func
	hasFn bool
}

// noteBuffered tells the core how many bytes socket id holds, and starts or
// stops the poll.
func (d *driver) noteBuffered(id client.SocketID) {
	if !d.buf.on {
		return
	}
	t := d.sockets[id]
	if t == nil {
		d.buf.drop(id)
		return
	}
	n := t.buffered()
	d.core.Buffered(id, n, time.Now())
	if n <= 0 {
		d.buf.drop(id)
		return
	}
	if d.buf.ids == nil {
		d.buf.ids = map[client.SocketID]bool{}
	}
	d.buf.ids[id] = true
	d.buf.start(func() { d.q.Push(func(time.Time) { d.pollBuffered() }) })
}

// pollBuffered is the poll's step: every socket that held bytes is looked
// at again (its effects follow, as any step's).
func (d *driver) pollBuffered() {
	for id := range d.buf.ids {
		d.noteBuffered(id)
	}
}

// start arms the poll's interval, if it is not running.
func (b *bufWatch) start(tick func()) {
	if !b.timer.IsUndefined() && !b.timer.IsNull() {
		return
	}
	if !b.hasFn {
		fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
			tick()
			return nil
		})
		if err != nil {
			return
		}
		b.fn, b.hasFn = fn, true
	}
	id, err := safejs.Global().Call("setInterval", b.fn.Value(), bufPoll.Milliseconds())
	if err == nil {
		b.timer = id
	}
}

// drop stops watching id; the interval stops with the last one.
func (b *bufWatch) drop(id client.SocketID) {
	delete(b.ids, id)
	if len(b.ids) == 0 {
		b.stop()
	}
}

// stop clears the interval (its callback is kept for the next start).
func (b *bufWatch) stop() {
	if !b.timer.IsUndefined() && !b.timer.IsNull() {
		safejs.Global().Call("clearInterval", b.timer)
	}
	b.timer = safejs.Undefined()
}

// release stops the poll and drops its callback.
func (b *bufWatch) release() {
	b.ids = nil
	b.stop()
	if b.hasFn {
		b.fn.Release()
		b.hasFn = false
	}
}
