//go:build !js

package server

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/internal/slots"
	"github.com/wsready/wsready/protocol"
	"golang.org/x/time/rate"
)

// Admission sits in front of the WebSocket upgrade. In order:
//
//   - shutting down, restarting (Restart switch) or draining: refused with a
//     reconnect slot;
//   - MaxConns and MaxConnsPerIP: refused;
//   - the handshake ceiling: a fleet-wide rate (AdmitRate, AdmitBurst) and
//     a per-address one (TenantRate, TenantBurst: a token, and so the
//     Identity's tenant, only arrives after the upgrade; tenants.go limits
//     those).
//
// "The address" is the client's (clientIP, proxy.go): the TCP peer's, or
// behind Options.TrustedProxies the one they forwarded. A request carrying the
//     operator's probe key (header X-Wsready-Probe) draws from a small
//     reserved limiter of its own (ProbeRate) instead, so a probe gets
//     through a storm.
//
// Every refusal carries a reconnect slot: a time to come back, handed out
// so that the expected arrivals stay under 90% of AdmitRate. A refusal is
// answered as RefuseWith says: "close" (the default) accepts the upgrade
// and closes at once with 1013 and "retry-after-ms=N", which a browser can
// read; "http" answers 503 (or 429 over the ceiling) with Retry-After in
// whole seconds, which costs less but reaches only native clients.

// outcome labels a handshake in the metrics.
type outcome string

const (
	outAccepted  outcome = "accepted"
	outAdmission outcome = "admission_refused" // over the handshake ceiling
	outLimit     outcome = "limit_refused"     // MaxConns, MaxConnsPerIP
	outRestart   outcome = "restart_refused"
	outDrain     outcome = "drain_refused"
	outShutdown  outcome = "shutdown_refused"
	outOverload  outcome = "overload_refused"
	outAuth      outcome = "auth_failed"
	outOrigin    outcome = "origin_refused"
	outTenant    outcome = "tenant_refused" // MaxConnsPerTenant, once the token named the tenant
)

var outcomes = []outcome{outAccepted, outAdmission, outLimit, outRestart, outDrain, outShutdown, outOverload, outAuth, outOrigin, outTenant}

// refusal is a handshake that was turned away.
type refusal struct {
	why    string        // for the HTTP body; never includes request text
	kind   outcome       // for the metrics
	after  time.Duration // the reconnect slot, from now
	status int           // with RefuseWith "http"
}

const probeHeader = "X-Wsready-Probe"

type admission struct {
	fleet *rate.Limiter
	probe *rate.Limiter

	mu      sync.Mutex
	tenants map[string]*tenant // per IP; idle ones are swept, at most maxTenants
	rate    rate.Limit
	burst   int

	slotMu sync.Mutex
	slots  *slots.Allocator
}

type tenant struct {
	lim   *rate.Limiter
	used  time.Time
	slots *slots.Allocator // for refusals by this tenant's own limit
}

const (
	maxTenants = 100_000
	tenantIdle = time.Minute
)

func newAdmission(o *Options) *admission {
	a := &admission{
		fleet:   rate.NewLimiter(rate.Limit(o.AdmitRate), o.AdmitBurst),
		probe:   rate.NewLimiter(rate.Limit(o.ProbeRate), max(1, int(o.ProbeRate))),
		tenants: map[string]*tenant{},
		rate:    rate.Limit(o.TenantRate),
		burst:   o.TenantBurst,
		slots:   slots.New(o.AdmitRate),
	}
	return a
}

// verdict is admission's answer for one handshake.
type verdict uint8

const (
	admitted      verdict = iota
	fleetRefused          // the fleet-wide ceiling: a slot from the fleet's schedule
	tenantRefused         // the tenant's own ceiling: a slot from its own schedule
)

// allow takes a token from the tenant's and the fleet's limiter (or the
// probe limiter for the operator's probes). A tenant over its own ceiling
// is refused with a slot from its own schedule, so a flood from one
// address pushes back only itself, never the fleet's slots.
func (a *admission) allow(ip string, probe bool, now time.Time) (verdict, time.Duration) {
	if probe {
		if a.probe.AllowN(now, 1) {
			return admitted, 0
		}
		return fleetRefused, 0
	}
	a.mu.Lock()
	t := a.tenants[ip]
	if t == nil {
		if len(a.tenants) >= maxTenants {
			for k, v := range a.tenants {
				if now.Sub(v.used) > tenantIdle {
					delete(a.tenants, k)
				}
			}
		}
		if len(a.tenants) >= maxTenants {
			a.mu.Unlock()
			return fleetRefused, 0 // more live tenants than we track: refuse new ones
		}
		t = &tenant{lim: rate.NewLimiter(a.rate, a.burst), slots: slots.New(float64(a.rate))}
		a.tenants[ip] = t
	}
	t.used = now
	if !t.lim.AllowN(now, 1) {
		d := max(t.slots.Take(now, now).Sub(now), time.Millisecond)
		a.mu.Unlock()
		return tenantRefused, d
	}
	a.mu.Unlock()
	if !a.fleet.AllowN(now, 1) {
		return fleetRefused, 0
	}
	return admitted, 0
}

