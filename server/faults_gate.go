//go:build !js

package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// gate blocks connection I/O while the Freeze (or Deaf) switch is on. The zero value
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

// isFrozen reports whether the gate holds; a nil gate (no demo) never does.
func (g *gate) isFrozen() bool { return g != nil && g.frozen.Load() }

// count is how many times the gate froze; 0 for a nil gate.
func (g *gate) count() uint64 {
	if g == nil {
		return 0
	}
	return g.freezes.Load()
}

// wait blocks while the gate is frozen (a nil gate: never). It returns
// false if done closed first.
func (g *gate) wait(done <-chan struct{}) bool {
	if g == nil {
		return true
	}
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

// heldRead is wsConn.Read under the Freeze switch. While frozen it
// delivers nothing but still reads (up to maxHeld bytes, held back until
// the freeze ends) so that a peer that goes away (EOF, reset) ends the
// connection instead of leaving it to the end of the freeze: a frozen
// connection stays open at the TCP level and carries nothing, exactly
// what a hung peer or a dead NAT looks like to a client.
func (c *wsConn) heldRead(p []byte) (int, error) {
	for {
		if !c.hold.isFrozen() {
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
			if !c.hold.wait(c.done) {
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
