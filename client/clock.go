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
// Hidden pages keep their connection at stage 8 (the Reconnector waits
// for a visible page only with Config.PauseWhenHidden; stages 6 and 7 keep
// waiting, so their measured rows stay).

// jumpAfter is the least lateness that counts as a clock jump.
const jumpAfter = 2 * time.Second

// checkClock looks for a jump before Tick fires anything: the latest due
// deadline's lateness.
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
	c.stats.ClockJumps++
	c.trace("clock-jump", c.current, "timers fired "+late.Round(time.Millisecond).String()+" late: the clock jumped; probing before killing")
	c.rc.Jumped(late)
	c.armWindow()
}
