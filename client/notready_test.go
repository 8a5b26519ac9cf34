package client

import (
	"testing"
	"time"
)

// Stage 8: the state says since when the client is not READY, Degraded
// after 3 s and Offline after 30 s, each flip a state effect at its
// instant; READY clears all three. Stage 7 has none of it.
func TestNotReadySinceDegradedAndOffline(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	if st := h.state(); !st.NotReadySince.Equal(t0) || st.Degraded || st.Offline {
		t.Fatalf("at start: %+v", st)
	}
	h.advance(3*time.Second - time.Millisecond)
	if h.state().Degraded {
		t.Fatal("degraded before 3 s")
	}
	n := len(h.states)
	h.advance(time.Millisecond)
	if !h.state().Degraded || len(h.states) != n+1 || !h.states[n].Degraded {
		t.Fatalf("no degraded state effect at 3 s: %+v", h.state())
	}
	for h.now.Before(t0.Add(30 * time.Second)) {
		if s := h.last(); h.sockets[s] != nil && !h.sockets[s].closed {
			h.closed(s) // every attempt fails
		}
		h.advance(min(h.timer.Sub(h.now), t0.Add(30*time.Second).Sub(h.now)))
	}
	if st := h.state(); !st.Offline || !st.NotReadySince.Equal(t0) {
		t.Fatalf("at 30 s: %+v", st)
	}
	h.advanceToDial()
	h.ready()
	if st := h.state(); !st.NotReadySince.IsZero() || st.Degraded || st.Offline {
		t.Fatalf("READY: %+v", st)
	}
	lost := h.now
	h.closed(h.last())
	if st := h.state(); !st.NotReadySince.Equal(lost) || st.Degraded {
		t.Fatalf("after a loss: %+v", st)
	}

	h = newHarness(t, 7)
	h.start()
	h.advance(time.Minute)
	if st := h.state(); !st.NotReadySince.IsZero() || st.Degraded || st.Offline {
		t.Fatalf("stage 7: %+v", st)
	}
}

// The thresholds are options; a fresh session after a terminal state
// keeps counting from when READY was lost.
func TestTheNotReadyThresholdsAreOptions(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.DegradedAfter, c.OfflineAfter = time.Second, 2*time.Second })
	h.start()
	h.advance(time.Second)
	if !h.state().Degraded || h.state().Offline {
		t.Fatalf("at 1 s: %+v", h.state())
	}
	h.c.closedWith4003(h)
	h.advance(10 * time.Second)
	if h.state().Offline {
		t.Fatal("an ended session armed the offline flip")
	}
	h.c.Reconnect(h.now)
	h.drain()
	if st := h.state(); !st.Offline || !st.NotReadySince.Equal(t0) {
		t.Fatalf("after Reconnect, 11 s without READY: %+v", st)
	}
}

// closedWith4003 ends the session (forbidden) on the current socket.
func (c *Core) closedWith4003(h *harness) {
	h.open(h.last())
	h.closedWith(h.last(), 4003, "")
}
