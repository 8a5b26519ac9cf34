package client

import (
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// From stage 6 the probe counts from the last ping, not from the last
// frame: a freeze right after a run of updates (the demo's feed, every
// 250 ms) is probed 1.25 intervals after the last ping and given up a
// quarter interval later, 1.5 s at 1 s pings, not 1.5 s after the last
// update.
func TestAFreezeIsProbedOnThePingScheduleNotAfterTheLastUpdate(t *testing.T) {
	for _, stage := range []int{6, 7, 8} {
		h := newHarness(t, stage)
		h.start()
		s := h.ready()     // a ping at 0: interval 1 s
		for i := range 3 { // updates at 0.25, 0.5 and 0.75 s, then the freeze
			h.advance(250 * time.Millisecond)
			h.update(s, "feed", int64(i+1))
		}
		h.advance(500*time.Millisecond - time.Millisecond) // 1.249 s
		if n := h.count(protocol.TypeProbe, s); n != 0 {
			t.Fatalf("stage %d: %d probes before 1.25 intervals after the ping", stage, n)
		}
		h.advance(time.Millisecond)
		if n := h.count(protocol.TypeProbe, s); n != 1 {
			t.Fatalf("stage %d: %d probes 1.25 s after the last ping (0.5 s after the last update), want 1", stage, n)
		}
		h.advance(250 * time.Millisecond)
		if !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseHeartbeatTimeout || h.state().Ready {
			t.Fatalf("stage %d: 1.5 s after the last ping: closed %v (code %d), state %+v; want closed 4408",
				stage, h.sockets[s].closed, h.sockets[s].closeCode, h.state())
		}
	}
}

// Stages 2-5 keep their rule: two intervals after the last frame.
func TestStages2To5StillCountTwoIntervalsFromTheLastFrame(t *testing.T) {
	for _, stage := range []int{2, 5} {
		h := newHarness(t, stage)
		h.start()
		s := h.ready()
		h.advance(750 * time.Millisecond)
		h.update(s, "feed", 1)
		h.advance(2*time.Second - time.Millisecond)
		if h.sockets[s].closed {
			t.Fatalf("stage %d: closed before two intervals after the last update", stage)
		}
		h.advance(time.Millisecond)
		if !h.sockets[s].closed {
			t.Fatalf("stage %d: not closed two intervals after the last update", stage)
		}
	}
}

// A late ping on a healthy connection kills nothing: the probe that goes
// out on the ping schedule is answered (the server answers within 10 ms
// here), and the frames that come after the ping's due time push the
// next probe on. Pings late by up to 800 ms (the Jitter switch) with
// updates every 250 ms, for 60 s.
func TestLatePingsWithUpdatesKeepTheConnection(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	lateness := []int{800, 0, 300, 799, 100, 600, 260, 0, 790, 450} // ms, by tick
	var seq int64
	var answered uint64
	const step = 10 // ms
	for ms := step; ms <= 60000; ms += step {
		h.advance(step * time.Millisecond)
		if ms%250 == 0 {
			seq++
			h.update(s, "feed", seq)
		}
		if tick := ms / 1000; tick > 0 && ms == tick*1000+lateness[tick%len(lateness)]/step*step {
			h.ping(s, 1000)
		}
		for _, m := range h.sockets[s].sent {
			if m.Type == protocol.TypeProbe && m.ID > answered {
				answered = m.ID
				h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: m.ID})
			}
		}
	}
	if h.sockets[s].closed || !h.state().Ready || len(h.dials) != 1 {
		t.Fatalf("a healthy connection with late pings: closed %v, state %+v, dials %d", h.sockets[s].closed, h.state(), len(h.dials))
	}
	st := h.c.Stats()
	if st.WatchdogFired != 0 || st.ProbesAnswered != st.Probes || st.Pings < 60 {
		t.Fatalf("stats %+v: want 60 pings, no watchdog and every probe answered", st)
	}
	t.Logf("%d probes in 60 s of late pings, all answered", st.Probes)
}
