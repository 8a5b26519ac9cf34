package client

import "time"

// NetworkChanged is for a driver, or a program, that knows the network
// changed under the client (a laptop agent that saw its interface change,
// a mobile binding told of a move from Wi-Fi to cellular) or that it
// resumed from a sleep: a socket that looks fine may be dead, and waiting
// for the watchdog costs up to 1.25 ping intervals and a probe's timeout.
// So, at once:
//
//   - a connection that is up is probed now (stage 6, Session: the
//     watchdog's probe, answered within its timeout or the socket is
//     closed; one already out is left to run);
//   - the wake rule of clock.go applies: a connection lost within
//     max(2 s, one ping interval) is redialled after the small random
//     delay that follows online (OnlineDelay), not the backoff's draw
//     (stage 8);
//   - a client that is down with a dial scheduled later than that delay
//     dials after it instead: the failures it was backing off from were
//     likely the old network's.
//
// Nothing is done while offline (Online is what ends that wait), for a
// follower tab, or after the session ended.
func (c *Core) NetworkChanged(now time.Time) {
	if c.ended != NotEnded || !c.started || c.follower || !c.rc.IsOnline() {
		return
	}
	c.Resumed(now)
	c.trace("network-changed", c.current, "the network changed: probing at once")
	switch {
	case c.transport == Up && c.protocol == Up && c.probes() && !c.probing:
		c.dl[dlWatchdog] = time.Time{}
		c.watchdogFired(now) // sends the probe, with its timeout
	case c.transport == Down && !c.tokenWait && len(c.reconnects) > 0:
		soon := now.Add(c.rc.SoonDelay(c.cfg.Rand()))
		if next := c.nextDial(); next.After(soon) {
			c.reconnects = append(c.reconnects[:0], soon)
			c.emitReconnect(soon.Sub(now))
		}
	}
	c.after(now)
}
