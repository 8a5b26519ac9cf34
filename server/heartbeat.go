//go:build !js

package server

import "time"

// The heartbeat: one ticker for every connection's pings and one for the
// liveness sweep (sweep.go), run by one goroutine.

// runHeartbeat is the server's one ticker for every connection's pings
// (one pre-encoded frame queued to each) and its liveness sweep. A frozen
// server sends nothing, not even late pings.
func (s *Server) runHeartbeat() {
	defer s.wg.Done()
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	sweep := time.NewTicker(s.opts.SweepInterval)
	defer sweep.Stop()
	var conns []*conn
	snapshot := func() []*conn {
		s.mu.Lock()
		defer s.mu.Unlock()
		conns = conns[:0]
		for _, c := range s.conns {
			if c.served.Load() {
				conns = append(conns, c)
			}
		}
		return conns
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-ping.C:
			if s.freezeGate().isFrozen() {
				continue
			}
			f := s.hook()
			jitter := f != nil && f.JittersPings()
			for _, c := range snapshot() {
				if jitter {
					c.jitterPing()
				} else {
					c.offer(s.ping)
				}
			}
		case <-sweep.C:
			for _, c := range snapshot() {
				c.livenessPing()
			}
		}
		clear(conns)
	}
}
