package client

import (
	"time"
)

// The reconnection policy (stage 5). Exponential backoff with full jitter;
// the backoff resets only after Cooldown of continuous READY, not on open;
// offline cancels a scheduled reconnect; online resets the backoff and
// reconnects after a small random delay. A laptop waking from sleep needs
// nothing special: the watchdog notices the missing pings.
//
// Without Backoff (stages 0-4) the client reconnects NaiveDelay after a
// close, at once after the watchdog fires, and ignores offline/online.

func (c *Core) scheduleReconnect(now time.Time, watchdog bool) {
	if c.stopped {
		return
	}
	if c.cfg.Features.Backoff && !c.online {
		c.reconnects = nil
		c.trace("reconnect-wait", 0, "offline: reconnect waits for online")
		return
	}
	d := c.backoff.Next(c.cfg.Rand())
	if watchdog && !c.cfg.Features.Backoff {
		d = 0
	}
	c.emitReconnect(d)
	if d == 0 {
		c.dial(now)
		return
	}
	if c.cfg.Features.StaleFilter {
		c.reconnects = append(c.reconnects[:0], now.Add(d))
	} else {
		c.reconnects = append(c.reconnects, now.Add(d))
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
			Detail: "reconnect in " + d.Round(time.Millisecond).String() + " (" + c.backoff.String() + ")"}})
	}
}

// Offline reports that the platform lost the network.
func (c *Core) Offline(now time.Time) {
	if c.stopped || !c.online {
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
	if c.stopped || c.online {
		return
	}
	c.online = true
	c.trace("online", c.current, "network online")
	if c.cfg.Features.Backoff {
		c.backoff.Reset()
		if c.started && c.transport == Down {
			d := time.Duration(c.cfg.Rand() * float64(c.cfg.OnlineDelay))
			c.emitReconnect(d)
			c.reconnects = append(c.reconnects[:0], now.Add(d))
		}
	}
	c.after(now)
}

func (c *Core) onReady(now time.Time) {
	if at, ok := c.backoff.ResetDue(now); ok {
		c.resetAt = at
	}
}

func (c *Core) onNotReady(time.Time) { c.resetAt = time.Time{} }

func (c *Core) cooldownDone() {
	c.resetAt = time.Time{}
	c.backoff.Reset()
	c.trace("backoff-reset", c.current, "ready for "+c.cfg.Cooldown.String()+": backoff reset")
}
