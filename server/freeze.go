package server

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// gate blocks connection I/O while the Freeze switch is on. The zero value
// is open.
type gate struct {
	mu     sync.Mutex
	frozen bool
	open   chan struct{} // closed when the gate opens; nil while open
}

func (g *gate) set(frozen bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if frozen == g.frozen {
		return
	}
	g.frozen = frozen
	if frozen {
		g.open = make(chan struct{})
	} else {
		close(g.open)
		g.open = nil
	}
}

func (g *gate) isFrozen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.frozen
}

// wait blocks while the gate is frozen. It returns false if done closed first.
func (g *gate) wait(done <-chan struct{}) bool {
	for {
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

// gatedConn is a net.Conn that neither reads nor writes while its gate is
// frozen, so a frozen connection stays open at the TCP level and carries
// nothing: exactly what a hung peer or a dead NAT looks like to a client.
type gatedConn struct {
	net.Conn
	g         *gate
	done      chan struct{}
	closeOnce sync.Once
}

func (c *gatedConn) Read(p []byte) (int, error) {
	if !c.g.wait(c.done) {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	// Bytes that arrived during a freeze are held back until it ends.
	if !c.g.wait(c.done) {
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if !c.g.wait(c.done) {
		return 0, net.ErrClosed
	}
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
	g     *gate
	gated *gatedConn
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
	gc := &gatedConn{Conn: nc, g: w.g, done: make(chan struct{})}
	w.gated = gc
	// The bufio.Writer net/http returns writes to the raw conn and would
	// bypass the gate, so hand back a new one over the gated conn.
	return gc, bufio.NewReadWriter(brw.Reader, bufio.NewWriter(gc)), nil
}
