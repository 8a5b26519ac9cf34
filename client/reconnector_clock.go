package client

import "time"

// The Reconnector's clock rule (stage 8, clock.go): time the device spent
// asleep (a suspended laptop, a frozen tab) is not charged to the
// reconnect window, and the first attempt after a wake waits only
// SoonDelay (AfterFailure, with Cause.Woke).

// ClockJumped notes that the clock jumped forward by d: a run of failures
// under way does not count the jump against its window.
func (rc *Reconnector) ClockJumped(d time.Duration) {
	if rc.r.jumps && rc.is(rcFailing) && d > 0 {
		rc.failingSince = rc.failingSince.Add(d)
	}
}
