//go:build !js

package server

import (
	_ "embed"
	"math"
	"net/http"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The fleet page: what this node's clients reported (reports.go), live,
// for an operator without a Prometheus at hand. It reads the node's own
// metrics registry, so it shows this node only: several nodes are summed
// by Prometheus (docs/operations.md has the queries), never here.
// FleetHandler serves the page (fleetpage.html, embedded) and the JSON it
// polls every second; wsready serve mounts it at /fleet/ with -fleet and
// not otherwise. The JSON carries counts, shares and durations from fixed
// lists: no client id, address, topic or peer text.

//go:embed fleetpage.html
var fleetPageHTML []byte

// FleetStats is the fleet page's JSON (GET fleet.json under the
// FleetHandler's mount): this node's clients since the node started,
// except the live gauges (Connections, Ready).
type FleetStats struct {
	Node  string `json:"node"`
	NowMs int64  `json:"nowMs"` // Unix ms when the figures were read
	// Connections open now, by transport ("ws", "sse"): the transport mix.
	Connections map[string]int `json:"connections"`
	Open        int            `json:"open"`  // the sum of Connections
	Ready       int            `json:"ready"` // open connections whose client reported READY on them
	// ReadyShare is Ready over Open; 0 with nothing open.
	ReadyShare float64 `json:"readyShare"`
	// Recovery: READY again after a loss; Connect: the first READY.
	Recovery FleetReadiness `json:"recovery"`
	Connect  FleetReadiness `json:"connect"`
	// Reports counted since start, by the transport the client was READY on.
	Reports        map[string]int `json:"reports"`
	RefusedBusy    int            `json:"refusedBusy"` // busy refusals the clients met (1013, HTTP 429/503)
	RefusedSlot    int            `json:"refusedSlot"` // other closes with a retry-after
	ContinuityLost int            `json:"continuityLost"`
	ReportsDropped int            `json:"reportsDropped"` // bad or over the per-connection rate
}

// FleetReadiness is one kind of report's figures since start. The
// quantiles are read from wsready_client_ready_seconds's buckets the way
// PromQL's histogram_quantile reads them (linear inside a bucket), so they
// agree with a Prometheus query over the same node; nil with no report.
type FleetReadiness struct {
	Count      int      `json:"count"`
	P50Seconds *float64 `json:"p50Seconds"`
	P99Seconds *float64 `json:"p99Seconds"`
	// AttemptsPer is the sockets dialled per READY (the attempts
	// histogram's sum over its count); 0 with no report.
	AttemptsPer float64 `json:"attemptsPer"`
}

// FleetHandler serves the fleet page at its mount's root (GET .../) and
// its data as FleetStats at fleet.json beside it: this node's clients'
// readiness, from the node's own metrics (a single node's page shows that
// node; Prometheus sums a fleet). Behind the Host check; GET and HEAD
// only; any other path is 404 (mount it under a prefix with
// http.StripPrefix). wsready serve mounts it at
// /fleet/ with -fleet (off by default, like the demo's switches).
func (s *Server) FleetHandler() http.Handler {
	return s.httpGuard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/fleet.json" || r.URL.Path == "fleet.json":
			writeJSON(w, http.StatusOK, s.Fleet())
		case r.URL.Path == "/" || r.URL.Path == "":
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			// The page's script and style are inline and it fetches only
			// its own fleet.json: nothing else may load.
			h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:")
			h.Set("X-Content-Type-Options", "nosniff")
			w.Write(fleetPageHTML)
		default:
			http.NotFound(w, r)
		}
	}), readMethods...)
}

// Fleet reads FleetStats from the node's metrics now.
func (s *Server) Fleet() FleetStats {
	st := FleetStats{Node: s.opts.Node, NowMs: time.Now().UnixMilli(), Connections: map[string]int{}, Reports: map[string]int{}}
	fams, _ := s.metrics.reg.Gather() // a collector's error leaves its metrics out; the rest are still read
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			label := func(name string) string {
				for _, l := range m.GetLabel() {
					if l.GetName() == name {
						return l.GetValue()
					}
				}
				return ""
			}
			switch mf.GetName() {
			case "wsready_connections_open":
				st.Connections[label("transport")] += int(m.GetGauge().GetValue())
			case "wsready_clients_ready":
				st.Ready = int(m.GetGauge().GetValue())
			case "wsready_client_reports_total":
				st.Reports[label("transport")] += int(m.GetCounter().GetValue())
			case "wsready_client_refusals_total":
				if label("class") == "busy" {
					st.RefusedBusy = int(m.GetCounter().GetValue())
				} else {
					st.RefusedSlot += int(m.GetCounter().GetValue())
				}
			case "wsready_client_continuity_lost_total":
				st.ContinuityLost = int(m.GetCounter().GetValue())
			case "wsready_client_reports_dropped_total":
				st.ReportsDropped += int(m.GetCounter().GetValue())
			case "wsready_client_ready_seconds":
				if r := fleetKind(&st, label("kind")); r != nil {
					h := m.GetHistogram()
					r.Count = int(h.GetSampleCount())
					r.P50Seconds = histogramQuantile(0.50, h)
					r.P99Seconds = histogramQuantile(0.99, h)
				}
			case "wsready_client_attempts":
				if r := fleetKind(&st, label("kind")); r != nil {
					if h := m.GetHistogram(); h.GetSampleCount() > 0 {
						r.AttemptsPer = h.GetSampleSum() / float64(h.GetSampleCount())
					}
				}
			}
		}
	}
	for _, n := range st.Connections {
		st.Open += n
	}
	if st.Open > 0 {
		st.ReadyShare = float64(st.Ready) / float64(st.Open)
	}
	return st
}

func fleetKind(st *FleetStats, kind string) *FleetReadiness {
	switch kind {
	case "recovery":
		return &st.Recovery
	case "connect":
		return &st.Connect
	}
	return nil
}

// histogramQuantile is PromQL's histogram_quantile over one classic
// histogram: the bucket where the q-th observation falls, and linear
// interpolation inside it (from 0 in the first bucket; a rank in the +Inf
// bucket reads the highest finite bound). nil with no observation.
func histogramQuantile(q float64, h *dto.Histogram) *float64 {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return nil
	}
	type bucket struct{ upper, count float64 }
	bs := make([]bucket, 0, len(h.GetBucket())+1)
	for _, b := range h.GetBucket() {
		bs = append(bs, bucket{b.GetUpperBound(), float64(b.GetCumulativeCount())})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].upper < bs[j].upper })
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].upper, 1) {
		bs = append(bs, bucket{math.Inf(1), total})
	}
	rank := q * total
	i := sort.Search(len(bs), func(i int) bool { return bs[i].count >= rank })
	var v float64
	switch {
	case i == len(bs)-1 && len(bs) > 1:
		v = bs[len(bs)-2].upper
	case i == len(bs)-1:
		return nil // only the +Inf bucket: no bound to read
	default:
		start, count := 0.0, bs[i].count
		if i > 0 {
			start = bs[i-1].upper
			count -= bs[i-1].count
			rank -= bs[i-1].count
		}
		v = start + (bs[i].upper-start)*(rank/count)
	}
	return &v
}
