package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The heartbeat (stage 2). The server pings at once after open and then
// every intervalMs; the client never hard-codes the interval. Protocol is
// Pending after open and Up after the first ping. The watchdog allows
// FirstPingTimeout for the first ping and two intervals after each one, so
// one late ping does not kill a healthy connection. When it fires the
// client closes the socket and reconnects without waiting for the close
// event, which a browser may report only a minute later for a dead peer.
//
// Probe before kill (stage 6, Session): a silent peer is asked before it is
// given up on. When 1.25 intervals have passed since the last ping (or
// since the last frame, once a ping is overdue: below), or since a probe's
// answer (any frame while a probe is out), the client sends a probe,
// which the server answers at once; no answer within the probe timeout
// means dead. The probe timeout is four smoothed round trips of earlier
// probes, at least a quarter of the interval and at most three quarters,
// so detection never takes longer than the two intervals of stages 2-5: at
// 1 s pings on loopback a freeze is noticed 1.25 + 0.25 s after the last
// ping at worst, 1 s on average over the ping's phase. A ping that is late
// but coming (a jittery server) finds the probe answered and the socket
// kept.

// Proof of life: once the first ping has set the interval, any frame from
// the server shows the peer alive, so a socket busy with updates is not
// killed because a ping queued behind them came late (a server with 25 s
// pings and a busy feed). Stages 2-5 re-arm the watchdog two intervals
// after every frame. Stage 6 keeps its probe on the ping schedule: 1.25
// intervals after the last ping, and a frame pushes the probe on (1.25
// intervals after it) only once the next ping is overdue. Counting from
// every frame instead started the 1.5 s from the last update before a
// freeze (with the demo's feed every 250 ms, the freeze itself): 1.33 to
// 1.45 s median in Chromium, where counting from the ping's phase gives
// 0.5 to 1.5 s, 1 s on average. Before the next ping is due a frame says
// nothing the ping will not: it is the ping's absence that tells.

// Waiting on the connection (stage 6). At production heartbeats (25 s
// pings) the ping schedule finds a dead peer up to 31.25 + 6.25 s after
// its last ping; an app that waits on the connection meanwhile (a request
// or publish sent, the page turned visible, the network back) should not
// wait that long, and an idle client should pay nothing for it. So when
// the app starts waiting the client expects to hear from the server
// within awaitSilence: any frame ends the wait (the response, an update,
// a ping). Nothing heard: it probes, and no answer within
// awaitProbeTimeout closes the socket with 4408 and reconnects, the
// requests in flight rejected with ConnectionClosed. A request sent into
// a dead connection fails within 2 s at any interval, and one answered
// within awaitSilence, or sent while the feed flows, costs no probe.

const (
	// probeAfter is how many ping intervals of silence trigger a probe.
	probeAfter = 1.25
	// awaitSilence is how long the app may wait on the connection with
	// nothing heard before the client probes: 500 ms, past a healthy
	// server's answer to most requests.
	awaitSilence = 500 * time.Millisecond
	// awaitProbeFloor is the least time the probe of a wait has to be
	// answered (awaitProbeTimeout): 1.5 s, six times a slow mobile round
	// trip, before the smoothed round trip of earlier probes is known.
	awaitProbeFloor = 1500 * time.Millisecond
)

// probeTimeout bounds the wait for a probe's answer.
func (c *Core) probeTimeout() time.Duration {
	i := c.pingInterval
	return min(max(i/4, 4*c.srtt), 3*i/4)
}

// awaitProbeTimeout bounds the wait for the answer to a wait's probe: four
// smoothed round trips, at least awaitProbeFloor, and never more than the
// schedule's probe timeout (a quarter interval at 1 s pings on loopback).
func (c *Core) awaitProbeTimeout() time.Duration {
	return min(c.probeTimeout(), max(awaitProbeFloor, 4*c.srtt))
}

// appWaits notes that the app waits on the current connection from now
// (above); a wait already running keeps its earlier deadline.
func (c *Core) appWaits(now time.Time) {
	if !c.probes() || c.current == 0 || c.transport != Up || c.protocol != Up || c.pingInterval <= 0 || !c.dl[dlAwait].IsZero() {
		return
	}
	c.dl[dlAwait] = now.Add(awaitSilence)
}

// awaitedInVain: the app waited awaitSilence and nothing came. Probe, or,
// with a probe of the schedule out already, give it no longer than a
// wait's probe would have.
func (c *Core) awaitedInVain(now time.Time) {
	t := c.awaitProbeTimeout()
	if c.probing {
		if at := now.Add(t); at.Before(c.dl[dlWatchdog]) {
			c.dl[dlWatchdog] = at
		}
		return
	}
	c.probe(now, t, "the app waits and nothing came for "+awaitSilence.String())
}

// heard takes any frame from the current socket: it ends a wait, answers
// a probe (an old server answers one with an error frame: that counts
// too), or is a proof of life.
func (c *Core) heard(m protocol.Message, now time.Time) {
	c.dl[dlAwait] = time.Time{}
	if c.probing {
		c.stillAlive(now, m.Type == protocol.TypeProbeAck && m.ID == c.probeID)
	} else if m.Type != protocol.TypePing {
		c.proofOfLife(now)
	}
}

