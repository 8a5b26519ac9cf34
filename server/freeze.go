//go:build !js

package server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// gate blocks connection I/O while the Freeze switch is on. The zero value
// is open.
type gate struct {
	frozen  atomic.Bool
	freezes atomic.Uint64 // how many times it froze: a watcher can tell a freeze came and went
	mu      sync.Mutex
	open    chan struct{} // closed when the gate opens; nil while open
}

func (g *gate) set(frozen bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if frozen == g.frozen.Load() {
		return
	}
	g.frozen.Store(frozen)
	if frozen {
		g.freezes.Add(1)
		g.open = make(chan struct{})
	} else {
		close(g.open)
		g.open = nil
	}
}

func (g *gate) isFrozen() bool { return g.frozen.Load() }

// wait blocks while the gate is frozen. It returns false if done closed first.
func (g *gate) wait(done <-chan struct{}) bool {
	for {
		if !g.frozen.Load() {
			return true
		}
		g.mu.Lock()
		ch := g.open
		g.mu.Unlock()
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

// frozenPoll is how often a frozen connection's read wakes to see whether
// the freeze is over; maxHeld bounds what it holds back meanwhile.
const (
	frozenPoll = 200 * time.Millisecond
	maxHeld    = 4 << 10
)

// gatedConn is the hijacked connection of a WebSocket. It neither delivers
// reads nor writes while its gate is frozen, so a frozen connection stays
// open at the TCP level and carries nothing: exactly what a hung peer or a
// dead NAT looks like to a client. While frozen it still reads (up to
// maxHeld bytes, held back until the freeze ends) so that a peer that goes
// away (EOF, reset) ends the connection instead of leaving it to the end of
// the freeze. Each write must make progress within writeTimeout, frozen
// time excluded.
type gatedConn struct {
	net.Conn
	g            *gate
	writeTimeout time.Duration
	done         chan struct{}
	closeOnce    sync.Once

	// Used by the reading goroutine only.
	held     []byte
	polling  bool // a read deadline is set for frozenPoll
	peerGone atomic.Bool
}

func (c *gatedConn) Read(p []byte) (int, error) {
	for {
		if !c.g.isFrozen() {
			if c.polling {
				c.polling = false
				c.Conn.SetReadDeadline(time.Time{})
			}
			if len(c.held) > 0 {
				n := copy(p, c.held)
				c.held = c.held[n:]
				if len(c.held) == 0 {
					c.held = nil
				}
				return n, nil
			}
			return c.Conn.Read(p)
		}
		if len(c.held) >= maxHeld {
			if !c.g.wait(c.done) {
				return 0, net.ErrClosed
			}
			continue
		}
		if c.held == nil {
			c.held = make([]byte, 0, maxHeld)
		}
		c.polling = true
		c.Conn.SetReadDeadline(time.Now().Add(frozenPoll))
		n, err := c.Conn.Read(c.held[len(c.held):maxHeld])
		c.held = c.held[:len(c.held)+n]
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			c.peerGone.Store(true)
			return 0, err // the peer is gone: nothing held matters now
		}
	}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if !c.g.wait(c.done) {
		return 0, net.ErrClosed
	}
	c.Conn.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	return c.Conn.Write(p)
}

func (c *gatedConn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// freezeWriter hands coder/websocket a gated connection on Hijack. The
// handshake response is flushed by net/http before the hijack returns, so a
// connection opened during a freeze completes its handshake and is frozen
// right after it.
type freezeWriter struct {
	http.ResponseWriter
	g            *gate
	writeTimeout time.Duration
	gated        *gatedConn
}

func (w *freezeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	gc := &gatedConn{Conn: nc, g: w.g, writeTimeout: w.writeTimeout, done: make(chan struct{})}
	w.gated = gc
	// The bufio.Writer net/http returns writes to the raw conn and would
	// bypass the gate: point it at the gated conn (it is empty here).
	brw.Writer.Reset(gc)
	return gc, brw, nil
}
