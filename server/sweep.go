//go:build !js

package server

// The liveness sweep. Every SweepInterval the server checks each served
// connection through its transport. A WebSocket is sent a protocol ping
// (browsers answer those by themselves, so it works at every stage, and so
// do native clients that read); one whose pong has not come within two
// intervals plus SweepGrace is closed at once: its peer has vanished
// without closing (a laptop lid, a dead NAT), so no close handshake is
// attempted. An HTTP session has no pong: it is dropped when no stream has
// been attached to it for two ping intervals plus SweepGrace
// (transport_http.go). Time a switch holds (Freeze, Deaf) does not count
// against the peer. At most one ping is outstanding per connection, and
// its goroutine ends with the pong or the connection.

// livenessPing runs the connection's liveness check.
func (c *conn) livenessPing() { c.tr.liveness() }

// holding reports whether a switch holds connections' traffic (Freeze,
// or Deaf, which leaves a WebSocket's pongs unread): the sweep does not
// blame a peer for it.
func (s *Server) holding() bool { return s.gate.isFrozen() || s.deaf.isFrozen() }

// holds counts the times a switch began holding traffic: a watcher can
// tell one came and went.
func (s *Server) holds() uint64 { return s.gate.freezes.Load() + s.deaf.freezes.Load() }

func (c *conn) sweepClose() {
	c.endMu.Lock()
	defer c.endMu.Unlock()
	if c.ended || !c.closing.CompareAndSwap(false, true) {
		return
	}
	c.s.count(func(k *connCounters) { k.sweepClosed++ })
	c.s.metrics.sweep.WithLabelValues(c.tr.kind().String()).Inc()
	c.tr.closeNow()
	c.cancel()
}
