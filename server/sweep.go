//go:build !js

package server

import "time"

// The liveness sweep. Every SweepInterval the server checks each served
// connection through its transport. A WebSocket heard from since the
// previous tick (any frame read: a message, a pong) is alive, and is sent
// nothing: what the sweep tests is silence. A silent one is sent a
// WebSocket protocol ping (browsers answer those by themselves, so it
// works at every stage, and so do native clients that read); one that
// neither answers it nor sends anything within one interval plus
// SweepGrace is closed at once: its peer has vanished without closing (a
// laptop lid, a dead NAT), so no close handshake is attempted.
//
// The bound: a peer that stops sending is closed 2 to 3 intervals plus
// SweepGrace after the last frame read from it (25 to 35 s at the
// defaults; another SweepGrace at most when SweepGrace is not shorter
// than SweepInterval), as when every connection was pinged every tick
// with two intervals to answer, at half the pings: a silent live peer
// is pinged every other tick, its pong being what it is heard from.
//
// An HTTP session has no pong: it is dropped when no stream has been
// attached to it for two ping intervals plus SweepGrace
// (transport_http.go). Time a switch holds (Freeze, Deaf) does not count
// against the peer, nor time its reader waits for a request slot
// (requests.go: it reads nothing meanwhile, pongs included). At most one ping is outstanding per connection, and
// its goroutine ends with the pong or the connection.

// pongWithin is how long a silent WebSocket has to answer the sweep's
// ping (or send anything) before it is closed.
func (s *Server) pongWithin() time.Duration { return s.opts.SweepInterval + s.opts.SweepGrace }

// livenessPing runs the connection's liveness check.
func (c *conn) livenessPing() { c.tr.liveness() }

// holding reports whether a switch holds connections' traffic (Freeze,
// or Deaf, which leaves a WebSocket's pongs unread): the sweep does not
// blame a peer for it.
func (s *Server) holding() bool {
	return s.freezeGate().isFrozen() || s.deafGate().isFrozen()
}

// holds counts the times a switch began holding traffic: a watcher can
// tell one came and went.
func (s *Server) holds() uint64 {
	return s.freezeGate().count() + s.deafGate().count()
}

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
