//go:build !js

package server

import (
	"context"
	"net/http"
	"time"

	"github.com/wsready/wsready/protocol"
)

// A drain lets a server leave without bringing its whole fleet back in the
// same second. At once, /healthz turns 503 (a load balancer stops sending
// new clients) and new handshakes are refused with a reconnect slot; then
// the open connections are closed with 1001 in batches spread over
// DrainWindow, each with its own slot ("retry-after-ms=N", slots spread
// under the admission rate, starting when the window ends). On SIGTERM the
// process exits once none is left or the window is over; the Drain switch
// (POST /api/drain, demo mode) runs the same drain and then accepts again.

type drainState struct {
	active    bool
	until     time.Time // the window's end
	remaining int       // connections this drain has yet to close
}

func (s *Server) drainingLocked() bool       { return s.drain.active }
func (s *Server) drainEndsLocked() time.Time { return s.drain.until }
func (s *Server) draining() bool             { s.mu.Lock(); defer s.mu.Unlock(); return s.drain.active }
func (s *Server) drainEnd() time.Time        { s.mu.Lock(); defer s.mu.Unlock(); return s.drain.until }

// HealthHandler answers GET with 200 "ok", or 503 "draining" from the
// moment a drain starts, for a load balancer. Behind the Host check; GET
// and HEAD only. wsready serve mounts it at /healthz.
func (s *Server) HealthHandler() http.Handler {
	return s.httpGuard(http.HandlerFunc(s.serveHealth), readMethods...)
}

// serveHealth is the health check: 200 "ok", or 503 "draining" from the
// moment a drain starts.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if s.draining() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ok\n"))
}

// serveDrain is the Drain switch: POST /api/drain (demo mode) runs a drain
// in the background and accepts again after it.
func (s *Server) serveDrain(w http.ResponseWriter, r *http.Request) {
	if s.draining() {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "a drain is already running"})
		return
	}
	// Added under s.mu with closed false, as every other goroutine the
	// server counts: Close's Wait then follows it, never races it.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "the server is closing", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.Drain(s.ctx, true)
	}()
	writeJSON(w, http.StatusAccepted, map[string]any{"draining": true, "windowMs": s.opts.DrainWindow.Milliseconds()})
}

// drainBatches is how many batches a drain closes its connections in.
const drainBatches = 10

// Drain lets the server leave without bringing its fleet back in the same
// second: HealthHandler turns 503 at once, new handshakes are refused with
// a reconnect slot, and the open connections are closed with 1001 in
// batches over DrainWindow, each with its own slot. It returns when none
// is left, the window is over, or ctx ends. With resume the server
// accepts handshakes again afterwards; without, it keeps refusing (the
// process is about to exit).
func (s *Server) Drain(ctx context.Context, resume bool) {
	now := s.opts.Now()
	s.mu.Lock()
	if s.closed || s.drain.active {
		s.mu.Unlock()
		return
	}
	until := now.Add(s.opts.DrainWindow)
	s.drain = drainState{active: true, until: until}
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.drain.remaining = len(conns)
	s.mu.Unlock()
	s.log.Info("drain", "connections", len(conns), "window", s.opts.DrainWindow, "resume", resume)
	defer func() {
		if resume {
			s.mu.Lock()
			s.drain = drainState{}
			s.mu.Unlock()
		}
	}()

	step := s.opts.DrainWindow / drainBatches
	per := (len(conns) + drainBatches - 1) / drainBatches
	t := time.NewTimer(0)
	defer t.Stop()
	for len(conns) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := min(per, len(conns))
		for _, c := range conns[:n] {
			s.mu.Lock()
			if s.conns[c.id] == c {
				c.closeAsync(protocol.CloseGoingAway, s.slotReason(until))
				s.metrics.drained.Inc()
			}
			s.drain.remaining--
			s.mu.Unlock()
		}
		conns = conns[n:]
		t.Reset(step)
	}
	// Wait for the closes to finish, until the window ends.
	for {
		s.mu.Lock()
		open := len(s.conns)
		s.mu.Unlock()
		if open == 0 || !s.opts.Now().Before(until) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
