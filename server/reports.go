//go:build !js

package server

import (
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/wsready/wsready/protocol"
)

// Readiness reports: each client tells the server, on the connection it is
// READY on, how it got there (protocol/report.go, client/report.go). The
// server checks every field (the decoder's closed lists and ranges, and
// the transport against the connection's own), rate-limits them per
// connection, and counts them into Prometheus with labels from fixed
// lists only: no client id, session, address or topic. Several nodes are
// summed by Prometheus (sum by (le) over the histogram buckets). A bad or
// excess report is dropped and counted by reason, never answered (a
// report asks for no answer) and never logged: its bytes are the peer's.
// The metrics and the alerts on them: docs/operations.md.

// Per connection, a client sends one report each time it becomes READY
// on it: one, or a few if its service comes and goes on a live socket.
// The server takes reportBurst at once, then one per reportEvery, and
// drops the rest (reason "rate"), so one connection cannot weigh more
// than its share in the histograms.
const (
	reportBurst = 3
	reportEvery = 10 * time.Second
)

// Report drop reasons: "rate", "transport" (the report names a transport
// other than the connection's), and "bad_<field>" for a field the decoder
// refused (bad_report when the body itself is missing or not an object).
const (
	dropRate      = "rate"
	dropTransport = "transport"
	dropBadReport = "bad_report"
)

// reportDropReasons are every drop reason, each counter made at start so
// that a rate() over it reads 0, not nothing, before the first drop.
var reportDropReasons = []string{dropRate, dropTransport, dropBadReport, "bad_kind", "bad_notReadyMs", "bad_attempts",
	"bad_cause", "bad_transport", "bad_refusedBusy", "bad_refusedSlot", "bad_lost", "bad_role"}

// reportMetrics are the reports' counters, on the server's registry.
type reportMetrics struct {
	ready     atomic.Int64 // connections whose client reported READY on them, still open
	reports   *prometheus.CounterVec
	toReady   *prometheus.HistogramVec
	attempts  *prometheus.HistogramVec
	causes    *prometheus.CounterVec
	refusals  *prometheus.CounterVec
	lost      prometheus.Counter
	dropped   *prometheus.CounterVec
	readyFunc prometheus.GaugeFunc
}

// Buckets: time to READY from 50 ms to a minute. histogram_quantile
// interpolates linearly inside a bucket, so its error is at most the
// bucket's width: from 1 s to 25 s no bucket is wider than a quarter of
// its lower bound (1-1.25, 4-5, 20-25; 10-12 a fifth), which keeps the
// p50 and p99 a storm's clients measured within 10% (make fleet-test;
// the coarser 18 buckets before, 4-6, 6-8, 8-10, 10-15, 15-20, read a p99
// 6.7% and 8.3% off in that test). 30 buckets a kind; attempts from 1 to
// 64.
var (
	toReadyBuckets  = []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30, 40, 50, 60}
	attemptsBuckets = []float64{1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 64}
)

