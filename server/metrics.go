//go:build !js

package server

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/wsready/wsready"
)

// metrics are the server's Prometheus metrics, served at /metrics in the
// text format. Counters are monotonic since start (the windowed counters of
// /api/stats are for the demo). No label carries a connection id, a remote
// address, a token or any text a peer chose: outcomes, close codes and
// transports come from fixed lists, anything else is "other". The
// transport label is "ws" (WebSocket) or "sse" (the HTTP transport).
type metrics struct {
	reg        *prometheus.Registry
	handshakes *prometheus.CounterVec
	closes     *prometheus.CounterVec
	sweep      *prometheus.CounterVec
	drained    prometheus.Counter
	requests   prometheus.Histogram
	published  prometheus.Counter

	publishFailures prometheus.Counter
	// subLimited counts subscribes answered rate_limited (SubscribeRate),
	// all connections together: no label, so it stays one series.
	subLimited prometheus.Counter

	rep *reportMetrics // the clients' readiness reports (reports.go)
}

var knownCodes = map[int]bool{1000: true, 1001: true, 1006: true, 1008: true, 1009: true, 1011: true, 1012: true, 1013: true,
	4000: true, 4001: true, 4003: true, 4408: true, 4429: true}

func codeLabel(code int) string {
	if knownCodes[code] {
		return strconv.Itoa(code)
	}
	return "other"
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wsready_handshakes_total",
			Help: "Handshakes (WebSocket upgrades, HTTP sessions) by outcome and transport."}, []string{"outcome", "transport"}),
		closes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wsready_closes_total",
			Help: "Connection closes by who started them (server, client), close code and transport."}, []string{"by", "code", "transport"}),
		sweep: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wsready_sweep_closes_total",
			Help: "Connections closed by the liveness sweep (WebSocket: silent, no pong within one interval plus the grace; HTTP: no stream attached within two ping intervals plus the grace), by transport."}, []string{"transport"}),
		drained: prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_drain_closed_total",
			Help: "Connections closed by drains."}),
		requests: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wsready_request_seconds",
			Help: "Time from reading a request to queueing its response.", Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10)}),
	}
	m.published = prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_published_total",
		Help: "Updates clients published through this node."})
	m.publishFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_publish_failures_total",
		Help: "Publishes (clients' and the backend's Server.Publish) the history backend failed to store (an error or HistoryTimeout)."})
	m.subLimited = prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_subscribe_rate_limited_total",
		Help: "Subscribe frames answered rate_limited because their connection was over SubscribeRate."})
	m.reg.MustRegister(m.handshakes, m.closes, m.sweep, m.drained, m.requests, m.published, m.publishFailures, m.subLimited)
	m.rep = newReportMetrics(m.reg)
	// The standard collectors: the Go runtime (go_*), this process
	// (process_*, on Linux and Windows) and the Go build (go_build_info),
	// plus wsready_build_info with this release's version.
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "wsready_build_info",
		Help: "Always 1; the version label is the wsready release.", ConstLabels: prometheus.Labels{"version": wsready.Version}})
	buildInfo.Set(1)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(), buildInfo)
	for _, k := range transportKinds {
		for _, o := range append(outcomes[:len(outcomes):len(outcomes)], outBlocked) {
			m.handshakes.WithLabelValues(string(o), k.String())
		}
		m.sweep.WithLabelValues(k.String())
	}
	return m
}

// outBlocked is an upgrade the Block WebSocket switch refused.
const outBlocked outcome = "blocked"

// handshake counts a WebSocket handshake's outcome.
func (m *metrics) handshake(o outcome) { m.handshakeVia(o, transportWS) }

// handshakeVia counts a handshake's outcome on transport k.
func (m *metrics) handshakeVia(o outcome, k transportKind) {
	m.handshakes.WithLabelValues(string(o), k.String()).Inc()
}

func (m *metrics) closed(byServer bool, code int, k transportKind) {
	by := "client"
	if byServer {
		by = "server"
	}
	m.closes.WithLabelValues(by, codeLabel(code), k.String()).Inc()
}

// registerGauges adds the gauges read from the server's state at scrape time.
func (s *Server) registerGauges() {
	for _, k := range transportKinds {
		s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_connections_open",
			Help: "Open connections (WebSockets, HTTP sessions) by transport.", ConstLabels: prometheus.Labels{"transport": k.String()}},
			func() float64 { s.mu.Lock(); defer s.mu.Unlock(); return float64(s.open[k]) }))
	}
	s.metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_feed_seq", Help: "The demo feed's last sequence number."},
			func() float64 {
				if f := s.hook(); f != nil {
					return float64(f.FeedSeq())
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_drain_remaining", Help: "Connections a drain in progress has yet to close."},
			func() float64 { s.mu.Lock(); defer s.mu.Unlock(); return float64(s.drain.remaining) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_draining", Help: "1 while a drain is in progress."},
			func() float64 {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.drainingLocked() {
					return 1
				}
				return 0
			}),
	)
}

// MetricsHandler answers GET with the server's Prometheus metrics in the
// text format: wsready_* (handshakes by outcome, closes by code, open
// connections, drains, sweeps, requests, publishes; by transport where it
// applies), the Go runtime's and
// the process's; no label carries peer text. Behind the Host check; GET and HEAD only. wsready
// serve mounts it at /metrics.
func (s *Server) MetricsHandler() http.Handler {
	return s.httpGuard(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}), readMethods...)
}
