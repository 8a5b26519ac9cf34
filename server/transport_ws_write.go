//go:build !js

package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// wsConn is the hijacked connection of a WebSocket: the server's write
// path. Each write must make progress within writeTimeout.
//
// hold is the demo's Freeze (faults_gate.go), set only when a fault hook
// is (faults.go): while it is frozen the connection neither delivers
// reads nor writes, and time frozen does not count against writeTimeout.
// nil (a server without the demo): reads and writes go straight to the
// socket.
//
// On a TCP socket (raw set) a write never blocks its caller: it goes to the
// socket at once if the socket's send buffer takes it (the common case: a
// feed update is a few dozen bytes), and what the socket does not take
// waits in backlog, written by a drainer goroutine that lives only while
// there is a backlog. So the server writes to every connection from the
// goroutine that produced the frame (the feed's fan-out, the heartbeat, the
// reader's replies) and a connection costs no writer goroutine; a slow
// reader costs one while its backlog lasts. The connection's send queue
// (queue.go) stops writing into a connection with a backlog (park) and goes
// on once it is drained, so the backlog holds at most one frame of the
// queue's plus the control frames coder/websocket writes by itself (pongs,
// a close, the sweep's pings), bounded by maxBacklog.
type wsConn struct {
	net.Conn
	hold         *gate // the demo's Freeze; nil: never held
	writeTimeout time.Duration
	done         chan struct{}
	closeOnce    sync.Once

	// Used by the reading goroutine only, while hold is frozen (heldRead).
	held     []byte
	polling  bool // a read deadline is set for frozenPoll
	peerGone atomic.Bool

	// The write side on a TCP socket (raw != nil; tryWrite under wmu);
	// nil raw: every write blocks (TLS, or a connection that is not a socket).
	nbWriter
	// failed is told (from the drainer) that writing the backlog failed:
	// the connection is over. drained is told that a parked send queue
	// may write again (park). Both are set before the first write.
	failed  func(error)
	drained func()
	wmu     sync.Mutex
	backlog []byte // accepted, not yet on the socket, in order
	// draining: a drainer goroutine owns writing backlog; parked: the send
	// queue's writer is waiting for it (park) and drained runs at its end.
	draining, parked bool
	drainDone        chan struct{} // closed when the drainer at work ends
	werr             error         // the backlog could not be written: every later write fails
}

// maxBacklog bounds the bytes a connection's backlog takes beyond the
// first write in it (which is taken whatever its size, as the send queue
// takes any one frame): only control frames coder/websocket writes by
// itself can add to a backlog, as the send queue parks behind it. A write
// that would go past it fails, which ends the connection: its peer reads
// nothing and floods pings, the slow consumer the send queue closes too.
const maxBacklog = 64 << 10

// errBacklogFull is a write refused by maxBacklog.
var errBacklogFull = errors.New("write backlog over its byte bound")

