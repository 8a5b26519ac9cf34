//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
)

// transport is one of the core's sockets as a way of reaching the server
// carries it: the browser's WebSocket (websocket.go) or, at stage 8 for a
// proxy that blocks WebSockets, Server-Sent Events with POST (http.go).
// The core's effects drive it: EffDial opens one, EffSend sends on it,
// EffClose closes it. What becomes of it reaches the driver through the
// socketEvents it was opened with.
type transport interface {
	// send sends one text frame; an error is reported as a trace event
	// (the core's deadlines notice a frame that never arrives).
	send(frame []byte) error
	// close starts the close with code and reason; its closed event
	// follows.
	close(code int, reason string) error
	// buffered is how many bytes sent are not on their way yet: the
	// WebSocket's bufferedAmount, the HTTP transport's queue and the POST
	// in flight. The core's send-stall rule watches it (stage 8).
	buffered() int
	// release drops the transport's JS callbacks: no event follows. The
	// driver calls it once the socket is closed, or at stop.
	release()
}

// dialSpec is what a transport is opened with: the server's WebSocket URL
// (the HTTP transport derives its own from it), the transport the core
// chose, and the ticket the core holds for this dial ("" without
// one; the HTTP transport sends it in POST <base>/session, the WebSocket
// in its first frame, which the core sends), and on the client's first
// dial the page's takeWarm (wsready.js: the socket preconnect() opened;
// undefined otherwise).
type dialSpec struct {
	url   string
	via   client.Transport
	token string
	warm  safejs.Value
	wrap  safejs.Value // wsready.js's frameOnly (openWebSocket), or undefined
	// reprobe is how often an HTTP session in long polls tries its stream
	// again: the core's ReprobeInterval (0: bridge.PollModeFor, 10 minutes).
	reprobe time.Duration
}

// opener starts a transport for the core's socket and returns at once; its
// events go to ev. An error means no socket was started: the driver
// reports it as an abnormal close (1006) with the error's text.
type opener func(spec dialSpec, ev socketEvents) (transport, error)

// openTransport is the driver's opener: the transport the core chose.
func openTransport(spec dialSpec, ev socketEvents) (transport, error) {
	if spec.via == client.TransportHTTP {
		if isFunc(spec.warm) {
			spec.warm.Invoke() // no url: the preconnected socket is dropped
		}
		return openHTTP(spec, ev)
	}
	return openWebSocket(spec.url, ev, spec.warm, spec.wrap)
}

// socketEvents is how a transport reports one socket's life to the driver,
// already bound to the socket's id. Each only pushes a step onto the
// driver's queue (message runs it at once when the driver is idle:
// stepNow), so a js.FuncOf callback may call it: none blocks. run
// pushes a step of the transport's own (a fetch answered), so that its
// state changes only on the driver's loop, like the core's. Its step takes
// no time: socketEvents is held by the transports, which are put in an
// interface, and a time.Time reachable from one keeps time's formatting in
// the wasm (docs/performance.md).
type socketEvents struct {
	opened  func()
	message func(frame []byte) (wake bool)
	closed  func(code int, reason string)
	run     func(step func())
}

// eventsOf binds socket id's events to the driver's queue.
func (d *driver) eventsOf(id client.SocketID) socketEvents {
	return socketEvents{
		opened: func() {
			d.q.Push(func(now time.Time) {
				d.core.Opened(id, now)
			})
		},
		message: func(frame []byte) bool {
			return d.stepNow(func(now time.Time) { d.core.Received(id, frame, now) })
		},
		closed: func(code int, reason string) {
			d.q.Push(func(now time.Time) {
				d.forget(id)
				d.core.Closed(id, code, reason, now)
			})
		},
		run: func(step func()) { d.q.Push(func(time.Time) { step() }) },
	}
}

// dial carries out EffDial: a socket over via to the next server in turn
// (the next dial follows a failure, so it tries the next server), with
// token, the ticket the core holds for it ("" none: Effect.Token). The
// driver keeps no copy: the core may dial with any ask's answer.
func (d *driver) dial(id client.SocketID, via client.Transport, token string) {
	url := d.urls[d.nextURL]
	d.nextURL = (d.nextURL + 1) % len(d.urls)
	ev := d.eventsOf(id)
	spec := dialSpec{url: url, via: via, token: token, warm: d.cb.warm, wrap: d.cb.frameOnly, reprobe: d.cfg.ReprobeInterval}
	d.cb.warm = safejs.Undefined() // the first dial only
	t, err := d.open(spec, ev)
	if err != nil {
		ev.closed(1006, err.Error())
		return
	}
	d.sockets[id] = t
}

// send carries out EffSend on a socket the driver still has; it reports
// whether the frame was handed to one.
func (d *driver) send(id client.SocketID, frame []byte) bool {
	t := d.sockets[id]
	if t == nil {
		return false
	}
	if err := t.send(frame); err != nil {
		d.event("send-failed", id, err.Error())
	}
	return true
}

// closeSocket carries out EffClose on a socket the driver still has.
func (d *driver) closeSocket(id client.SocketID, code int, reason string) {
	if t := d.sockets[id]; t != nil {
		if err := t.close(code, reason); err != nil {
			d.event("close-failed", id, err.Error())
		}
	}
}

// forget drops a closed socket and releases its callbacks.
func (d *driver) forget(id client.SocketID) {
	if t := d.sockets[id]; t != nil {
		delete(d.sockets, id)
		t.release()
	}
	d.buf.drop(id)
}
