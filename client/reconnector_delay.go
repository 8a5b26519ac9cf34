package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The Reconnector's delay rule: the policy's backoff (policy.go) counted
// in attempts since the last reset, the cap that grows under sustained
// failure (stage 6), the reset (on open before stage 5, after Cooldown of
// continuous READY from stage 5), the watchdog's immediate reconnect
// (before stage 5) and the small random delay after a wait.

// CapStep raises the backoff's cap to Cap once a run of failures has
// lasted After.
type CapStep struct {
	After time.Duration
	Cap   time.Duration
}

// DefaultCapGrowth returns the library's cap growth (Config.CapGrowth's
// default): cap 30 s for the first 2 minutes of failure, 60 s after, 5
// minutes after 30 minutes. Each call returns a slice of its own: no
// program can change another's default.
func DefaultCapGrowth() []CapStep {
	return []CapStep{{After: 2 * time.Minute, Cap: time.Minute}, {After: 30 * time.Minute, Cap: 5 * time.Minute}}
}

// next draws the policy's next delay and counts the attempt.
func (rc *Reconnector) next(r float64) time.Duration {
	return rc.draw(rc.r.policy, r)
}

func (rc *Reconnector) draw(p Policy, r float64) time.Duration {
	d := max(p.Delay(int(rc.attempt), rc.prev, r), 0)
	rc.attempt = inc(rc.attempt)
	rc.prev = d
	return d
}

// nextAt draws the next delay with the cap the run's length allows.
func (rc *Reconnector) nextAt(at time.Time, r float64) time.Duration {
	if len(rc.r.capGrowth) == 0 {
		return rc.next(r)
	}
	capped, ok := rc.r.policy.(interface{ WithCap(time.Duration) Policy })
	if !ok {
		return rc.next(r)
	}
	failing := at.Sub(rc.failingSince)
	var cap time.Duration
	rc.capStep = 0
	for i, s := range rc.r.capGrowth {
		if failing >= s.After {
			cap, rc.capStep = s.Cap, uint8(min(i+1, 255))
		}
	}
	if cap == 0 {
		rc.capStep = 0
		return rc.next(r)
	}
	return rc.draw(capped.WithCap(cap), r)
}

// atOnce says the watchdog's reconnect is immediate: before stage 5 the
// client reconnects as soon as its watchdog gives up, not waiting for the
// close event (which a browser may report a minute later).
func (rc *Reconnector) atOnce(c Cause) bool {
	return rc.r.watchdogNow && c.By == ByClient && c.Code == protocol.CloseHeartbeatTimeout
}

// SoonDelay is the delay before the reconnect that follows the end of a
// wait (CameOnline, BecameVisible), for r uniform in [0, 1): at most
// OnlineDelay, so a fleet whose network comes back does not dial in the
// same instant.
func (rc *Reconnector) SoonDelay(r float64) time.Duration {
	return time.Duration(r * float64(rc.r.soon))
}

// SocketOpened applies the reset rule to a socket that opened: without a
// cooldown the backoff starts over.
func (rc *Reconnector) SocketOpened() {
	if rc.r.cooldown == 0 {
		rc.reset()
	}
}

// ReadySince applies the cooldown rule to a client READY since instant
// since, at instant at: the count of token refreshes starts over (the
// fresh token worked), and once the client has been READY for the
// cooldown the backoff resets and the run of failures ends (budget and
// window start over). While the cooldown is still running it returns the
// instant to ask again and true; without a cooldown (the reset is on open)
// it returns false.
func (rc *Reconnector) ReadySince(since, at time.Time) (time.Time, bool) {
	rc.refreshes = 0
	if rc.r.cooldown == 0 {
		return time.Time{}, false
	}
	if due := since.Add(rc.r.cooldown); at.Before(due) {
		return due, true
	}
	rc.reset()
	rc.endRun()
	return time.Time{}, false
}

func (rc *Reconnector) reset() { rc.attempt, rc.prev = 0, 0 }

// BackoffAttempt is the number of backoff attempts since the last reset.
func (rc *Reconnector) BackoffAttempt() int { return int(rc.attempt) }
