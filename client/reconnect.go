package client

import "time"

// Carrying out the reconnect decisions. Every rule is the Reconnector's
// (reconnector.go and a file per rule beside it): the delay and its reset
// (reconnector_delay.go), the immediate reconnect after the watchdog
// before stage 5, the waits for the network (stage 5: offline cancels a
// scheduled reconnect, online resets the backoff and reconnects after a
// small random delay) and for a visible page (stage 6,
// reconnector_waits.go), and what a disconnect means (stage 6,
// classify.go). This file asks it and does what
// it says. A laptop waking from sleep needs nothing special before stage 8:
// the watchdog notices the missing pings (stage 8's rules for a wake are
// clock.go's).

// scheduleReconnect asks the Reconnector what follows the loss of a
// connection or an attempt, records the decision, and carries it out.
func (c *Core) scheduleReconnect(now time.Time, cause Cause) {
	if c.ended != NotEnded {
		return
	}
	if cause.By != ByServer && c.woke(now) {
		// Lost as the client woke (clock.go); once per wake. A server's
		// close frame is heard by every client in the same instant: never.
		cause.Woke, c.wokeAt = true, time.Time{}
	}
	d := c.rc.AfterFailure(now, cause, c.cfg.Rand)
	if c.rc.ProbeWanted() {
		c.stats.HTTPProbes++
		c.trace("transport", 0, "3 attempts in a row never saw a first ping: probing the server over HTTP")
		c.emit(Effect{Kind: EffProbeHTTP})
	}
	budget, window := -1, time.Duration(-1) // a wait or an end says nothing of the run
	if d.Outcome == OutcomeReconnect || d.Outcome == OutcomeRefresh {
		budget, window = c.rc.Remaining(now)
	}
	c.record(Record{At: now, Session: c.session, Epoch: uint64(c.nextSocket), Attempt: c.rc.BackoffAttempt(), Class: c.rc.ClassOf(cause), By: cause.By,
		Code: cause.Code, Admission: admissionOf(cause, c.rc.ClassOf(cause)), Cap: c.rc.CapInForce(), Delay: d.Delay, RetryAfter: d.RetryAfter,
		BudgetLeft: budget, WindowLeft: window, Outcome: d.Outcome})
	switch d.Outcome {
	case OutcomeWaitOnline, OutcomeWaitVisible, OutcomeWaitLeader:
		c.reconnects = nil
		why := "offline: reconnect waits for online"
		switch d.Outcome {
		case OutcomeWaitVisible:
			why = "page hidden: reconnect waits until it is visible"
		case OutcomeWaitLeader:
			why = "another tab holds the connection"
		}
		c.trace("reconnect-wait", 0, why)
	case OutcomeRefresh:
		// The refused ticket is dropped: over HTTP a session refused in
		// its POST never opened, so the core still held it, and dialing
		// with it again met the same 4001 until the refreshes ran out.
		c.token = ""
		c.forceToken = true
		c.dial(now)
		c.armWindow()
	case OutcomeReconnect:
		if d.RetryAfter > 0 {
			c.stats.RetryAftersHonoured++
		}
		c.emitReconnect(d.Delay)
		c.armWindow()
		if d.Delay == 0 {
			c.dial(now)
			return
		}
		if c.cfg.on.StaleFilter {
			c.reconnects = append(c.reconnects[:0], now.Add(d.Delay))
		} else {
			c.reconnects = append(c.reconnects, now.Add(d.Delay))
		}
	default:
		c.end(now, d.Outcome.Terminal(), cause.Code, cause.Reason)
	}
}

// nextDial is the earliest scheduled reconnect (zero: none).
func (c *Core) nextDial() time.Time {
	var next time.Time
	for _, t := range c.reconnects {
		next = earliest(next, t)
	}
	return next
}

// dialDue opens a socket for every scheduled reconnect that is due.
func (c *Core) dialDue(now time.Time) {
	kept := c.reconnects[:0]
	var n int
	for _, t := range c.reconnects {
		if due(t, now) {
			n++
		} else {
			kept = append(kept, t)
		}
	}
	c.reconnects = kept
	for range n {
		c.dial(now)
	}
}

func (c *Core) emitReconnect(d time.Duration) {
	if c.cfg.Trace {
		c.emit(Effect{Kind: EffLog, Event: Event{Kind: "reconnect", Delay: d,
			Detail: "reconnect in " + d.Round(time.Millisecond).String() + " (" + c.rc.String() + ")"}})
	}
}

// Offline reports that the platform lost the network.
func (c *Core) Offline(now time.Time) {
	if c.ended != NotEnded || !c.rc.IsOnline() {
		return
	}
	cancel := c.rc.WentOffline()
	c.trace("offline", c.current, "network offline")
	if cancel && len(c.reconnects) > 0 {
		c.reconnects = nil
		c.trace("reconnect-cancelled", 0, "scheduled reconnect cancelled while offline")
	}
	c.after(now)
}

// Online reports that the platform has the network back.
func (c *Core) Online(now time.Time) {
	if c.ended != NotEnded || c.rc.IsOnline() {
		return
	}
	soon := c.rc.CameOnline()
	c.trace("online", c.current, "network online")
	if soon {
		c.reconnectSoon(now)
	}
	c.appWaits(now) // a socket that lived through the outage may be dead (heartbeat.go)
	c.after(now)
}

// reconnectSoon schedules a reconnect after the Reconnector's small random
// delay, for a client that is down and has none scheduled: the network or
// the page is back, and a fleet must not come back in the same instant.
func (c *Core) reconnectSoon(now time.Time) {
	if !c.started || c.transport != Down || c.tokenWait {
		return
	}
	d := c.rc.SoonDelay(c.cfg.Rand())
	c.emitReconnect(d)
	c.reconnects = append(c.reconnects[:0], now.Add(d))
}

// onReady starts the cooldown (the Reconnector's rule) for a client READY
// from now; without a cooldown there is nothing to wait for.
func (c *Core) onReady(now time.Time) {
	if due, ok := c.rc.ReadySince(now, now); ok {
		c.dl[dlCooldown] = due
	}
}

func (c *Core) onNotReady(now time.Time) {
	c.dl[dlCooldown] = time.Time{}
	c.lostReadyAt = now
}

// cooldownDone: the client has been READY since readySince for the
// cooldown; the Reconnector's rule resets the backoff and ends the run.
func (c *Core) cooldownDone(now time.Time) {
	if due, ok := c.rc.ReadySince(c.readySince, now); ok {
		c.dl[dlCooldown] = due // the rule says not yet: wait for it
		return
	}
	c.dl[dlWindow] = time.Time{}
	c.trace("backoff-reset", c.current, "ready for "+c.cfg.Cooldown.String()+": backoff reset")
}
