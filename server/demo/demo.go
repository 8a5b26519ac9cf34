//go:build !js

// Package demo is wsready's demo over a server.Server: the failure
// switches (one table, switches.go), the demo's feed topic and methods
// (feed.go), and the site wsready serve serves (Handler). An application
// does not need it, and a program that does not import it links none of
// it: the server consults the switches through a fault hook that is nil
// until New attaches one (server/faults.go names its points).
package demo

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/internal/faults"
)

// Demo is the demo's control surface over a Server: the failure switches
// (one table, listed by GET /api/faults), ResetCounters and the Drain
// switch, their JSON API under /api/, and the whole site wsready serve
// serves (Handler). Over HTTP the switches change state only with
// Options.Demo (403 otherwise); from Go (Set, ResetCounters) always.
type Demo struct {
	s     *server.Server
	f     *state
	files fs.FS
}

// New attaches the demo to s with o (nil: the defaults), and makes s the
// demo's server: it answers the demo's methods, echo (its params back)
// and time ({"unixMs": N}), unless s's Options.Methods has its own of
// that name, and, unless o.NoFeed, produces the demo's feed topic (an
// update per FeedInterval) until s closes. files (the page, the JS and
// the wasm: web.FS()) are served at / by Handler; nil serves none. It
// fails on options Validate refuses. A second New over the same s shares
// the first one's switches and options.
func New(s *server.Server, files fs.FS, o *Options) (*Demo, error) {
	c, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("failed to make the demo: %w", err)
	}
	h := faults.Attach(s, func(ctl faults.Control) faults.Hook {
		st := newState(ctl, c)
		st.start()
		return st
	})
	return &Demo{s: s, f: h.(*state), files: files}, nil
}

// Handler serves the demo's site, the Server's handlers mounted as
// wsready serve mounts them, beside the demo's own API:
//
//	/ws                 Server.Handler (and /ws/..., its HTTP transport)
//	/api/token          Server.TicketHandler
//	/api/stats          Server.StatsHandler's Stats with the demo's part (Demo.Stats)
//	/metrics            Server.MetricsHandler
//	/healthz            Server.HealthHandler
//	/api/faults         GET: the switches (switches.go); POST: flip them
//	/api/reset          POST: ResetCounters, answered with the stats
//	/api/drain          POST: a drain that accepts again after it
//	/                   the files, through Server.StaticHandler
//
// The POSTs of the demo's API answer 403 unless Options.Demo. Every route,
// a missing one included, is behind the Host check.
func (d *Demo) Handler() http.Handler {
	s, ctl := d.s, d.f.ctl
	mux := http.NewServeMux()
	mux.Handle("/ws", s.Handler())
	mux.Handle("/ws/", s.Handler()) // the HTTP transport: /ws/probe, /ws/session, /ws/sse, /ws/send
	mux.Handle("/api/token", s.TicketHandler())
	mux.Handle("/api/stats", ctl.Guard(http.HandlerFunc(d.serveStats), http.MethodGet, http.MethodHead))
	mux.Handle("/metrics", s.MetricsHandler())
	mux.Handle("/healthz", s.HealthHandler())
	mux.Handle("/api/faults", ctl.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			d.demoOnly(d.setFaults)(w, r)
			return
		}
		d.serveFaults(w, r)
	}), http.MethodGet, http.MethodHead, http.MethodPost))
	mux.Handle("/api/reset", ctl.Guard(d.demoOnly(d.resetCounters), http.MethodPost))
	mux.Handle("/api/drain", ctl.Guard(d.demoOnly(ctl.Drain()), http.MethodPost))
	if d.files != nil {
		mux.Handle("/", s.StaticHandler(d.files))
	}
	return ctl.HostGuard(mux)
}

// demoOnly serves h only with Options.Demo; otherwise it answers 403.
func (d *Demo) demoOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.f.opts.Demo {
			d.f.ctl.WriteJSON(w, http.StatusForbidden, map[string]string{"error": "the failure switches are off: start the server with -demo to use them"})
			return
		}
		h(w, r)
	}
}

// ResetCounters zeroes the windowed attempt counters (Stats'
// HandshakesWindow, RefusedWindow, ResetAt) and the ticket rejection
// windows, so a test can measure one scenario.
func (d *Demo) ResetCounters() { d.f.ctl.ResetCounters() }

// resetCounters is POST /api/reset: it answers with the stats after.
func (d *Demo) resetCounters(w http.ResponseWriter, r *http.Request) {
	d.ResetCounters()
	d.f.ctl.WriteJSON(w, http.StatusOK, d.Stats())
}

// logger is the server's (Options.Logger), never nil after New.
func logger(o *server.Options) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
