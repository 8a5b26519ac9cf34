package client

import (
	"math"
	"time"
)

// The Reconnector's transport rule (stage 8, Config.Transports with a
// fallback). AfterFailure counts each failure first: a classified refusal
// (retry-after, 4001, 4003/1008, 1000) means the server is steering, and
// starts the count over; an attempt on the transport in use (Cause.Via)
// that never saw a first ping (!Cause.Proven) counts one; after
// fallbackAfter in a row on the preferred transport the driver is asked to
// probe the fallback (ProbeWanted; an HTTP fallback) or, if the fallback
// needs no probe, the next dials use it; after as many on the fallback,
// they use the preferred one again. On the fallback, the preferred one is
// tried again every ReprobeInterval (NextReprobe) beside the live socket.

// fallbackAfter is how many attempts in a row on a transport that never
// reach a first ping (never open, or open and stay silent) make the
// client try the other (stage 8).
const fallbackAfter = 3

// countTransport applies the transport rule to a failure.
func (rc *Reconnector) countTransport(c Cause) {
	if len(rc.r.transports) < 2 || c.Via == 0 {
		return // one transport, or no attempt (a failed token hook)
	}
	switch Classify(c) {
	case ClassRetryAfter, ClassTokenExpired, ClassForbidden, ClassEnded:
		rc.unproven = 0 // the server is steering: the transport works
		return
	}
	if c.Proven {
		rc.unproven = 0
		return
	}
	if c.Via != rc.NextTransport() {
		return // an attempt on the transport the client already left
	}
	if rc.unproven < math.MaxUint8 {
		rc.unproven++
	}
	if int(rc.unproven) < fallbackAfter {
		return
	}
	rc.unproven = 0
	switch {
	case rc.is(rcFallback):
		rc.set(rcFallback, false) // the fallback fails too: the preferred again
	case rc.r.transports[1] == TransportHTTP:
		if !rc.is(rcProbeOut) {
			rc.set(rcProbeWanted|rcProbeOut, true)
		}
	default:
		rc.set(rcFallback, true)
	}
}

// ProbeWanted reports, once, that the last decision asks the driver to
// probe the fallback transport (EffProbeHTTP): a plain HTTP request to the
// server, answered with ProbeAnswered.
func (rc *Reconnector) ProbeWanted() bool {
	w := rc.is(rcProbeWanted)
	rc.set(rcProbeWanted, false)
	return w
}

// ProbeAnswered takes the answer to the probe ProbeWanted asked for. ok:
// the next dials use the fallback, and the backoff starts over (the
// failures were the transport's, and the server answers). It reports
// whether the transport changed; an answer nobody asked for changes
// nothing.
func (rc *Reconnector) ProbeAnswered(ok bool) bool {
	if !rc.is(rcProbeOut) {
		return false
	}
	rc.set(rcProbeOut, false)
	if !ok || rc.is(rcFallback) {
		return false
	}
	rc.set(rcFallback, true)
	rc.unproven = 0
	rc.reset()
	return true
}

// NextTransport is the transport the next dial uses: the preferred one
// (Config.Transports[0]), or the fallback after the rule above.
func (rc *Reconnector) NextTransport() Transport {
	t := rc.r.transports
	switch {
	case len(t) == 0:
		return TransportWebSocket
	case rc.is(rcFallback) && len(t) > 1:
		return t[1]
	}
	return t[0]
}

// PreferredTransport is the transport the client prefers.
func (rc *Reconnector) PreferredTransport() Transport {
	if len(rc.r.transports) == 0 {
		return TransportWebSocket
	}
	return rc.r.transports[0]
}

// FirstPingSeen notes that a socket on the transport in use saw its first
// ping: the count of attempts that did not starts over.
func (rc *Reconnector) FirstPingSeen() { rc.unproven = 0 }

// NextReprobe says when, at instant at, the preferred transport is next to
// be tried beside a live socket on the fallback: ReprobeInterval on. False
// when the client is not on the fallback.
func (rc *Reconnector) NextReprobe(at time.Time) (time.Time, bool) {
	if !rc.is(rcFallback) || rc.r.reprobe <= 0 {
		return time.Time{}, false
	}
	return at.Add(rc.r.reprobe), true
}

// BackOnPreferred notes that a socket on the preferred transport replaced
// the fallback's: the next dials use the preferred one.
func (rc *Reconnector) BackOnPreferred() {
	rc.set(rcFallback, false)
	rc.unproven = 0
}
