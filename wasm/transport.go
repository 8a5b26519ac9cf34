//go:build js && wasm

package main

import (
	"time"

	"github.com/wsready/wsready/client"
)

// transport is one of the core's sockets as a way of reaching the server
// carries it: the browser's WebSocket (websocket.go) today, and any other
// (Server-Sent Events with POST, for a proxy that blocks WebSockets) as one
// more file with an opener and a type implementing this. The core's
// effects drive it: EffDial opens one, EffSend sends on it, EffClose closes
// it. What becomes of it reaches the driver through the socketEvents it
// was opened with.
type transport interface {
	// send sends one text frame; an error is reported as a trace event
	// (the core's deadlines notice a frame that never arrives).
	send(frame []byte) error
	// close starts the close handshake with code and reason; its closed
	// event follows.
	close(code int, reason string) error
	// release drops the transport's JS callbacks: no event follows. The
	// driver calls it once the socket is closed, or at stop.
	release()
}

// opener starts a transport to url for the core's socket id and returns at
// once; its events go to ev. An error means no socket was started: the
// driver reports it as an abnormal close (1006) with the error's text.
type opener func(url string, ev socketEvents) (transport, error)

// socketEvents is how a transport reports one socket's life to the driver,
// already bound to the socket's id. Each only pushes a step onto the
// driver's queue, so a js.FuncOf callback may call it: none blocks.
type socketEvents struct {
	opened  func()
	message func(frame []byte)
	closed  func(code int, reason string)
}

// eventsOf binds socket id's events to the driver's queue.
func (d *driver) eventsOf(id client.SocketID) socketEvents {
	return socketEvents{
		opened: func() {
			d.q.Push(func(now time.Time) { d.core.Opened(id, now) })
		},
		message: func(frame []byte) {
			d.q.Push(func(now time.Time) { d.core.Received(id, frame, now) })
		},
		closed: func(code int, reason string) {
			d.q.Push(func(now time.Time) {
				d.forget(id)
				d.core.Closed(id, code, reason, now)
			})
		},
	}
}

// dial carries out EffDial: a socket to the next server in turn (the next
// dial follows a failure, so it tries the next server).
func (d *driver) dial(id client.SocketID) {
	url := d.urls[d.nextURL]
	d.nextURL = (d.nextURL + 1) % len(d.urls)
	ev := d.eventsOf(id)
	t, err := d.open(url, ev)
	if err != nil {
		ev.closed(1006, err.Error())
		return
	}
	d.sockets[id] = t
}

// send carries out EffSend on a socket the driver still has.
func (d *driver) send(id client.SocketID, frame []byte) {
	if t := d.sockets[id]; t != nil {
		if err := t.send(frame); err != nil {
			d.event("send-failed", id, err.Error())
		}
	}
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
}
