package client

import (
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// An action's deadline holds across every phase a connection can be in:
// a request queued with a 5 s deadline settles at 5 s whether the client
// is noticing a dead peer (detection), waiting out a backoff, waiting for
// its token (admission), dialling (handshake) or waiting for the service
// (readiness); and when the next attempt is due after the deadline, it
// settles at once: no attempt can make the client READY in time.

// settledAfter advances the clock in 10 ms steps, for at most limit, until
// request id settles, and returns how long that took and the effect.
func (h *harness) settledAfter(id uint64, limit time.Duration) (time.Duration, Effect) {
	h.t.Helper()
	start := h.now
	for h.now.Sub(start) <= limit {
		if e, ok := h.settled[id]; ok {
			return h.now.Sub(start), e
		}
		h.advance(10 * time.Millisecond)
	}
	h.t.Fatalf("request %d did not settle within %v", id, limit)
	return 0, Effect{}
}

func TestAQueuedRequestsDeadlineHoldsInEveryPhase(t *testing.T) {
	const deadline = 5 * time.Second
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
		// into brings a started client into the phase; the request is
		// queued right after.
		into func(h *harness)
		want error
	}{
		{"detection: the peer went silent, the watchdog has not fired",
			func(c *Config) { c.Policy = Fixed{D: 2 * time.Second} },
			func(h *harness) { h.ready() }, ErrRequestTimeout},
		{"backoff: the next dial is due before the deadline, and fails",
			func(c *Config) { c.Policy = Fixed{D: 2 * time.Second} },
			func(h *harness) { h.ready(); h.closed(h.last()) }, ErrNotReady},
		{"admission: the token hook does not answer",
			func(c *Config) { c.Auth = true },
			func(h *harness) {}, ErrNotReady},
		{"handshake: the socket does not open",
			nil,
			func(h *harness) {}, ErrNotReady},
		{"readiness: open and pinged, never subscribed",
			nil,
			func(h *harness) { h.open(h.last()); h.ping(h.last(), 1000) }, ErrNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tweaks := []func(*Config){}
			if tc.tweak != nil {
				tweaks = append(tweaks, tc.tweak)
			}
			h := newHarness(t, 8, tweaks...)
			h.start()
			tc.into(h)
			id := h.queued(deadline)
			took, e := h.settledAfter(id, 2*deadline)
			if took != deadline {
				t.Fatalf("settled after %v, want %v: %+v", took, deadline, e)
			}
			if !errors.Is(e.Err, tc.want) {
				t.Fatalf("settled with %v, want %v", e.Err, tc.want)
			}
		})
	}
}

// A request queued while the next attempt is due after its deadline (a
// long backoff, a server's retry-after) settles at once with ErrNotReady:
// it could never be sent in time, and its caller can act now.
func TestARequestWhoseDeadlineComesBeforeTheNextAttemptFailsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
		lose  func(h *harness, s SocketID)
	}{
		{"backoff", func(c *Config) { c.Policy = Fixed{D: 8 * time.Second} },
			func(h *harness, s SocketID) { h.closed(s) }},
		{"admission refused with a retry-after", nil,
			func(h *harness, s SocketID) {
				h.closedWith(s, protocol.CloseTryAgainLater, protocol.RetryAfterReason(8*time.Second))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tweaks []func(*Config)
			if tc.tweak != nil {
				tweaks = append(tweaks, tc.tweak)
			}
			h := newHarness(t, 8, tweaks...)
			h.start()
			s := h.ready()
			tc.lose(h, s)
			id := h.queued(5 * time.Second)
			e, ok := h.settled[id]
			if !ok {
				took, _ := h.settledAfter(id, 10*time.Second)
				t.Fatalf("settled after %v, want at once: the next dial is 8 s away", took)
			}
			var re *RequestError
			if !errors.As(e.Err, &re) || !errors.Is(e.Err, ErrNotReady) {
				t.Fatalf("settled with %v, want a *RequestError with ErrNotReady", e.Err)
			}
			// One with a deadline past the dial still waits for it.
			later := h.queued(20 * time.Second)
			if _, ok := h.settled[later]; ok {
				t.Fatal("a request that can still make it settled at once")
			}
		})
	}
}

// A request queued while READY and requeued by a loss whose next dial is
// after its deadline was sent once: its outcome is unknown, so it is not
// settled early as never sent; it times out at its deadline.
func TestARequeuedRequestStillWaitsOutItsDeadline(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.Policy = Fixed{D: 8 * time.Second} })
	h.start()
	s := h.ready()
	id := h.queued(5 * time.Second)
	h.closed(s)
	took, e := h.settledAfter(id, 10*time.Second)
	if took != 5*time.Second || !errors.Is(e.Err, ErrRequestTimeout) {
		t.Fatalf("settled after %v with %v, want 5s and ErrRequestTimeout", took, e.Err)
	}
}

// The session's own deadline, the reconnect window: a failure whose
// backoff would start the next dial at or after the window's end gives up
// then, not at the window's end; no attempt that cannot finish inside the
// window is started, or waited for.
func TestNoAttemptStartsThatCannotFinishInsideTheWindow(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) {
		c.Window = 5 * time.Second
		c.Policy = Fixed{D: 3 * time.Second}
	})
	h.start()
	s := h.ready()
	h.closed(s) // the run starts: the window ends at +5 s, the dial is at +3 s
	start := h.now
	h.advanceToDial()
	h.closed(h.last()) // at +3 s: the next dial would be at +6 s, past the window
	if st := h.state(); st.Ended != GaveUp {
		t.Fatalf("at +%v: %+v, want gave_up now", h.now.Sub(start), st)
	}
	if took := h.now.Sub(start); took != 3*time.Second {
		t.Fatalf("gave up after %v, want 3s", took)
	}
	if r := h.records[len(h.records)-1]; r.Outcome != Outcome(GaveUp) || r.Delay != 3*time.Second {
		t.Fatalf("last record %+v", r)
	}
	if len(h.dials) != 2 {
		t.Fatalf("dials %v", h.dials)
	}
}