func newReportMetrics(reg *prometheus.Registry) *reportMetrics {
	m := &reportMetrics{
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wsready_client_reports_total",
			Help: "Readiness reports counted, by kind (connect, recovery, transport) and the transport the client is READY on (ws, sse)."},
			[]string{"kind", "transport"}),
		toReady: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wsready_client_ready_seconds",
			Help:    "Time clients were without READY, as they measured it: since start (kind connect) or since they lost READY (kind recovery).",
			Buckets: toReadyBuckets}, []string{"kind"}),
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wsready_client_attempts",
			Help:    "Sockets a client dialled to reach READY, by kind (connect, recovery); sum over count is attempts per success.",
			Buckets: attemptsBuckets}, []string{"kind"}),
		causes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wsready_client_recoveries_total",
			Help: "Recoveries clients reported, by the class of the failure that cost them READY (none: lost with the connection up)."},
			[]string{"cause"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wsready_client_refusals_total",
			Help: "Server refusals clients met on their way to READY: busy (1013, HTTP 429/503), slot (another close with a retry-after)."},
			[]string{"class"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_client_continuity_lost_total",
			Help: "Continuity losses clients reported (updates the server could no longer replay)."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wsready_client_reports_dropped_total",
			Help: "Readiness reports dropped, by reason: rate, transport, bad_<field>."}, []string{"reason"}),
	}
	m.readyFunc = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_clients_ready",
		Help: "Open connections whose client reported READY on them (beside wsready_connections_open)."},
		func() float64 { return float64(m.ready.Load()) })
	reg.MustRegister(m.reports, m.toReady, m.attempts, m.causes, m.refusals, m.lost, m.dropped, m.readyFunc)
	for _, k := range []string{protocol.ReportConnect, protocol.ReportRecovery, protocol.ReportTransport} {
		for _, t := range transportKinds {
			m.reports.WithLabelValues(k, t.String())
		}
		if k != protocol.ReportTransport {
			m.toReady.WithLabelValues(k)
			m.attempts.WithLabelValues(k)
		}
	}
	for _, c := range protocol.ReportCauses {
		m.causes.WithLabelValues(c)
	}
	m.refusals.WithLabelValues("busy")
	m.refusals.WithLabelValues("slot")
	for _, r := range reportDropReasons {
		m.dropped.WithLabelValues(r)
	}
	return m
}

// reportState is a connection's, kept by its reader alone.
type reportState struct {
	lim   *rate.Limiter // made at the first report
	ready bool          // counted in reportMetrics.ready
}

// report counts a valid report frame, or drops it.
func (c *conn) report(m protocol.Message) {
	rm := c.s.metrics.rep
	r := m.Report
	kind := c.tr.kind()
	if (r.Transport == "ws") != (kind == transportWS) {
		rm.dropped.WithLabelValues(dropTransport).Inc()
		return
	}
	// Only a report that would count takes from the rate: the limit
	// bounds one connection's weight in the metrics.
	if c.rep.lim == nil {
		c.rep.lim = rate.NewLimiter(rate.Every(reportEvery), reportBurst)
	}
	if !c.rep.lim.AllowN(c.s.opts.Now(), 1) {
		rm.dropped.WithLabelValues(dropRate).Inc()
		return
	}
	rm.reports.WithLabelValues(r.Kind, kind.String()).Inc()
	if r.Kind != protocol.ReportTransport {
		rm.toReady.WithLabelValues(r.Kind).Observe(float64(r.NotReadyMs) / 1000)
		rm.attempts.WithLabelValues(r.Kind).Observe(float64(r.Attempts))
	}
	if r.Kind == protocol.ReportRecovery {
		rm.causes.WithLabelValues(r.Cause).Inc()
	}
	rm.refusals.WithLabelValues("busy").Add(float64(r.RefusedBusy))
	rm.refusals.WithLabelValues("slot").Add(float64(r.RefusedSlot))
	rm.lost.Add(float64(r.Lost))
	if !c.rep.ready {
		c.rep.ready = true
		rm.ready.Add(1)
	}
}

// badReport counts a report frame the decoder refused, by the field it
// named (from the decoder's fixed list, never the peer's text).
func (c *conn) badReport(err error) {
	reason := dropBadReport
	var de *protocol.DecodeError
	if errors.As(err, &de) {
		if f, ok := strings.CutPrefix(de.Field, "report."); ok {
			for _, r := range reportDropReasons {
				if r == "bad_"+f {
					reason = r
				}
			}
		}
	}
	c.s.metrics.rep.dropped.WithLabelValues(reason).Inc()
}

// reportsEnd takes an ended connection out of the READY gauge (its
// reader, once it has stopped).
func (c *conn) reportsEnd() {
	if c.rep.ready {
		c.rep.ready = false
		c.s.metrics.rep.ready.Add(-1)
	}
}
