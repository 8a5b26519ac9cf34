//go:build !js

package demo

import (
	"net/http"
	"time"

	"github.com/wsready/wsready/server"
)

// Stats is the server's Stats with the demo's part, as the demo's GET
// /api/stats returns it (one JSON object: the server's fields and these).
type Stats struct {
	server.Stats
	FeedSeq      int64           `json:"feedSeq"`      // the last feed seq this node produced (0 with NoFeed)
	Faults       map[string]bool `json:"faults"`       // each switch's state by name (switches.go)
	RestartUntil *time.Time      `json:"restartUntil"` // while Restart refuses: when it accepts again; nil otherwise
}

// Stats returns a snapshot of the server's counters and the demo's
// switches, at the server's Stats.Now.
func (d *Demo) Stats() Stats {
	st := Stats{Stats: d.s.Stats(), FeedSeq: d.f.feedSeq.Load()}
	st.Faults = d.f.switchStates(st.Now)
	if until := d.f.RefusingUntil(); st.Now.Before(until) {
		st.RestartUntil = &until
	}
	return st
}

// serveStats is GET /api/stats, Server.StatsHandler's answer with the
// demo's part; ?connections=false leaves out the per-connection list.
func (d *Demo) serveStats(w http.ResponseWriter, r *http.Request) {
	st := d.Stats()
	if r.URL.Query().Get("connections") == "false" {
		st.Connections = nil
	}
	d.f.ctl.WriteJSON(w, http.StatusOK, st)
}
