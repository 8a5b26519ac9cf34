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
		// loss, awake time the window does count. It gives up by the
		// window's end, at the failure whose backoff (at most the 30 s
		// cap) would start the next dial past it.
		got, jump := h.now.Sub(t0), time.Hour-500*time.Millisecond
		if end := 2*time.Minute + jump; got > end || got < end-30*time.Second {
			t.Fatalf("stage 8 gave up %v after the loss, want within the 30 s cap before 2 minutes and the %v jump", got, jump)
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

// The harness draws 0.5: the backoff's first delay is 500 ms, the small
// delay after online (OnlineDelay 500 ms) 250 ms.
const (
	backoffFirst = 500 * time.Millisecond
	wakeDelay    = 250 * time.Millisecond
)

// lastDelay is the last reconnect decision's delay.
func (h *harness) lastDelay() time.Duration {
	h.t.Helper()
	if len(h.records) == 0 {
		h.t.Fatal("no reconnect decision")
	}
	return h.records[len(h.records)-1].Delay
}

// A frozen page hears of its socket's close as it resumes, before any late
// timer fires: at stage 8 the close counts the jump and the first
// reconnect waits only the small delay that follows online (the wake is
// the device's own, in step with no other client); the next failure backs
// off as always. Stage 7 draws the backoff's first delay.
func TestACloseHeardOnWakingRedialsSoon(t *testing.T) {
	for _, stage := range []int{7, 8} {
		h := newHarness(t, stage)
		h.start()
		s := h.ready()
		h.now = h.now.Add(40 * time.Second) // frozen: no timer ran
		h.closed(s)
		if stage == 7 {
			if d := h.lastDelay(); d != backoffFirst {
				t.Fatalf("stage 7: delay %v, want the backoff's %v", d, backoffFirst)
			}
			continue
		}
		if d := h.lastDelay(); d != wakeDelay || h.c.Stats().ClockJumps != 1 {
			t.Fatalf("stage 8: delay %v, jumps %d: want %v and the jump counted", d, h.c.Stats().ClockJumps, wakeDelay)
		}
		h.advance(wakeDelay)
		if len(h.dials) != 2 {
			t.Fatalf("stage 8: dials %v after %v", h.dials, wakeDelay)
		}
		h.closed(h.last()) // the server is not there yet: the run goes on
		if d := h.lastDelay(); d != time.Second {
			t.Fatalf("stage 8: the second failure's delay %v, want the backoff's second draw, 1s", d)
		}
	}
}

// The probe after a jump that goes unanswered (the socket died while the
// laptop slept) is a loss on waking too. A probe answered proves the
// socket outlived the wake: a loss right after backs off as always.
func TestAProbeLostOnWakingRedialsSoon(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	h.sleep(40 * time.Second) // the watchdog fires late: a probe
	if h.count(protocol.TypeProbe, s) != 1 || h.sockets[s].closed {
		t.Fatalf("probes %d, closed %v: want a probe first", h.count(protocol.TypeProbe, s), h.sockets[s].closed)
	}
	h.advance(300 * time.Millisecond) // unanswered within its 250 ms: killed
	if d := h.lastDelay(); !h.sockets[s].closed || d != wakeDelay {
		t.Fatalf("closed %v, delay %v: want the kill and %v", h.sockets[s].closed, d, wakeDelay)
	}

	h = newHarness(t, 8)
	h.start()
	s = h.ready()
	h.sleep(40 * time.Second)
	h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: h.lastSent(s).ID})
	h.closed(s) // within 2 s of the wake, but the socket had outlived it
	if d := h.lastDelay(); d != backoffFirst {
		t.Fatalf("a loss after the probe's answer: delay %v, want the backoff's %v", d, backoffFirst)
	}
}

// A hidden page keeps the backoff's delay after a jump: a browser aligns a
// hidden tab's throttled timers, so hidden tabs may wake in step.
func TestAHiddenPageWakingKeepsTheBackoff(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	h.c.Hidden(h.now)
	h.drain()
	h.now = h.now.Add(40 * time.Second)
	h.closed(s)
	if d := h.lastDelay(); d != backoffFirst || h.c.Stats().ClockJumps != 1 {
		t.Fatalf("delay %v, jumps %d: want the jump counted and the backoff's %v", d, h.c.Stats().ClockJumps, backoffFirst)
	}
}

