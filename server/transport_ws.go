//go:build !js

package server

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// wsTransport is a connection's I/O over a WebSocket (coder/websocket),
// through the Freeze gate on its hijacked socket (freeze.go).
type wsTransport struct {
	c  *conn
	ws *websocket.Conn
	gc *gatedConn // nil when the ResponseWriter could not be hijacked through the gate (tests)
}

func (t *wsTransport) kind() transportKind { return transportWS }

// read reads one message, then decodes nothing: the conn does. It reads
// with Reader and io.ReadAll, not wsjson.Read, which would break three
// things the protocol promises: wsjson.Read ignores the message type (a
// binary frame must get not_text, whatever its bytes); it takes one
// context for waiting and for reading (an idle connection must never time
// out, while a message begun must end within MessageTimeout); and it
// closes the connection with 1007 when json.Unmarshal fails (malformed
// JSON gets a bad_json error frame on a connection that stays).
//
// A close frame from the peer is counted here (its code); an unmasked
// frame is answered with 1002 before the error ends the connection.
func (t *wsTransport) read(ctx context.Context) ([]byte, bool, error) {
	c := t.c
	typ, data, err := t.readMessage(ctx)
	if err != nil {
		if code := websocket.CloseStatus(err); code != -1 {
			c.s.count(func(k *connCounters) { k.peerCloses.add(int(code)) })
			c.s.metrics.closed(false, int(code), transportWS)
		}
		if unmasked(err) {
			// RFC 6455 5.1: a server that receives an unmasked frame
			// closes the connection, and may say 1002 first.
			// coder/websocket drops the connection without a word
			// (it does send 1002 for its other protocol errors), so
			// the close frame is sent here, before run drops it.
			c.closeWith(int(websocket.StatusProtocolError), "client frames must be masked")
		}
		return nil, false, err
	}
	return data, typ != websocket.MessageText, nil
}

// readMessage waits as long as it takes for a message to begin, then allows
// MessageTimeout for the rest of it: a fragment that never finishes closes
// the connection (coder/websocket ends a connection whose read context
// expires).
func (t *wsTransport) readMessage(ctx context.Context) (websocket.MessageType, []byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	typ, r, err := t.ws.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	var timedOut atomic.Bool
	tm := time.AfterFunc(t.c.s.opts.MessageTimeout, func() {
		timedOut.Store(true)
		cancel()
	})
	b, err := io.ReadAll(r)
	tm.Stop()
	if err != nil && timedOut.Load() {
		t.c.s.count(func(k *connCounters) { k.messageTimeouts++ })
	}
	return typ, b, err
}

// unmasked reports whether err is coder/websocket's refusal of an
// unmasked client frame. The library has no sentinel error for it, only
// this text (v1.8.15, read.go); TestAnUnmaskedFrameIsAnsweredWith1002
// fails if an upgrade rewords it.
func unmasked(err error) bool {
	return strings.Contains(err.Error(), "received unmasked frame from client")
}

// write sends one frame. A write that made no progress within
// WriteTimeout (the gate's deadline) leaves a reader nothing more can
// reach, not even a close frame: the socket is dropped.
func (t *wsTransport) write(ctx context.Context, frame []byte) error {
	err := t.ws.Write(ctx, websocket.MessageText, frame)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		t.c.s.count(func(k *connCounters) { k.stalled++ })
		t.ws.CloseNow()
	}
	return err
}

// close runs the close handshake; coder/websocket bounds it (5 s).
func (t *wsTransport) close(code int, reason string) error {
	return t.ws.Close(websocket.StatusCode(code), reason)
}

func (t *wsTransport) closeNow() { t.ws.CloseNow() }

// liveness sends a WebSocket protocol ping (sweep.go): its goroutine ends
// with the pong, or with the connection.
func (t *wsTransport) liveness() {
	c := t.c
	s := c.s
	if s.holding() || !c.pinging.CompareAndSwap(false, true) {
		return
	}
	holds := s.holds()
	done := make(chan struct{})
	deadline := time.AfterFunc(2*s.opts.SweepInterval+s.opts.SweepGrace, func() {
		select {
		case <-done:
			return
		default:
		}
		if s.holding() || s.holds() != holds {
			return // frozen or deaf meanwhile: not the peer's fault; the next ping decides
		}
		c.sweepClose()
	})
	s.wg.Add(1) // the connection's handler is counted while this runs: no Add from zero
	go func() {
		defer s.wg.Done()
		t.ws.Ping(context.Background()) // returns on the pong, or when the connection closes
		close(done)
		deadline.Stop()
		c.pinging.Store(false)
	}()
}

func (t *wsTransport) peerGone() bool { return t.gc != nil && t.gc.peerGone.Load() }

// deafen shrinks (on) the socket's receive buffer while the Deaf switch
// holds its reads, so the client's sends stall after a few KiB instead of
// the megabytes loopback TCP would take in; off gives it room again.
func (t *wsTransport) deafen(on bool) {
	if t.gc == nil {
		return
	}
	rb, ok := t.gc.Conn.(interface{ SetReadBuffer(int) error })
	if !ok {
		return
	}
	if on {
		rb.SetReadBuffer(deafReadBuffer)
	} else {
		rb.SetReadBuffer(awakeReadBuffer)
	}
}

const (
	deafReadBuffer  = 4 << 10
	awakeReadBuffer = 1 << 20
)
