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
// A connection lost as the client wakes is redialled after the small
// random delay that follows online (Config.OnlineDelay, 500 ms), not the
// backoff's draw (up to 1 s, then more): the backoff spreads reconnects
// that a server's restart put in step, and a device's own wake is in step
// with nothing. As it wakes: within max(2 s, one ping interval) (the
// probe after a jump gives up within 3/4 of one) of the page's resume
// from a freeze (Resumed: the browser's resume event, which Chromium
// fires before the close of the sockets it dropped meanwhile), or of a
// clock jump on a visible page (a close heard with the socket's
// deadlines long overdue counts as one). Once per wake, for the first
// attempt of a run, and only for a loss the network or the client found
// (a server's close frame reaches every client at once); a socket that
// answers the probe after the jump has outlived the wake. A jump on a
// hidden page does not count: a browser runs a hidden tab's throttled
// timers once a minute, in step with other tabs. In browsers the jump is
// measured on performance.now(), which (Chromium, but on Windows) stops
// while the OS sleeps: a laptop's sleep there is a dead peer found by the
// watchdog, as before stage 8; a frozen page's resume is seen everywhere.
//
// Hidden pages keep their connection at stage 8 (the Reconnector waits
// for a visible page only with Config.PauseWhenHidden; stages 6 and 7 keep
// waiting, so their measured rows stay).

// jumpAfter is the least lateness that counts as a clock jump.
const jumpAfter = 2 * time.Second

// checkClock looks for a jump before Tick fires anything (and before
// Closed acts on a close): the latest due deadline's lateness.
func (c *Core) checkClock(now time.Time) {
	if !c.cfg.on.WhereUsersAre {
		return
	}
	var late time.Duration
	for d := range numDeadlines {
		if at := c.deadlineAt(d); due(at, now) {
			if at.Before(c.jumpAt) {
				at = c.jumpAt // that much was found before: count it once
			}
			late = max(late, now.Sub(at))
		}
	}
	if late <= max(jumpAfter, c.pingInterval) {
		return
	}
	c.jumped, c.jumpAt = true, now
	if !c.rc.IsHidden() {
		c.wokeAt = now
	}
	c.stats.ClockJumps++
	c.trace("clock-jump", c.current, "timers fired "+late.Round(time.Millisecond).String()+" late: the clock jumped")
	c.rc.ClockJumped(late)
	c.armWindow()
}

// Resumed reports that the page runs again after the browser froze it
// (stage 8): a connection lost now is lost as the client wakes.
func (c *Core) Resumed(now time.Time) {
	if c.cfg.on.WhereUsersAre {
		c.wokeAt = now
	}
}

// woke says a connection lost at now was lost as the client woke (above).
func (c *Core) woke(now time.Time) bool {
	return !c.wokeAt.IsZero() && now.Sub(c.wokeAt) <= max(jumpAfter, c.pingInterval)
}
