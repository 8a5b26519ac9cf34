package client

import (
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Stage 8: the clock jumped while a probe was out (the tab froze right
// after probing): the watchdog probes again with a fresh timeout instead
// of killing; stage 7 kills.
func TestAClockJumpProbesBeforeKilling(t *testing.T) {
	for _, stage := range []int{7, 8} {
		h := newHarness(t, stage)
		h.start()
		s := h.ready()
		h.advance(1250 * time.Millisecond) // the probe goes out
		if h.count(protocol.TypeProbe, s) != 1 {
			t.Fatalf("stage %d: no probe", stage)
		}
		h.sleep(30 * time.Second) // frozen: the probe's deadline fires 30 s late
		if stage == 7 {
			if !h.sockets[s].closed {
				t.Fatal("stage 7 did not kill after the late probe deadline")
			}
			continue
		}
		if h.sockets[s].closed || h.count(protocol.TypeProbe, s) != 2 || !h.state().Ready {
			t.Fatalf("stage 8: closed %v, probes %d, state %+v", h.sockets[s].closed, h.count(protocol.TypeProbe, s), h.state())
		}
		h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: h.lastSent(s).ID})
		h.keepAlive(s, 5*time.Second)
		if h.sockets[s].closed || len(h.dials) != 1 || h.c.Stats().ClockJumps != 1 {
			t.Fatalf("stage 8 after the answer: closed %v, dials %d, stats %+v", h.sockets[s].closed, len(h.dials), h.c.Stats())
		}
		// No answer this time: killed after the probe timeout, as always.
		h.sleep(time.Minute)
		h.advance(time.Second)
		if !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseHeartbeatTimeout {
			t.Fatal("stage 8: an unanswered probe after a jump did not kill")
		}
	}
}

// A first-ping timeout that slept with the clock gets its time again.
func TestAClockJumpGivesTheFirstPingItsTimeAgain(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.last()
	h.open(s)
	h.sleep(10 * time.Second)
	if h.sockets[s].closed {
		t.Fatal("killed on waking before the first ping could come")
	}
	h.ping(s, 1000)
	h.subscribed(s)
	if !h.state().Ready {
		t.Fatal("not READY")
	}
}

// Stage 8 does not charge the time asleep to the reconnect window: a
// laptop that slept through it does not wake up gave_up. Stage 7 does.
func TestTheWindowDoesNotChargeAClockJump(t *testing.T) {
	for _, stage := range []int{7, 8} {
		h := newHarness(t, stage, func(c *Config) { c.Window = 2 * time.Minute })
		h.start()
		h.ready()
		h.closed(h.last()) // the run starts: the window ends 2 minutes on
		h.sleep(time.Hour) // the reconnect (500 ms) fires an hour late
		if stage == 7 {
			if h.state().Ended != GaveUp {
				t.Fatalf("stage 7: %+v", h.state())
			}
			continue
		}
		if st := h.state(); st.Ended != NotEnded || len(h.dials) != 2 {
			t.Fatalf("stage 8 after the sleep: %+v, dials %v", st, h.dials)
		}
		// The window goes on from where it stood: it gives up 2 minutes
		// after the loss, the hour excluded.
		refused := map[SocketID]bool{}
		for i := 0; h.state().Ended == NotEnded; i++ {
			if i > 1000 {
				t.Fatalf("no end: %+v at %v", h.state(), h.now.Sub(t0))
			}
			if s := h.last(); !refused[s] {
				refused[s] = true
				h.closed(s)
				continue
			}
			if h.timer.IsZero() {
				t.Fatal("no timer")
			}
			h.advance(h.timer.Sub(h.now))
		}
		// The jump is the timer's lateness: it was due 500 ms after the
		// loss, awake time the window does count.
		if got, jump := h.now.Sub(t0), time.Hour-500*time.Millisecond; got != 2*time.Minute+jump {
			t.Fatalf("stage 8 gave up %v after the loss, want 2 minutes and the %v jump", got, jump)
		}
	}
}