// Write takes p whole or fails. Without raw it blocks as long as the
// freeze and writeTimeout allow; with raw it never blocks (see wsConn).
func (c *wsConn) Write(p []byte) (int, error) {
	if c.raw == nil {
		return c.blockingWrite(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return 0, c.werr
	}
	n := 0
	if len(c.backlog) == 0 && !c.hold.isFrozen() {
		var err error
		if n, err = c.tryWrite(p); err != nil || n == len(p) {
			return n, err
		}
	}
	if len(c.backlog) > 0 && len(c.backlog)+len(p)-n > maxBacklog {
		return n, errBacklogFull
	}
	c.backlog = append(c.backlog, p[n:]...)
	if !c.draining {
		c.draining = true
		c.drainDone = make(chan struct{})
		go c.drain(c.drainDone)
	}
	return len(p), nil
}

// Read reads the socket; while the demo's Freeze holds the connection,
// heldRead.
func (c *wsConn) Read(p []byte) (int, error) {
	if c.hold == nil {
		return c.Conn.Read(p)
	}
	return c.heldRead(p)
}

// blockingWrite waits out a freeze, then writes p within writeTimeout.
func (c *wsConn) blockingWrite(p []byte) (int, error) {
	if !c.hold.wait(c.done) {
		return 0, net.ErrClosed
	}
	c.Conn.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	return c.Conn.Write(p)
}

// drain writes the backlog, each write within writeTimeout (frozen time
// excluded), and ends when it is empty or a write failed; then it hands
// the socket back to the parked send queue, if any.
func (c *wsConn) drain(done chan struct{}) {
	for {
		c.wmu.Lock()
		if len(c.backlog) == 0 || c.werr != nil {
			c.draining = false
			c.backlog = nil // a burst is over: let its array go
			resume := c.parked
			c.parked = false
			c.wmu.Unlock()
			close(done)
			if resume {
				c.drained()
			}
			return
		}
		chunk := c.backlog // Write only appends: chunk stays the backlog's head
		c.wmu.Unlock()
		n, err := c.blockingWrite(chunk)
		if err == nil {
			// tryWrite must not meet this deadline once it has passed.
			c.Conn.SetWriteDeadline(time.Time{})
		}
		c.wmu.Lock()
		c.backlog = c.backlog[n:]
		if err != nil {
			c.werr = err
		}
		c.wmu.Unlock()
		if err != nil {
			c.failed(err)
		}
	}
}

// park reports whether the connection has a backlog; if so, drained runs
// once it is written (or failed), from the drainer. The send queue's writer
// calls it after each frame and stops writing while it is true.
func (c *wsConn) park() bool {
	if c.raw == nil {
		return false
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.draining {
		return false
	}
	c.parked = true
	return true
}

// Close is coder/websocket's, at the end of a close handshake (or of a
// connection it gave up on): what waits in the backlog (the close frame
// among it) goes out first, as the write would have before returning, or
// fails within writeTimeout; during a freeze it waits for the freeze to
// end, as a close handshake does. The server's own closes abort instead.
func (c *wsConn) Close() error {
	if c.raw != nil {
		c.wmu.Lock()
		draining, done := c.draining, c.drainDone
		c.wmu.Unlock()
		if draining {
			<-done
		}
	}
	return c.abort()
}

// abort closes the socket at once: what waits in the backlog is dropped,
// and a drainer waiting for a freeze to end gives up.
func (c *wsConn) abort() error {
	c.closeOnce.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// hijackWriter hands coder/websocket a wsConn on Hijack. The handshake
// response is flushed by net/http before the hijack returns, so a
// connection opened during a freeze (hold) completes its handshake and is
// frozen right after it.
type hijackWriter struct {
	http.ResponseWriter
	hold         *gate // the demo's Freeze; nil: never held
	writeTimeout time.Duration
	gated        *wsConn
}

// The buffers coder/websocket reads and writes frames through, kept for
// the connection's life. net/http hands over its own, 4 KiB each, about
// 8 KiB of every connection's memory: these are smaller. Frames from a
// client are a few dozen bytes (a subscribe, a request); a frame larger
// than the read buffer is read straight into the message, one larger than
// the write buffer goes to the socket in two writes instead of one.
const (
	hijackReadBuffer  = 512
	hijackWriteBuffer = 1 << 10
)

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	gc := &wsConn{Conn: nc, hold: w.hold, writeTimeout: w.writeTimeout, done: make(chan struct{})}
	gc.failed = func(error) { gc.abort() }
	gc.drained = func() {}
	gc.bind(nc)
	w.gated = gc
	// Fresh small buffers in place of net/http's (the writer is empty here;
	// the reader may hold bytes the client sent after its handshake: they
	// are carried over into the new reader's buffer, where coder/websocket
	// looks for them).
	var r io.Reader = gc
	size := hijackReadBuffer
	n := brw.Reader.Buffered()
	if n > 0 {
		b, _ := brw.Reader.Peek(n)
		r = io.MultiReader(bytes.NewReader(bytes.Clone(b)), gc)
		size = max(size, n)
	}
	br := bufio.NewReaderSize(r, size)
	if n > 0 {
		if _, err := br.Peek(n); err != nil {
			nc.Close()
			return nil, nil, err
		}
	}
	return gc, bufio.NewReadWriter(br, bufio.NewWriterSize(gc, hijackWriteBuffer)), nil
}
