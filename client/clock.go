package client

import "time"

// Sleep and background (stage 8). A timer that fires far later than it
// was due means the clock jumped: a suspended laptop, a frozen or
// throttled tab. The deadline that was due then says nothing about the
// peer (it had no chance to ping a sleeping client), so the watchdog
// probes before it kills, as stage 6 does for a late ping, with a fresh
// probe timeout, whatever state the probe was in; and the time asleep is
// not charged to the reconnect window (the Reconnector shifts the run's
// start by the jump), so a laptop that slept through the window does not
// wake up gave_up. Far later is more than max(2 s, one ping interval)
// after the deadline: a browser clamps a background tab's timers to once a
// second or a minute, and a server's interval is what the client allows
// between pings anyway. Other deadlines act as they would (a request's
// timeout is wall time; the connect timeout dials again).
//
// A connection lost as the client wakes is redialled at once, without the
// backoff's first delay: the jitter spreads a fleet's reconnects that a
// server's restart put in step, and a device's own wake is in step with
// nothing. As it wakes: within max(2 s, one ping interval) (the probe
// after a jump gives up within 3/4 of one) of the page's resume from a
// freeze (Resumed: the browser's resume event, which Chromium fires
// before the close of the sockets it dropped meanwhile), or of a clock
// jump on a visible page (a laptop's sleep; a close heard with the
// socket's deadlines long overdue counts too). A jump on a hidden page
// does not count: a browser throttles a hidden tab's timers to run once a
// minute, in step with other tabs. Only the first attempt of a run: the
// next failure backs off as always.
//
// Hidden pages keep their connection at stage 8 (the Reconnector waits
// for a visible page only with Config.PauseWhenHidden; stages 6 and 7 keep
// waiting, so their measured rows stay).

// jumpAfter is the least lateness that counts as a clock jump.
const jumpAfter = 2 * time.Second

// checkClock looks for a jump before Tick fires anything (and before
// Closed acts on a close): the latest due deadline's lateness.
func (c *Core) checkClock(now time.Time) {
	if !c.cfg.Features.WhereUsersAre {
		return
	}
	var late time.Duration
	for d := range numDeadlines {
		if at := c.deadlineAt(d); due(at, now) {
			late = max(late, now.Sub(at))
		}
	}
	if late <= max(jumpAfter, c.pingInterval) {
		return
	}
	c.jumped = true
	if !c.rc.IsHidden() {
		c.wokeAt = now
	}
	c.stats.ClockJumps++
	c.trace("clock-jump", c.current, "timers fired "+late.Round(time.Millisecond).String()+" late: the clock jumped; probing before killing")
	c.rc.Jumped(late)
	c.armWindow()
}

// Resumed reports that the page runs again after the browser froze it
// (stage 8): a connection lost now is lost as the client wakes.
func (c *Core) Resumed(now time.Time) {
	if c.cfg.Features.WhereUsersAre {
		c.wokeAt = now
	}
}

// woke says a connection lost at now was lost as the client woke (above).
func (c *Core) woke(now time.Time) bool {
	return !c.wokeAt.IsZero() && now.Sub(c.wokeAt) <= max(jumpAfter, c.pingInterval)
}
