package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The reconnection policy (stage 5). Exponential backoff with full jitter;
// the backoff resets only after Cooldown of continuous READY, not on open;
// offline cancels a scheduled reconnect; online resets the backoff and
// reconnects after a small random delay. A laptop waking from sleep needs
// nothing special: the watchdog notices the missing pings.
//
// Without Backoff (stages 0-4) the client reconnects NaiveDelay after a
// close, at once after the watchdog fires, and ignores offline/online.
// What a disconnect means (stage 6) is the Reconnector's to decide
// (reconnector.go, classify.go); this file carries its decision out.

// scheduleReconnect asks the Reconnector what follows the loss of a
// connection or an attempt, records the decision, and carries it out.
func (c *Core) scheduleReconnect(now time.Time, cause Cause) {
	if c.ended != NotEnded {
		return
	}
	waitOnline := c.cfg.Features.Backoff && !c.online
	waitVisible := c.cfg.Features.Session && c.hidden
	var d Decision
	if waitOnline || waitVisible {
		// Nothing is spent while the client waits, but a terminal close
		// is terminal here too: a revoked user must not come back on the
		// next online or visible.
		d = Decision{Class: Classify(cause), Terminal: c.rc.terminal(c.at(now), cause), BudgetLeft: -1, WindowLeft: -1}
		if !c.cfg.Features.Session {
			d.Class = ClassBackoff
		}
	} else {
		d = c.rc.Failed(c.at(now), cause, c.cfg.Rand)
	}
	if cause.By == ByClient && cause.Code == protocol.CloseHeartbeatTimeout && !c.cfg.Features.Backoff {
		d.Delay = 0 // stages 2-4: the watchdog reconnects at once
	}
	rec := Record{Session: c.session, Epoch: c.nextSocket, Attempt: c.rc.Attempt(), Class: d.Class, By: cause.By,
		Code: cause.Code, Delay: d.Delay, RetryAfter: d.RetryAfter, BudgetLeft: d.BudgetLeft, WindowLeft: d.WindowLeft}
	switch {
	case d.Terminal != NotEnded:
		rec.Outcome, rec.Delay = Outcome(d.Terminal), 0
		c.record(rec)
		c.end(now, d.Terminal, cause.Code)
		return
	case waitOnline || waitVisible:
		rec.Outcome, rec.Delay = OutcomeWaitOnline, 0
		why := "offline: reconnect waits for online"
		if !waitOnline {
			rec.Outcome, why = OutcomeWaitVisible, "page hidden: reconnect waits until it is visible"
		}
		c.record(rec)
		c.reconnects = nil
		c.trace("reconnect-wait", 0, why)
		return
	case d.Refresh:
		rec.Outcome = OutcomeRefresh
		c.record(rec)
		c.forceToken = true
		c.dial(now)
		c.armWindow()
		return
	}
	rec.Outcome = OutcomeReconnect
	if d.RetryAfter > 0 {
		c.stats.RetryAftersHonoured++
	}
	c.record(rec)
	c.emitReconnect(d.Delay)
	c.armWindow()
	if d.Delay == 0 {
		c.dial(now)
		return
	}
	if c.cfg.Features.StaleFilter {
		c.reconnects = append(c.reconnects[:0], now.Add(d.Delay))
	} else {
		c.reconnects = append(c.reconnects, now.Add(d.Delay))
	}
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
	if c.ended != NotEnded || !c.online {
		return
	}
	c.online = false
	c.trace("offline", c.current, "network offline")
	if c.cfg.Features.Backoff && len(c.reconnects) > 0 {
		c.reconnects = nil
		c.trace("reconnect-cancelled", 0, "scheduled reconnect cancelled while offline")
	}
	c.after(now)
}

// Online reports that the platform has the network back.
func (c *Core) Online(now time.Time) {
	if c.ended != NotEnded || c.online {
		return
	}
	c.online = true
	c.trace("online", c.current, "network online")
	if c.cfg.Features.Backoff {
		c.rc.Reset()
		c.reconnectSoon(now)
	}
	c.after(now)
}

// reconnectSoon schedules a reconnect after a small random delay, for a
// client that is down and has none scheduled: the network or the page is
// back, and a fleet must not come back in the same instant.
func (c *Core) reconnectSoon(now time.Time) {
	if !c.started || c.transport != Down || c.tokenWait || !c.online || (c.cfg.Features.Session && c.hidden) {
		return
	}
	d := time.Duration(c.cfg.Rand() * float64(c.cfg.OnlineDelay))
	c.emitReconnect(d)
	c.reconnects = append(c.reconnects[:0], now.Add(d))
}

// onReady starts the cooldown (the Reconnector's rule) for a client READY
// from now.
func (c *Core) onReady(now time.Time) {
	if due, ok := c.rc.Ready(c.at(now), c.at(now)); ok {
		c.dl[dlCooldown] = c.origin.Add(due)
	}
}

func (c *Core) onNotReady(now time.Time) {
	c.dl[dlCooldown] = time.Time{}
	c.lostReadyAt = now
}

// cooldownDone: READY since readySince for the cooldown, which the
// Reconnector's rule confirms.
func (c *Core) cooldownDone(now time.Time) {
	if due, ok := c.rc.Ready(c.at(c.readySince), c.at(now)); ok {
		c.dl[dlCooldown] = c.origin.Add(due) // the rule says not yet: wait for it
		return
	}
	c.dl[dlWindow] = time.Time{}
	c.trace("backoff-reset", c.current, "ready for "+c.cfg.Cooldown.String()+": backoff reset")
}
