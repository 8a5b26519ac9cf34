package client

import "time"

// The Reconnector's budget and window (stage 6): a run of failures begins
// with the first failure after a stable READY and ends after Cooldown of
// READY (ReadySince) or a new session; it may spend Budget attempts and
// last Window, and an open does not renew either. Refreshes forced by 4001
// are bounded by MaxRefreshes. Past any of these, and on a 1000 or a
// 4003/1008, the session ends in a terminal state.

// Terminal names a state the session does not leave by itself.
type Terminal string

const (
	NotEnded         Terminal = ""
	Ended            Terminal = "ended"             // the server closed with 1000
	Forbidden        Terminal = "forbidden"         // 4003 or 1008
	RefreshExhausted Terminal = "refresh_exhausted" // 4001 again after MaxRefreshes refreshes that did not reach READY
	GaveUp           Terminal = "gave_up"           // the attempt budget or the reconnect window ran out
	Stopped          Terminal = "stopped"           // the app closed the client
)

// startRun counts a failure's attempt against the run, beginning the run
// at instant at if none is under way; it reports whether it began one.
func (rc *Reconnector) startRun(at time.Time) bool {
	first := !rc.is(rcFailing)
	if first {
		rc.set(rcFailing, true)
		rc.failingSince = at
	}
	rc.attempts = inc(rc.attempts)
	return first
}

// terminal reports the terminal state a failure at instant at leads to, or
// NotEnded, and changes nothing. AfterFailure asks it before anything
// else, before the waits too: terminal means terminal in every state.
func (rc *Reconnector) terminal(at time.Time, c Cause) Terminal {
	if !rc.r.classify {
		return NotEnded
	}
	switch Classify(c) {
	case ClassEnded:
		return Ended
	case ClassForbidden:
		return Forbidden
	case ClassTokenExpired:
		if int(rc.refreshes) >= rc.r.maxRefreshes {
			return RefreshExhausted
		}
		return NotEnded
	}
	// A run that has not begun begins now, and a window cannot be over at
	// its first instant.
	if rc.is(rcWindowOver) || (rc.r.window > 0 && rc.is(rcFailing) && at.Sub(rc.failingSince) >= rc.r.window) {
		return GaveUp
	}
	if rc.r.budget > 0 && int(rc.attempts) >= rc.r.budget {
		return GaveUp
	}
	return NotEnded
}

// Remaining returns what is left of the current run of failures at instant
// at: reconnect attempts (the budget) and time (the window), -1 for either
// when it is unbounded.
func (rc *Reconnector) Remaining(at time.Time) (budget int, window time.Duration) {
	budget, window = -1, -1
	if rc.r.budget > 0 {
		budget = rc.r.budget - int(rc.attempts)
	}
	if rc.r.window > 0 && rc.is(rcFailing) {
		window = max(0, rc.failingSince.Add(rc.r.window).Sub(at))
	}
	return budget, window
}

// WindowDeadline returns when the current run of failures runs out of
// window; false when there is no run or no window.
func (rc *Reconnector) WindowDeadline() (time.Time, bool) {
	if !rc.r.classify || rc.r.window <= 0 || !rc.is(rcFailing) {
		return time.Time{}, false
	}
	return rc.failingSince.Add(rc.r.window), true
}

// WindowRanOutWhileReady notes that the window ran out while the client
// was READY (before the cooldown ended the run): the next failure gives up
// at once.
func (rc *Reconnector) WindowRanOutWhileReady() { rc.set(rcWindowOver, true) }

// endRun ends the run of failures: the budget and the window start over.
func (rc *Reconnector) endRun() {
	rc.set(rcFailing|rcWindowOver, false)
	rc.failingSince, rc.attempts, rc.capStep = time.Time{}, 0, 0
}