// slot hands out the next reconnect slot at or after notBefore, and
// returns how long from now it is (at least 1 ms).
func (a *admission) slot(now, notBefore time.Time) time.Duration {
	a.slotMu.Lock()
	defer a.slotMu.Unlock()
	return max(a.slots.Take(now, notBefore).Sub(now), time.Millisecond)
}

// admit decides whether a WebSocket handshake may proceed, and reserves its
// place under MaxConns and MaxConnsPerIP if so.
func (s *Server) admit(r *http.Request, ip string) *refusal {
	now := s.opts.Now()
	probe := s.opts.ProbeKey != "" && r.Header.Get(probeHeader) == s.opts.ProbeKey
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters.handshakes++
	s.counters.handshakesWindow++
	var ref *refusal
	switch {
	case s.closed:
		ref = &refusal{why: "server shutting down: try again later", kind: outShutdown, status: http.StatusServiceUnavailable}
	case s.restartingLocked(now):
		ref = &refusal{why: "restarting: try again later", kind: outRestart, status: http.StatusServiceUnavailable}
		ref.after = s.slotAfter(now, s.hook().RefusingUntil())
	case s.drainingLocked():
		ref = &refusal{why: "draining: try again later", kind: outDrain, status: http.StatusServiceUnavailable}
		ref.after = s.slotAfter(now, s.drainEndsLocked())
	case s.admitted >= s.opts.MaxConns:
		s.counters.refusedFull++
		ref = &refusal{why: "server at its connection limit: try again later", kind: outLimit, status: http.StatusServiceUnavailable}
	case s.perIP[ip] >= s.opts.MaxConnsPerIP:
		s.counters.refusedPerIP++
		ref = &refusal{why: "too many connections from this address: try again later", kind: outLimit, status: http.StatusServiceUnavailable}
	default:
		v, after := s.adm.allow(ip, probe, now)
		if v == admitted {
			s.admitted++
			s.perIP[ip]++
			return nil
		}
		s.counters.refusedRate++
		ref = &refusal{why: "too many handshakes: try again later", kind: outAdmission, status: http.StatusTooManyRequests}
		if v == tenantRefused && !s.opts.NoSlots {
			ref.after = after
		}
	}
	if ref.after == 0 {
		ref.after = s.slotAfter(now, now)
	}
	s.counters.refused++
	return ref
}

// refuse answers a refused handshake with its reconnect slot.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, ref *refusal) {
	s.metrics.handshake(ref.kind)
	if s.opts.RefuseWith == RefuseHTTP {
		if ref.after > 0 {
			w.Header().Set("Retry-After", itoa64(int64(ceilSeconds(ref.after))))
		}
		http.Error(w, ref.why, ref.status)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns})
	if err != nil {
		return
	}
	ws.Close(protocol.CloseTryAgainLater, slotText(ref.after))
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

// RefuseMode says how a refused handshake is answered.
type RefuseMode string

const (
	RefuseClose RefuseMode = "close" // accept, then close with 1013 and retry-after-ms=N
	RefuseHTTP  RefuseMode = "http"  // 503 or 429 with Retry-After
)

// restartingLocked reports whether the demo's Restart refuses new
// connections at now. Called with s.mu held.
func (s *Server) restartingLocked(now time.Time) bool {
	f := s.hook()
	return f != nil && now.Before(f.RefusingUntil())
}

// restartEnd is when the demo's Restart accepts again (zero: none).
func (s *Server) restartEnd() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.hook(); f != nil {
		return f.RefusingUntil()
	}
	return time.Time{}
}

// slotAfter takes a reconnect slot at or after notBefore and returns how
// far from now it is; 0 with NoSlots.
func (s *Server) slotAfter(now, notBefore time.Time) time.Duration {
	if s.opts.NoSlots {
		return 0
	}
	return s.adm.slot(now, notBefore)
}

// slotText renders a slot as a close reason; "" for none.
func slotText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return protocol.RetryAfterReason(d)
}

// slotReason takes a reconnect slot at or after notBefore and renders it as
// a close reason.
func (s *Server) slotReason(notBefore time.Time) string {
	return slotText(s.slotAfter(s.opts.Now(), notBefore))
}