// A page the browser froze resumes (its resume event) before it hears of
// the sockets dropped meanwhile: the loss that follows is one on waking,
// hidden page or not (Chromium resumes a page hidden; a resume is the
// device's own). Not after the window, not for a server's close frame
// (every client hears one in the same instant), and once per wake.
func TestALossAfterAResumeRedialsSoon(t *testing.T) {
	setup := func(stage int, hidden bool) (*harness, SocketID) {
		h := newHarness(t, stage)
		h.start()
		s := h.ready()
		if hidden {
			h.c.Hidden(h.now)
		}
		h.c.Resumed(h.now) // frozen no longer than the deadlines' slack: no jump seen
		h.now = h.now.Add(10 * time.Millisecond)
		return h, s
	}
	for _, hidden := range []bool{false, true} {
		h, s := setup(8, hidden)
		h.closed(s)
		if d := h.lastDelay(); d != wakeDelay || h.c.Stats().ClockJumps != 0 {
			t.Fatalf("hidden %v: delay %v, jumps %d: want %v", hidden, d, h.c.Stats().ClockJumps, wakeDelay)
		}
	}
	h, s := setup(7, false)
	h.closed(s)
	if d := h.lastDelay(); d != backoffFirst {
		t.Fatalf("stage 7 after a resume: delay %v, want the backoff's %v", d, backoffFirst)
	}
	for _, code := range []int{protocol.CloseServiceRestart, protocol.CloseTryAgainLater, protocol.CloseGoingAway} {
		h, s = setup(8, false)
		h.closedWith(s, code, "")
		want := backoffFirst
		if code == protocol.CloseTryAgainLater {
			want = overloadDefault + overloadDefault/2 // overload without a hint: the larger base, drawn at 0.5
		}
		if d := h.lastDelay(); d != want {
			t.Fatalf("close %d from the server after a resume: delay %v, want the backoff's %v", code, d, want)
		}
	}
	h, s = setup(8, false)
	h.keepAlive(s, 5*time.Second)
	h.closed(s)
	if d := h.lastDelay(); d != backoffFirst {
		t.Fatalf("a loss 5 s after the resume: delay %v, want the backoff's %v", d, backoffFirst)
	}
	// Once per wake: READY again (a new run is not started by the cooldown
	// within 2 s), lost again within the window: the backoff.
	h, s = setup(8, false)
	h.closed(s)
	h.advance(wakeDelay)
	s = h.last()
	h.open(s)
	h.ping(s, 1000)
	h.subscribed(s)
	h.advance(time.Second)
	h.closed(s)
	if d := h.lastDelay(); d == wakeDelay {
		t.Fatalf("a second loss after one resume: delay %v, want the backoff's", d)
	}
}

// A page that sleeps less than the cooldown (5 s) after a reconnect was
// READY for longer than the cooldown by the time it wakes: the close heard
// on waking finds the cooldown's timer late, and the run of failures is
// over before the loss is decided (a new run, its first attempt soon), as
// it would have been awake.
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
	if r := h.records[len(h.records)-1]; r.Delay != wakeDelay || r.Attempt != 1 {
		t.Fatalf("record %+v: want attempt 1 of a new run, %v", r, wakeDelay)
	}
}

// fireOverdue does what a driver does with a timer armed in the past:
// fires it at once.
func (h *harness) fireOverdue() {
	for i := 0; i < 5 && !h.timer.IsZero() && !h.timer.After(h.now); i++ {
		h.timer = time.Time{}
		h.c.Tick(h.now)
		h.drain()
	}
}

// One sleep is one jump: a close heard on waking counts it, and the Tick
// that follows for a deadline still overdue (a pending dial's degraded
// and offline deadlines, a queued request's timeout) does not count it
// again, nor credits the window with it twice.
func TestOneSleepIsOneJump(t *testing.T) {
	for _, queued := range []bool{false, true} {
		h := newHarness(t, 8, func(c *Config) { c.Window = 2 * time.Minute })
		h.start()
		s := h.ready()
		h.keepAlive(s, 6*time.Second) // past the cooldown
		if queued {
			h.queued(10 * time.Second)
		} else {
			h.closed(s) // a run starts; the dial is pending, not READY
			h.advanceToDial()
			s = h.last()
		}
		h.now = h.now.Add(time.Hour)
		h.closed(s)
		h.fireOverdue()
		_, w := h.c.rc.Remaining(h.now)
		if h.c.Stats().ClockJumps != 1 || w > 2*time.Minute {
			t.Fatalf("queued %v: %d jumps, window left %v: want 1 jump and at most the 2 m window", queued, h.c.Stats().ClockJumps, w)
		}
	}
}
