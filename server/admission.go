//go:build !js

package server

import (
	"net"
	"time"
)

// admit decides whether a WebSocket handshake from ip may proceed, and
// reserves its place under MaxConns and MaxConnsPerIP if so. A refusal is
// answered like Restart's: 503 with Retry-After (whole seconds, at least 1).
func (s *Server) admit(ip string) (refusal string, retryAfter int) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters.handshakes++
	s.counters.handshakesWindow++
	switch {
	case s.closed:
		refusal, retryAfter = "server shutting down: try again later", 1
	case now.Before(s.restartUntil):
		refusal, retryAfter = "restarting: try again later", ceilSeconds(s.restartUntil.Sub(now))
	case s.admitted >= s.opts.MaxConns:
		s.counters.refusedFull++
		refusal, retryAfter = "server at its connection limit: try again later", 1
	case s.perIP[ip] >= s.opts.MaxConnsPerIP:
		s.counters.refusedPerIP++
		refusal, retryAfter = "too many connections from this address: try again later", 1
	default:
		s.admitted++
		s.perIP[ip]++
		return "", 0
	}
	s.counters.refused++
	return refusal, retryAfter
}

// release gives back the place admit reserved, for a handshake that failed
// or a connection that ended.
func (s *Server) release(ip string) {
	s.mu.Lock()
	s.releaseLocked(ip)
	s.mu.Unlock()
}

func (s *Server) releaseLocked(ip string) {
	s.admitted--
	if n := s.perIP[ip] - 1; n > 0 {
		s.perIP[ip] = n
	} else {
		delete(s.perIP, ip)
	}
}

// ceilSeconds rounds d up to whole seconds, never below 1.
func ceilSeconds(d time.Duration) int {
	n := int((d + time.Second - 1) / time.Second)
	return max(n, 1)
}

func remoteIP(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
