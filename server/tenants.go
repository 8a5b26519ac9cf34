//go:build !js

package server

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/wsready/wsready/internal/slots"
	"github.com/wsready/wsready/protocol"
	"golang.org/x/time/rate"
)

// Per-tenant limits, once a connection's Identity is known (its token
// verified) and names a tenant, on this node:
//
//   - MaxConnsPerTenant: a connection that would be one more is closed
//     with 1013 and "retry-after-ms=N" (at least tenantRetryFloor, a
//     reconnect slot after it), a classified refusal the client waits out;
//   - TenantMsgRate and TenantMsgBurst: the subscribe, publish and request
//     frames of the tenant's connections, a token bucket per tenant. Over
//     it a request or a publish is answered with the error rate_limited
//     and retryAfterMs, a subscribe with an error frame about its topic
//     (the same code and retryAfterMs); the connection stays. Probes (the
//     client's liveness check), auth and unsubscribe frames are exempt.
//
//   - TenantHandshakeRate and TenantHandshakeBurst: the tenant's
//     handshakes, a token bucket per tenant, checked before the upgrade
//     when Identify names the tenant from the request, else when the
//     connection's token does (just before MaxConnsPerTenant). Over it the
//     handshake is refused with 1013 and "retry-after-ms=N" (before the
//     upgrade as RefuseWith says: 503 and Retry-After over HTTP), N the
//     bucket's next token spread as a slot at the tenant's rate, so a
//     tenant's refused clients do not all come back at the same instant.
//     A connection refused after the upgrade took its token: it did
//     handshake.
//
// Connections without a tenant (anonymous, or an Identity with none) are
// not counted. The limits are per node: with N nodes behind a balancer a
// tenant may hold N times as much.
//
// Bounds: a tenant is tracked while it has open counted connections (at
// most MaxConns of them), and after its last one closes until its bucket
// refills; at most MaxConns + maxIdleTenants tenants are tracked. When a
// new tenant would pass that, tenants with no open connection are
// forgotten (their bucket with them: at worst such a tenant starts again
// with a full bucket). The metrics count refusals and tenants, never
// naming one.

// tenantRetryFloor is the least retry-after of a MaxConnsPerTenant refusal:
// a tenant at its ceiling stays there until one of its connections ends,
// so coming back at once would only be refused again.
const tenantRetryFloor = time.Second

// maxIdleTenants bounds the tenants kept with no open connection (their
// buckets refilling), beyond the MaxConns that may have one.
const maxIdleTenants = 10_000

type tenantState struct {
	name    string
	conns   int
	lim     *rate.Limiter    // nil without TenantMsgRate
	hs      *rate.Limiter    // nil without TenantHandshakeRate
	hsSlots *slots.Allocator // the refused handshakes' retry-afters, at the tenant's rate
}

type tenants struct {
	maxConns int        // 0: no ceiling
	rate     rate.Limit // 0: no ceiling
	burst    int
	hsRate   rate.Limit // 0: no ceiling
	hsBurst  int
	noSlots  bool
	max      int // tenants tracked at most

	mu     sync.Mutex
	m      map[string]*tenantState
	byConn map[uint64]*tenantState // the connections counted, to release

	refused   prometheus.Counter // connections refused at MaxConnsPerTenant
	limited   prometheus.Counter // frames answered rate_limited
	hsRefused prometheus.Counter // handshakes refused over TenantHandshakeRate
}

func newTenants(o *Options) *tenants {
	return &tenants{maxConns: o.MaxConnsPerTenant, rate: rate.Limit(o.TenantMsgRate), burst: o.TenantMsgBurst,
		hsRate: rate.Limit(o.TenantHandshakeRate), hsBurst: o.TenantHandshakeBurst, noSlots: o.NoSlots,
		max: o.MaxConns + maxIdleTenants, m: map[string]*tenantState{}, byConn: map[uint64]*tenantState{},
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_tenant_conns_refused_total",
			Help: "Connections closed with 1013 because their tenant was at MaxConnsPerTenant on this node."}),
		limited: prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_tenant_rate_limited_total",
			Help: "Client frames answered rate_limited because their tenant was over TenantMsgRate on this node."}),
		hsRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_tenant_handshakes_refused_total",
			Help: "Handshakes refused with 1013 (or 503) because their tenant was over TenantHandshakeRate on this node."}),
	}
}