// probe asks the server for a sign of life, due within timeout.
func (c *Core) probe(now time.Time, timeout time.Duration, why string) {
	c.probeID++
	c.probing, c.probeSent = true, now
	c.stats.Probes++
	c.trace("probe", c.current, why+"; probing, answer due within "+timeout.String())
	c.send(protocol.Message{Type: protocol.TypeProbe, ID: c.probeID})
	c.dl[dlWatchdog] = now.Add(timeout)
}

// stillAlive records a proof of life while probing (the answer, or any
// frame): the round trip is sampled and the next probe is due 1.25
// intervals on.
func (c *Core) stillAlive(now time.Time, ack bool) {
	if ack {
		rtt := now.Sub(c.probeSent)
		if c.srtt == 0 {
			c.srtt = rtt
		} else {
			c.srtt += (rtt - c.srtt) / 8
		}
		c.stats.ProbeRTT = c.srtt
	}
	c.probing = false
	c.wokeAt = time.Time{} // the socket outlived the wake (clock.go)
	c.stats.ProbesAnswered++
	c.dl[dlWatchdog] = c.probeDue(now)
}

// probeDue is when the watchdog probes next (stage 6), given a proof of
// life at now: 1.25 intervals after the last ping while the next ping is
// not yet due, and 1.25 intervals after now once it is overdue (the peer
// is alive, its ping late).
func (c *Core) probeDue(now time.Time) time.Time {
	after := time.Duration(probeAfter * float64(c.pingInterval))
	if now.After(c.lastPing.Add(c.pingInterval)) {
		return now.Add(after)
	}
	return c.lastPing.Add(after)
}

func (c *Core) heartbeatOpened(now time.Time) {
	if !c.cfg.on.Heartbeat {
		return
	}
	c.protocol = Pending
	c.probing = false
	c.dl[dlWatchdog] = now.Add(c.cfg.FirstPingTimeout)
}

func (c *Core) onPing(m protocol.Message, now time.Time) {
	c.stats.Pings++
	c.pingInterval = time.Duration(m.IntervalMs) * time.Millisecond
	if !c.cfg.on.Heartbeat {
		return
	}
	if !c.proven {
		c.provenNow(now)
	}
	// The detail is built only when tracing: make wasm compiles this package
	// without inlining (WASM_FLAGS), and a string built for trace's argument
	// would then cost two allocations on every ping whether or not Trace is on.
	if c.cfg.Trace {
		c.emitTrace("ping", c.current, "ping, interval "+c.pingInterval.String())
	}
	c.protocol = Up
	c.lastPing = now
	if c.probes() {
		c.probing = false
		c.dl[dlWatchdog] = c.probeDue(now)
		return
	}
	c.dl[dlWatchdog] = now.Add(2 * c.pingInterval)
}

// proofOfLife re-arms the watchdog for a frame other than a ping, once the
// first ping on this socket has set the interval: two intervals on at
// stages 2-5, the ping schedule's probe from stage 6 (probeDue).
func (c *Core) proofOfLife(now time.Time) {
	if !c.cfg.on.Heartbeat || c.transport != Up || c.protocol != Up || c.pingInterval <= 0 {
		return
	}
	if c.probes() {
		c.dl[dlWatchdog] = c.probeDue(now)
		return
	}
	c.dl[dlWatchdog] = now.Add(2 * c.pingInterval)
}

// probes says whether the watchdog probes before it kills (stage 6).
func (c *Core) probes() bool { return c.cfg.on.Session && c.cfg.on.Heartbeat }

// provenNow notes that the current socket works (its first ping): the
// transport rule's count starts over, and a client on its fallback
// transport arms the re-probe of the preferred one (transport.go).
func (c *Core) provenNow(now time.Time) {
	c.proven = true
	c.rc.FirstPingSeen()
	c.armReprobe(now)
}

func (c *Core) watchdogFired(now time.Time) {
	s := c.current
	if c.jumped && c.probes() && c.transport == Up {
		// The clock jumped (clock.go): the deadline says nothing about the
		// peer, which had no chance to ping. Ask it first, with a fresh
		// timeout, or give the first ping its time again.
		if c.protocol != Up {
			c.trace("watchdog", s, "the first-ping timeout slept with the clock: waiting for it again")
			c.dl[dlWatchdog] = now.Add(c.cfg.FirstPingTimeout)
			return
		}
		c.probing = false
	}
	if c.probes() && c.protocol == Up && !c.probing {
		why := "no ping for " + time.Duration(probeAfter*float64(c.pingInterval)).String()
		if c.jumped {
			why = "the clock jumped"
		}
		c.probe(now, c.probeTimeout(), why)
		return
	}
	c.stats.WatchdogFired++
	what := "no ping within two intervals"
	switch {
	case c.protocol != Up:
		what = "no first ping within " + c.cfg.FirstPingTimeout.String()
	case c.probing:
		what = "no answer to a probe within " + now.Sub(c.probeSent).String()
	}
	c.probing = false
	c.trace("watchdog", s, "watchdog fired on socket "+s.String()+": "+what+"; closing it")
	c.emitClose(s, protocol.CloseHeartbeatTimeout, "heartbeat timeout")
	fail := FailHeartbeat
	if c.protocol != Up && !c.served && !c.cfg.Auth {
		// Not a ping, not a welcome, and no token sent: a server that
		// requires auth waits for one in silence (until its AuthTimeout,
		// 10 s, closes with 4003), which is not a server that stopped.
		fail = FailSilent
	}
	c.connectionLost(now, Cause{By: ByClient, Code: protocol.CloseHeartbeatTimeout, Fail: fail})
}
