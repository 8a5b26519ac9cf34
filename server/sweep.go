//go:build !js

package server

import (
	"context"
	"time"
)

// The liveness sweep. Every SweepInterval the server sends each connection
// a WebSocket protocol ping (browsers answer those by themselves, so it
// works at every stage, and so do native clients that read); a connection
// whose pong has not come within two intervals plus SweepGrace is closed at
// once: its peer has vanished without closing (a laptop lid, a dead NAT),
// so no close handshake is attempted. Time frozen by the Freeze switch does
// not count against the peer. At most one ping is outstanding per
// connection, and its goroutine ends with the pong or the connection.

// livenessPing starts a sweep ping unless one is outstanding.
func (c *conn) livenessPing() {
	s := c.s
	if s.gate.isFrozen() || !c.pinging.CompareAndSwap(false, true) {
		return
	}
	freezes := s.gate.freezes.Load()
	done := make(chan struct{})
	deadline := time.AfterFunc(2*s.opts.SweepInterval+s.opts.SweepGrace, func() {
		select {
		case <-done:
			return
		default:
		}
		if s.gate.isFrozen() || s.gate.freezes.Load() != freezes {
			return // frozen meanwhile: not the peer's fault; the next ping decides
		}
		c.sweepClose()
	})
	s.wg.Add(1) // the connection's handler is counted while this runs: no Add from zero
	go func() {
		defer s.wg.Done()
		c.ws.Ping(context.Background()) // returns on the pong, or when the connection closes
		close(done)
		deadline.Stop()
		c.pinging.Store(false)
	}()
}

func (c *conn) sweepClose() {
	c.endMu.Lock()
	defer c.endMu.Unlock()
	if c.ended || !c.closing.CompareAndSwap(false, true) {
		return
	}
	c.s.count(func(k *connCounters) { k.sweepClosed++ })
	c.s.metrics.sweep.Inc()
	c.ws.CloseNow()
	c.cancel()
}
