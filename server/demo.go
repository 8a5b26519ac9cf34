//go:build !js

package server

import (
	"net/http"
)

// Demo is the demo's control surface over a Server: the failure switches
// (faults.go), Reset counters and the Drain switch, their JSON API under
// /api/, and the whole site wsready serve serves (Handler). An
// application does not need it; the wsready command and the tests do.
// Over HTTP the switches change state only with Options.Demo (403
// otherwise); from Go (Set, ResetCounters) always.
type Demo struct {
	s *Server
}

// NewDemo attaches the demo's control surface to s.
func NewDemo(s *Server) *Demo { return &Demo{s: s} }

// Handler serves the demo's site: the switch API (GET /api/faults, and
// with Options.Demo POST /api/faults, POST /api/reset, POST /api/drain),
// then everything Server.Handler serves.
func (d *Demo) Handler() http.Handler {
	s := d.s
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/faults", d.serveFaults)
	mux.HandleFunc("POST /api/faults", s.demoOnly(d.setFaults))
	mux.HandleFunc("POST /api/reset", s.demoOnly(d.resetCounters))
	mux.HandleFunc("POST /api/drain", s.demoOnly(s.serveDrain))
	mux.Handle("/", s.routes())
	return s.guard(mux)
}

// ResetCounters zeroes the windowed attempt counters (Stats'
// HandshakesWindow, RefusedWindow, ResetAt) and the ticket rejection
// windows, so a test can measure one scenario.
func (d *Demo) ResetCounters() {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters.handshakesWindow = 0
	s.counters.refused = 0
	s.counters.resetAt = s.opts.Now()
	s.auth.forgetRejections() // a demo that looped on Revoke starts clean
}

// resetCounters is POST /api/reset: it answers with the stats after.
func (d *Demo) resetCounters(w http.ResponseWriter, r *http.Request) {
	d.ResetCounters()
	writeJSON(w, http.StatusOK, d.s.Stats())
}