// registerTenantMetrics adds the per-tenant counts to the metrics: counts
// only, no tenant in any label.
func (s *Server) registerTenantMetrics() {
	t := s.tenants
	s.metrics.reg.MustRegister(t.refused, t.limited, t.hsRefused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_tenants_tracked",
			Help: "Tenants this node tracks for its per-tenant limits (with open connections, or a bucket refilling)."},
			func() float64 { t.mu.Lock(); defer t.mu.Unlock(); return float64(len(t.m)) }))
}

func (t *tenants) off() bool { return t.maxConns == 0 && t.rate == 0 && t.hsRate == 0 }

// join counts connection id against tenant; false: the tenant is at
// MaxConnsPerTenant and nothing was counted.
func (t *tenants) join(id uint64, tenant string, now time.Time) bool {
	if tenant == "" || t.off() {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stateLocked(tenant, now)
	if t.maxConns > 0 && st.conns >= t.maxConns {
		t.refused.Inc()
		return false
	}
	st.conns++
	t.byConn[id] = st
	return true
}

// stateLocked returns tenant's state, tracking it if it is not yet.
// Called with t.mu held.
func (t *tenants) stateLocked(tenant string, now time.Time) *tenantState {
	st := t.m[tenant]
	if st != nil {
		return st
	}
	if len(t.m) >= t.max {
		t.forgetIdle(now, false)
	}
	if len(t.m) >= t.max {
		// Full of tenants with open connections or buckets refilling;
		// those with connections are at most MaxConns, so forgetting
		// the others makes room.
		t.forgetIdle(now, true)
	}
	st = &tenantState{name: tenant}
	if t.rate > 0 {
		st.lim = rate.NewLimiter(t.rate, t.burst)
	}
	if t.hsRate > 0 {
		st.hs, st.hsSlots = rate.NewLimiter(t.hsRate, t.hsBurst), slots.New(float64(t.hsRate))
	}
	t.m[tenant] = st
	return st
}

// handshake takes one handshake from tenant's bucket; false: there is
// none, and after is how long from now the tenant's client may come back
// (the bucket's next token, spread as a slot at the tenant's rate; at
// least 1 ms).
func (t *tenants) handshake(tenant string, now time.Time) (ok bool, after time.Duration) {
	if tenant == "" || t.hsRate == 0 {
		return true, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stateLocked(tenant, now)
	res := st.hs.ReserveN(now, 1)
	d := res.DelayFrom(now)
	if d <= 0 {
		return true, 0
	}
	res.CancelAt(now)
	t.hsRefused.Inc()
	if !t.noSlots {
		d = st.hsSlots.Take(now, now.Add(d)).Sub(now)
	}
	return false, max(d, time.Millisecond)
}

// leave releases connection id's place, if join counted it.
func (t *tenants) leave(id uint64, now time.Time) {
	if t.off() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.byConn[id]
	if st == nil {
		return
	}
	delete(t.byConn, id)
	if st.conns--; st.conns == 0 && t.refilled(st, now) {
		delete(t.m, st.name)
	}
}

func (t *tenants) refilled(st *tenantState, now time.Time) bool {
	return (st.lim == nil || st.lim.TokensAt(now) >= float64(t.burst)) &&
		(st.hs == nil || st.hs.TokensAt(now) >= float64(t.hsBurst))
}

// forgetIdle drops the tenants with no open connection whose bucket has
// refilled, or with all of them every tenant with no open connection.
func (t *tenants) forgetIdle(now time.Time, all bool) {
	for k, st := range t.m {
		if st.conns == 0 && (all || t.refilled(st, now)) {
			delete(t.m, k)
		}
	}
}

// allow takes one frame from tenant's bucket, or says how long until
// there is one.
func (t *tenants) allow(tenant string, now time.Time) (bool, time.Duration) {
	if tenant == "" || t.rate == 0 {
		return true, 0
	}
	t.mu.Lock()
	st := t.m[tenant]
	t.mu.Unlock()
	if st == nil || st.lim == nil {
		return true, 0 // not joined: the connection is being refused
	}
	res := st.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		t.limited.Inc()
		return false, d
	}
	return true, 0
}

// joinTenant counts the connection against its tenant once its Identity is
// known. If the tenant is at MaxConnsPerTenant it starts closing the
// connection with 1013 and a retry-after, and reports false.
func (c *conn) joinTenant(id Identity, now time.Time) bool {
	s := c.s
	if s.tenants.join(c.id, id.Tenant, now) {
		return true
	}
	after := s.slotAfter(now, now.Add(tenantRetryFloor))
	if after <= 0 { // NoSlots: the floor alone
		after = tenantRetryFloor
	}
	s.metrics.handshakeVia(outTenant, c.tr.kind())
	c.closeAsync(protocol.CloseTryAgainLater, protocol.RetryAfterReason(after))
	return false
}

// tenantHandshake takes the handshake of a connection whose token named
// its tenant from the tenant's bucket (TenantHandshakeRate). Over it, it
// starts closing the connection with 1013 and a retry-after, and reports
// false.
func (c *conn) tenantHandshake(id Identity, now time.Time) bool {
	ok, after := c.s.tenants.handshake(id.Tenant, now)
	if ok {
		return true
	}
	c.s.metrics.handshakeVia(outTenant, c.tr.kind())
	c.closeAsync(protocol.CloseTryAgainLater, protocol.RetryAfterReason(after))
	return false
}

// tenantHandshakeRefusal takes the handshake of a request Identify named
// (id) from its tenant's bucket, before the upgrade; over it, the refusal
// to answer it with (the caller releases the admission and refuses).
func (s *Server) tenantHandshakeRefusal(id Identity) *refusal {
	ok, after := s.tenants.handshake(id.Tenant, s.opts.Now())
	if ok {
		return nil
	}
	s.mu.Lock()
	s.counters.refused++ // admit counted the handshake
	s.mu.Unlock()
	return &refusal{why: "too many handshakes for this tenant: try again later", kind: outTenant,
		status: http.StatusServiceUnavailable, after: after}
}

// overTenantRate answers a frame its tenant has no room for with
// rate_limited and reports true; false lets the frame be served. Only
// subscribe, publish and request frames count (tenants.go's top).
func (c *conn) overTenantRate(m protocol.Message) bool {
	switch m.Type {
	case protocol.TypeSubscribe, protocol.TypePublish, protocol.TypeRequest:
	default:
		return false
	}
	ok, wait := c.s.tenants.allow(c.identity.Tenant, c.s.opts.Now())
	if ok {
		return false
	}
	ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
	msg := "this tenant sends more than " + strconv.FormatFloat(float64(c.s.tenants.rate), 'g', -1, 64) + " frames per second: retry after retryAfterMs"
	c.errorsOut.Add(1)
	if m.Type == protocol.TypeSubscribe {
		c.reply(protocol.ErrorFrame{Type: protocol.TypeError, Topic: m.Topic, Code: protocol.ErrRateLimited, Message: msg, RetryAfterMs: ms})
	} else {
		c.reply(protocol.ResponseFrame{Type: protocol.TypeResponse, ID: m.ID,
			Error: &protocol.ErrorBody{Code: protocol.ErrRateLimited, Message: msg, RetryAfterMs: ms}})
	}
	return true
}
