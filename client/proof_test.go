package client

import (
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Any frame from the server is proof of life. A stream of
// updates whose pings come late, past two intervals, keeps the connection
// at every heartbeat stage; without a probe (stages 2-5) the watchdog is
// two intervals from the last frame, with one (6 and up) the probe goes
// out 1.25 intervals after the last frame of any kind.
func TestUpdatesKeepTheConnectionWhilePingsAreLate(t *testing.T) {
	for _, stage := range []int{2, 5, 6, 7} {
		h := newHarness(t, stage)
		h.start()
		s := h.ready() // a ping at 0: interval 1 s
		var seq int64
		for range 20 { // 6 s of updates every 300 ms and no ping
			h.advance(300 * time.Millisecond)
			seq++
			h.update(s, "feed", seq)
		}
		if h.sockets[s].closed || len(h.dials) != 1 || !h.state().Ready || h.count(protocol.TypeProbe, s) != 0 {
			t.Fatalf("stage %d: 6 s of updates with no ping: closed %v, dials %d, state %+v, probes %d",
				stage, h.sockets[s].closed, len(h.dials), h.state(), h.count(protocol.TypeProbe, s))
		}
		h.ping(s, 1000) // the late ping
		// Then silence: the watchdog (or the probe) counts from the last frame.
		last := h.now
		if stage >= 6 {
			h.advance(1249 * time.Millisecond)
			if h.count(protocol.TypeProbe, s) != 0 {
				t.Fatalf("stage %d probed before 1.25 intervals of silence", stage)
			}
			h.advance(time.Millisecond)
			if h.count(protocol.TypeProbe, s) != 1 {
				t.Fatalf("stage %d: no probe 1.25 s after the last frame", stage)
			}
			continue
		}
		h.advance(2*time.Second - time.Millisecond)
		if h.sockets[s].closed {
			t.Fatalf("stage %d: the watchdog fired before two intervals after the last frame", stage)
		}
		h.advance(time.Millisecond)
		if !h.sockets[s].closed || h.now.Sub(last) != 2*time.Second {
			t.Fatalf("stage %d: the watchdog did not fire two intervals after the last frame", stage)
		}
	}
}

// A frame before the first ping proves nothing about the interval: the
// first-ping timeout stands.
func TestAFrameBeforeTheFirstPingDoesNotRearmTheWatchdog(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.last()
	h.open(s)
	h.advance(2 * time.Second)
	h.subscribed(s)
	h.advance(999 * time.Millisecond)
	if h.sockets[s].closed {
		t.Fatal("closed before the first-ping timeout")
	}
	h.advance(time.Millisecond)
	if !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseHeartbeatTimeout {
		t.Fatal("a subscribed before the first ping put off the first-ping timeout")
	}
}

// A probe's answer still counts while probing, as any frame does.
func TestAnUpdateAnswersAProbe(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.ready()
	h.advance(1250 * time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 1 {
		t.Fatal("no probe")
	}
	h.update(s, "feed", 1)
	h.advance(time.Second)
	if h.sockets[s].closed || h.c.Stats().ProbesAnswered != 1 {
		t.Fatalf("an update did not answer the probe: closed %v, stats %+v", h.sockets[s].closed, h.c.Stats())
	}
}
