package client

import (
	"errors"
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

// readyAt25s brings a stage 8 client to READY on a server that pings
// every 25 s, and lets 10 s of silence pass (the schedule's probe is due
// at 31.25 s).
func readyAt25s(t *testing.T) (*harness, SocketID) {
	t.Helper()
	h := newHarness(t, 8)
	h.start()
	s := h.last()
	h.open(s)
	h.ping(s, 25000)
	h.subscribed(s)
	if !h.state().Ready {
		t.Fatalf("not READY: %+v", h.state())
	}
	h.advance(10 * time.Second)
	return h, s
}

// A request sent into a silent connection at 25 s pings: nothing heard
// for 500 ms, the client probes; no answer within 1.5 s, it closes with
// 4408, the request rejects with ConnectionClosed and the client
// reconnects: 2 s after the request, not 27.5 s (31.25 + 6.25 s after
// the last ping).
func TestARequestIntoASilentConnectionIsProbedAndFailsWithin2s(t *testing.T) {
	h, s := readyAt25s(t)
	id := h.request()
	h.advance(499 * time.Millisecond)
	if n := h.count(protocol.TypeProbe, s); n != 0 {
		t.Fatalf("%d probes before the request waited 500 ms", n)
	}
	h.advance(time.Millisecond)
	if n := h.count(protocol.TypeProbe, s); n != 1 {
		t.Fatalf("%d probes after the request waited 500 ms with nothing heard, want 1", n)
	}
	h.advance(1499 * time.Millisecond)
	if h.sockets[s].closed || !h.state().Ready {
		t.Fatal("given up before the wait's probe timeout (1.5 s)")
	}
	h.advance(time.Millisecond)
	if !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseHeartbeatTimeout {
		t.Fatalf("2 s after the request: closed %v, code %d; want 4408", h.sockets[s].closed, h.sockets[s].closeCode)
	}
	if e, ok := h.settled[id]; !ok || !errors.Is(e.Err, ErrConnectionClosed) {
		t.Fatalf("the request settled %v (%v), want ConnectionClosed", ok, e.Err)
	}
	if h.state().Ready || h.state().LastError.Class != FailHeartbeat {
		t.Fatalf("state %+v", h.state())
	}
	h.advanceToDial()
	if len(h.dials) != 2 {
		t.Fatalf("dials %d: no reconnect", len(h.dials))
	}
}

// The same with a publish, and with the page turning visible or the
// network coming back while the socket is still open: each is a wait.
func TestAPublishVisibilityAndOnlineAreWaitsToo(t *testing.T) {
	for _, wait := range []string{"publish", "visible", "online"} {
		h, s := readyAt25s(t)
		switch wait {
		case "publish":
			h.c.Publish("feed", []byte(`{}`), 0, h.now)
		case "visible":
			h.c.Hidden(h.now)
			h.advance(time.Second)
			h.c.Visible(h.now)
		case "online":
			h.c.Offline(h.now)
			h.advance(time.Second)
			h.c.Online(h.now)
		}
		h.drain()
		start := h.now
		h.advance(500 * time.Millisecond)
		if n := h.count(protocol.TypeProbe, s); n != 1 {
			t.Fatalf("%s: %d probes after 500 ms with nothing heard, want 1", wait, n)
		}
		h.advance(1500 * time.Millisecond)
		if !h.sockets[s].closed || h.now.Sub(start) != 2*time.Second {
			t.Fatalf("%s: not closed 2 s after the wait began", wait)
		}
	}
}

// A wait's probe that is answered keeps the connection and leaves the
// schedule where it was: the next probe is still due 31.25 s after the
// last ping.
func TestAnAnsweredWaitKeepsTheConnectionAndTheSchedule(t *testing.T) {
	h, s := readyAt25s(t)
	h.request()
	h.advance(500 * time.Millisecond)
	p := h.lastSent(s)
	if p.Type != protocol.TypeProbe {
		t.Fatalf("last frame %+v, want a probe", p)
	}
	h.advance(30 * time.Millisecond)
	h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: p.ID})
	h.advance(31250*time.Millisecond - h.now.Sub(t0) - time.Millisecond)
	if h.sockets[s].closed || h.count(protocol.TypeProbe, s) != 1 {
		t.Fatalf("before 31.25 s: closed %v, probes %d", h.sockets[s].closed, h.count(protocol.TypeProbe, s))
	}
	h.advance(time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 2 {
		t.Fatal("the schedule's probe did not go out 31.25 s after the last ping")
	}
}

// An idle client pays nothing: five minutes of 25 s pings, no probe; and
// requests answered within 500 ms, or sent while updates flow, cost none
// either.
func TestNoWaitNoProbe(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.last()
	h.open(s)
	h.ping(s, 25000)
	h.subscribed(s)
	for range 12 { // 5 minutes
		h.advance(25 * time.Second)
		h.ping(s, 25000)
	}
	if n := h.count(protocol.TypeProbe, s); n != 0 {
		t.Fatalf("an idle client probed %d times in 5 minutes of 25 s pings", n)
	}
	for range 20 { // a request every 2 s, answered in 300 ms
		id := h.request()
		h.advance(300 * time.Millisecond)
		h.frame(s, protocol.Message{Type: protocol.TypeResponse, ID: id, Result: []byte(`{}`)})
		h.advance(1700 * time.Millisecond)
	}
	var seq int64
	for range 20 { // a slow request every 2 s while the feed flows every 250 ms
		h.request()
		for range 8 {
			h.advance(250 * time.Millisecond)
			seq++
			h.update(s, "feed", seq)
		}
	}
	if n := h.count(protocol.TypeProbe, s); n != 0 || h.sockets[s].closed {
		t.Fatalf("answered or fed requests cost %d probes (closed %v), want none", n, h.sockets[s].closed)
	}
}

// A wait while the schedule's probe is out (its timeout a quarter
// interval, 6.25 s at 25 s pings) gives that probe no longer than a wait's
// own: closed 2 s after the request.
func TestAWaitShortensAProbeAlreadyOut(t *testing.T) {
	h, s := readyAt25s(t)
	h.advance(21250 * time.Millisecond) // 31.25 s: the schedule's probe
	if h.count(protocol.TypeProbe, s) != 1 {
		t.Fatal("no probe at 31.25 s")
	}
	h.advance(time.Second)
	h.request()
	h.advance(2*time.Second - time.Millisecond)
	if h.sockets[s].closed {
		t.Fatal("closed before 2 s")
	}
	h.advance(time.Millisecond)
	if !h.sockets[s].closed || h.count(protocol.TypeProbe, s) != 1 {
		t.Fatalf("2 s after the request: closed %v, probes %d (want closed, no second probe)", h.sockets[s].closed, h.count(protocol.TypeProbe, s))
	}
}

// Stages 2-5 have no probe, and no wait.
func TestStage5HasNoWait(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.last()
	h.open(s)
	h.ping(s, 25000)
	h.subscribed(s)
	h.request()
	h.advance(10 * time.Second)
	if h.count(protocol.TypeProbe, s) != 0 || h.sockets[s].closed {
		t.Fatal("stage 5 probed or closed on a wait")
	}
}
