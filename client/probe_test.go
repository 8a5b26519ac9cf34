package client

import (
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// lastSent returns the last frame the core sent on socket s.
func (h *harness) lastSent(s SocketID) protocol.Message {
	sent := h.sockets[s].sent
	if len(sent) == 0 {
		return protocol.Message{}
	}
	return sent[len(sent)-1]
}

func TestStage6ProbesBeforeItKills(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	s := h.ready() // a ping at t0: interval 1 s
	h.advance(1249 * time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 0 {
		t.Fatal("probed before 1.25 intervals of silence")
	}
	h.advance(time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 1 || !h.state().Ready {
		t.Fatalf("at 1.25 s: %d probes, ready %v; want one probe and still READY", h.count(protocol.TypeProbe, s), h.state().Ready)
	}
	h.advance(249 * time.Millisecond)
	if !h.state().Ready {
		t.Fatal("killed before the probe timeout (250 ms at 1 s pings)")
	}
	h.advance(time.Millisecond)
	if h.state().Ready || !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseHeartbeatTimeout {
		t.Fatalf("no answer within 250 ms: ready %v, closed %v code %d", h.state().Ready, h.sockets[s].closed, h.sockets[s].closeCode)
	}
	if st := h.c.Stats(); st.Probes != 1 || st.WatchdogFired != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAnAnsweredProbeKeepsTheSocketAndSetsTheTimeoutFromTheRoundTrip(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.ready()
	h.advance(1250 * time.Millisecond)
	p := h.lastSent(s)
	if p.Type != protocol.TypeProbe {
		t.Fatalf("last frame %+v, want a probe", p)
	}
	h.advance(300 * time.Millisecond) // no answer yet: with no round trip measured, the timeout is 250 ms
	if h.state().Ready {
		t.Fatal("the first probe's timeout is 250 ms at 1 s pings")
	}

	// Again, answered in 40 ms this time.
	h = newHarness(t, 7)
	h.start()
	s = h.ready()
	h.advance(1250 * time.Millisecond)
	p = h.lastSent(s)
	h.advance(40 * time.Millisecond)
	h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: p.ID})
	if !h.state().Ready || h.c.Stats().ProbeRTT != 40*time.Millisecond {
		t.Fatalf("after the answer: ready %v, rtt %v", h.state().Ready, h.c.Stats().ProbeRTT)
	}
	// The next probe is due 1.25 s after the answer; a ping meanwhile
	// (late, from a jittery server) pushes it on.
	h.advance(1249 * time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 1 {
		t.Fatal("probed again too early")
	}
	h.ping(s, 1000)
	h.advance(1249 * time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 1 {
		t.Fatal("a ping did not push the next probe on")
	}
	h.advance(time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 2 {
		t.Fatal("no probe 1.25 s after the ping")
	}
	// Any frame answers too (an older server replies to a probe with an
	// error frame).
	h.advance(100 * time.Millisecond)
	h.frame(s, protocol.Message{Type: protocol.TypeError, Error: &protocol.ErrorBody{Code: protocol.ErrUnknownType}})
	h.advance(time.Second)
	if !h.state().Ready || h.c.Stats().ProbesAnswered != 2 {
		t.Fatalf("after an error frame answered the probe: ready %v, %+v", h.state().Ready, h.c.Stats())
	}
}

func TestProbeTimeoutFollowsTheRoundTripWithinBounds(t *testing.T) {
	c := &Core{pingInterval: time.Second}
	for _, tc := range []struct{ srtt, want time.Duration }{
		{0, 250 * time.Millisecond}, {10 * time.Millisecond, 250 * time.Millisecond},
		{100 * time.Millisecond, 400 * time.Millisecond}, {time.Second, 750 * time.Millisecond},
	} {
		c.srtt = tc.srtt
		if got := c.probeTimeout(); got != tc.want {
			t.Errorf("srtt %v: timeout %v, want %v", tc.srtt, got, tc.want)
		}
	}
}

func TestStage5StillWaitsTwoIntervals(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.ready()
	h.advance(1999 * time.Millisecond)
	if !h.state().Ready || h.count(protocol.TypeProbe, s) != 0 {
		t.Fatalf("stage 5 at 1.999 s: ready %v, probes %d", h.state().Ready, h.count(protocol.TypeProbe, s))
	}
	h.advance(time.Millisecond)
	if h.state().Ready {
		t.Fatal("stage 5's watchdog did not fire at two intervals")
	}
}