// Lateness within max(2 s, one ping interval) is not a jump: a throttled
// timer, a slow interval.
func TestASmallLatenessIsNotAJump(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.last()
	h.open(s)
	h.ping(s, 5000) // 5 s interval: the probe is due 6.25 s on
	h.subscribed(s)
	h.sleep(h.timer.Sub(h.now) + 4*time.Second) // the timer fires 4 s late: under one interval
	if h.c.Stats().ClockJumps != 0 || h.count(protocol.TypeProbe, s) != 1 {
		t.Fatalf("stats %+v, probes %d", h.c.Stats(), h.count(protocol.TypeProbe, s))
	}
	// Before stage 8 there are no jumps at all.
	h = newHarness(t, 7)
	h.start()
	h.ready()
	h.sleep(time.Hour)
	if h.c.Stats().ClockJumps != 0 {
		t.Fatal("stage 7 noticed a jump")
	}
}

// Stage 8 keeps (and regains) the connection while the page is hidden,
// unless PauseWhenHidden; stages 6 and 7 wait for a visible page whatever
// it says.
func TestHiddenPagesKeepTheirConnectionAtStage8(t *testing.T) {
	for _, c := range []struct {
		stage int
		pause bool
		waits bool
	}{{8, false, false}, {8, true, true}, {7, false, true}, {6, false, true}} {
		h := newHarness(t, c.stage, func(cfg *Config) { cfg.PauseWhenHidden = c.pause })
		h.start()
		s := h.ready()
		h.c.Hidden(h.now)
		h.drain()
		h.closed(s)
		rec := h.records[len(h.records)-1]
		if waits := rec.Outcome == OutcomeWaitVisible; waits != c.waits {
			t.Fatalf("stage %d pause %v: outcome %s", c.stage, c.pause, rec.Outcome)
		}
		if !c.waits {
			h.advanceToDial()
			if len(h.dials) != 2 {
				t.Fatalf("stage %d: no reconnect while hidden", c.stage)
			}
		}
	}
}

// A frozen page hears of its socket's close as it resumes, before any late
// timer fires: at stage 8 the close counts the jump and the first
// reconnect dials at once (the wake is the device's own, in step with no
// other client); the next failure backs off as always. Stage 7 waits out
// the backoff's first delay.
func TestACloseHeardOnWakingRedialsAtOnce(t *testing.T) {
	for _, stage := range []int{7, 8} {
		h := newHarness(t, stage)
		h.start()
		s := h.ready()
		h.now = h.now.Add(40 * time.Second) // frozen: no timer ran
		h.closed(s)
		if stage == 7 {
			if len(h.dials) != 1 || h.timer.IsZero() {
				t.Fatalf("stage 7: dials %v, timer %v: want the backoff's delay first", h.dials, h.timer)
			}
			continue
		}
		if len(h.dials) != 2 || h.c.Stats().ClockJumps != 1 {
			t.Fatalf("stage 8: dials %v, stats %+v: want a dial at once and the jump counted", h.dials, h.c.Stats())
		}
		if r := h.records[len(h.records)-1]; r.Delay != 0 || r.Outcome != OutcomeReconnect {
			t.Fatalf("stage 8: record %+v: want a reconnect with no delay", r)
		}
		h.closed(h.last()) // the server is not there yet: a run of failures
		if len(h.dials) != 2 {
			t.Fatalf("stage 8: the second failure dialled at once: dials %v", h.dials)
		}
		if r := h.records[len(h.records)-1]; r.Delay <= 0 {
			t.Fatalf("stage 8: the second failure's record %+v: want the backoff's delay", r)
		}
	}
}

