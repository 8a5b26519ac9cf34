//go:build !js

package server

import (
	"io/fs"
	"net/http"
)

// Demo is the demo's control surface over a Server: the failure switches
// (one table, listed by GET /api/faults), Reset counters and the Drain
// switch, their JSON API under /api/, and the whole site wsready serve
// serves (Handler). An
// application does not need it; the wsready command and the tests do.
// Over HTTP the switches change state only with Options.Demo (403
// otherwise); from Go (Set, ResetCounters) always.
type Demo struct {
	s     *Server
	f     *demoFaults
	files fs.FS
}

// NewDemo attaches the demo's control surface to s, and makes s the
// demo's server: it answers the demo's methods, echo (its params back) and
// time ({"unixMs": N}), unless Options.Methods has its own of that name,
// and, unless Options.NoFeed, produces the demo's feed topic (an update per
// FeedInterval) until Close. files (the page, the JS and the wasm:
// web.FS()) are served at / by Handler; nil serves none.
func NewDemo(s *Server, files fs.FS) *Demo {
	return &Demo{s: s, f: s.startDemo(), files: files}
}

// Handler serves the demo's site, the Server's handlers mounted as
// wsready serve mounts them, beside the demo's own API:
//
//	/ws                 Server.Handler (and /ws/..., its HTTP transport)
//	/api/token          Server.TicketHandler
//	/api/stats          Server.StatsHandler
//	/metrics            Server.MetricsHandler
//	/healthz            Server.HealthHandler
//	/api/faults         GET: the switches (demo_switches.go); POST: flip them
//	/api/reset          POST: ResetCounters, answered with the stats
//	/api/drain          POST: a drain that accepts again after it
//	/                   the files, through Server.StaticHandler
//
// The POSTs of the demo's API answer 403 unless Options.Demo. Every route,
// a missing one included, is behind the Host check.
func (d *Demo) Handler() http.Handler {
	s := d.s
	mux := http.NewServeMux()
	mux.Handle("/ws", s.Handler())
	mux.Handle("/ws/", s.Handler()) // the HTTP transport: /ws/probe, /ws/session, /ws/sse, /ws/send
	mux.Handle("/api/token", s.TicketHandler())
	mux.Handle("/api/stats", s.StatsHandler())
	mux.Handle("/metrics", s.MetricsHandler())
	mux.Handle("/healthz", s.HealthHandler())
	mux.Handle("/api/faults", s.httpGuard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			d.demoOnly(d.setFaults)(w, r)
			return
		}
		d.serveFaults(w, r)
	}), http.MethodGet, http.MethodHead, http.MethodPost))
	mux.Handle("/api/reset", s.httpGuard(d.demoOnly(d.resetCounters), http.MethodPost))
	mux.Handle("/api/drain", s.httpGuard(d.demoOnly(s.serveDrain), http.MethodPost))
	if d.files != nil {
		mux.Handle("/", s.StaticHandler(d.files))
	}
	return s.hostGuard(mux)
}

// demoOnly serves h only with Options.Demo; otherwise it answers 403.
func (d *Demo) demoOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.s.opts.Demo {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "the failure switches are off: start the server with -demo to use them"})
			return
		}
		h(w, r)
	}
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