// The probe after a jump that goes unanswered (the socket died while the
// laptop slept) is a loss on waking too: the first reconnect dials at
// once. A loss well after the wake backs off as always.
func TestAProbeLostOnWakingRedialsAtOnce(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	h.sleep(40 * time.Second) // the watchdog fires late: a probe
	if h.count(protocol.TypeProbe, s) != 1 || h.sockets[s].closed {
		t.Fatalf("probes %d, closed %v: want a probe first", h.count(protocol.TypeProbe, s), h.sockets[s].closed)
	}
	h.advance(300 * time.Millisecond) // unanswered within its 250 ms: killed (the backoff would wait 500 ms more)
	if !h.sockets[s].closed || len(h.dials) != 2 {
		t.Fatalf("closed %v, dials %v: want the kill and a dial at once", h.sockets[s].closed, h.dials)
	}

	h = newHarness(t, 8)
	h.start()
	s = h.ready()
	h.sleep(40 * time.Second)
	h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: h.lastSent(s).ID})
	h.keepAlive(s, 5*time.Second) // awake and well for 5 s: the wake is over
	h.closed(s)
	if len(h.dials) != 1 {
		t.Fatalf("a loss 5 s after the wake dialled at once: dials %v", h.dials)
	}
}

// A hidden page keeps the backoff's first delay on waking: a browser
// aligns a hidden tab's throttled timers, so hidden tabs may wake in step.
func TestAHiddenPageWakingKeepsTheDelay(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	h.c.Hidden(h.now)
	h.drain()
	h.now = h.now.Add(40 * time.Second)
	h.closed(s)
	if len(h.dials) != 1 || h.timer.IsZero() || h.c.Stats().ClockJumps != 1 {
		t.Fatalf("dials %v, timer %v, stats %+v: want the jump counted and the backoff's delay", h.dials, h.timer, h.c.Stats())
	}
}

// A page the browser froze resumes (its resume event) before it hears of
// the sockets dropped meanwhile: the close that follows is redialled at
// once, hidden page or not (Chromium resumes a page hidden; a resume is
// the device's own, as a user returns to the tab). A resume long past
// does not count.
func TestACloseAfterAResumeRedialsAtOnce(t *testing.T) {
	for _, hidden := range []bool{false, true} {
		h := newHarness(t, 8)
		h.start()
		s := h.ready()
		if hidden {
			h.c.Hidden(h.now)
		}
		h.c.Resumed(h.now) // frozen no longer than the deadlines' slack: no jump seen
		h.now = h.now.Add(10 * time.Millisecond)
		h.closed(s)
		if len(h.dials) != 2 || h.c.Stats().ClockJumps != 0 {
			t.Fatalf("hidden %v: dials %v, jumps %d: want a dial at once", hidden, h.dials, h.c.Stats().ClockJumps)
		}
	}
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	h.c.Resumed(h.now)
	h.keepAlive(s, 5*time.Second)
	h.closed(s)
	if len(h.dials) != 1 {
		t.Fatalf("a loss 5 s after the resume dialled at once: dials %v", h.dials)
	}
	h7 := newHarness(t, 7)
	h7.start()
	s = h7.ready()
	h7.c.Resumed(h7.now)
	h7.closed(s)
	if len(h7.dials) != 1 {
		t.Fatalf("stage 7 dialled at once after a resume: dials %v", h7.dials)
	}
}

// A page that sleeps less than the cooldown (5 s) after a reconnect was
// READY for longer than the cooldown by the time it wakes: the close heard
// on waking finds the cooldown's timer late, and the run of failures is
// over before the loss is decided (a new run, its first attempt at once),
// as it would have been awake.
func TestACloseOnWakingAfterAShortReadyEndsTheRunFirst(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	h.closed(s) // a run of failures starts
	h.advanceToDial()
	s = h.last()
	h.open(s)
	h.ping(s, 1000)
	h.subscribed(s)
	if !h.state().Ready {
		t.Fatal("not READY again")
	}
	h.advance(time.Second)              // READY 1 s, the cooldown 5 s
	h.now = h.now.Add(40 * time.Second) // frozen: no timer ran
	h.closed(s)
	if len(h.dials) != 3 {
		t.Fatalf("dials %v: want the first attempt of a new run at once", h.dials)
	}
	if r := h.records[len(h.records)-1]; r.Delay != 0 || r.Attempt != 1 {
		t.Fatalf("record %+v: want attempt 1 with no delay", r)
	}
}
