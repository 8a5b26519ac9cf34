package client

import (
	"strconv"
	"time"
)

// Reconnector holds every reconnect rule in one pure value: the delay
// policy and its reset rule (Backoff), and at stage 6 the close
// classification, the retry-after floor, token refreshes, the attempt
// budget, the reconnect window and the cap that grows under sustained
// failure. The Core holds one; the simulator runs one per simulated
// client, so no rule is written twice.
type Reconnector struct {
	Backoff
	// Classify turns on stage 6's rules. Without it every failure is
	// ClassBackoff and nothing is terminal.
	Classify bool
	// Budget is the most reconnect attempts in one run of failures; the
	// failure after the last one is terminal (gave_up). 0: unbounded.
	Budget int
	// Window is how long one run of failures may last, from its first
	// failure; then the session gives up. 0: unbounded.
	Window time.Duration
	// CapGrowth raises the policy's cap while a run of failures lasts (for
	// policies with a cap: Exponential, FullJitter). Empty: never.
	CapGrowth []CapStep
	// MaxRefreshes is how many token refreshes in a row may fail to reach
	// READY; the next 4001 is terminal (refresh_exhausted).
	MaxRefreshes int

	failingSince time.Time // the run of failures began; zero: not failing
	attempts     int       // reconnect attempts in this run
	refreshes    int       // token refreshes since the last READY
	windowOver   bool      // the window ran out while the client was READY
}

// CapStep raises the backoff's cap to Cap once a run of failures has
// lasted After.
type CapStep struct {
	After time.Duration
	Cap   time.Duration
}

// DefaultCapGrowth is the library's: cap 30 s for the first 2 minutes of
// failure, 60 s after, 5 minutes after 30 minutes.
var DefaultCapGrowth = []CapStep{{After: 2 * time.Minute, Cap: time.Minute}, {After: 30 * time.Minute, Cap: 5 * time.Minute}}

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

// Outcome is what a reconnect decision did.
type Outcome string

const (
	OutcomeReconnect   Outcome = "reconnect"    // a dial after Delay
	OutcomeRefresh     Outcome = "refresh"      // a fresh token, then a dial at once
	OutcomeWaitOnline  Outcome = "wait_online"  // offline: nothing until online
	OutcomeWaitVisible Outcome = "wait_visible" // the page is hidden: nothing until visible
)

// Decision is what to do after a failure.
type Decision struct {
	Class      Class
	Delay      time.Duration // before the next dial
	RetryAfter time.Duration // the server's, if any
	Refresh    bool          // fetch a fresh token first (forced)
	Terminal   Terminal      // set: stop here
	BudgetLeft int           // attempts left after this one; -1: unbounded
	WindowLeft time.Duration // -1: unbounded
}

// Failed decides what follows a failure at now; r is a uniform random
// number in [0, 1) for the backoff's draw.
func (rc *Reconnector) Failed(now time.Time, c Cause, r float64) Decision {
	d := Decision{Class: ClassBackoff, BudgetLeft: -1, WindowLeft: -1}
	if !rc.Classify {
		d.Delay = rc.Next(r)
		return d
	}
	d.Class = Classify(c)
	if d.Terminal = rc.terminal(now, c); d.Terminal != NotEnded {
		return d
	}
	if d.Class == ClassTokenExpired {
		// An orderly close, not a failure of the connection: it neither
		// starts a run nor spends the budget, but refreshes that never get
		// back to READY are bounded (terminal).
		rc.refreshes++
		d.Refresh = true
		d.BudgetLeft, d.WindowLeft = rc.left(now)
		return d
	}
	if rc.failingSince.IsZero() {
		rc.failingSince = now
	}
	rc.attempts++
	d.Delay = rc.nextAt(now, r)
	if d.Class == ClassRetryAfter && c.RetryAfter > 0 {
		// The server's time (a reconnect slot) plus a small jitter, so a
		// fleet does not lean on clocks being in step: at most 5% of it
		// and 250 ms. The backoff's draw wins if it is longer.
		jitter := time.Duration(r * float64(min(c.RetryAfter/20, 250*time.Millisecond)))
		d.RetryAfter = c.RetryAfter
		d.Delay = max(d.Delay, c.RetryAfter+jitter)
	}
	d.BudgetLeft, d.WindowLeft = rc.left(now)
	return d
}

// terminal reports the terminal state a failure at now leads to, or
// NotEnded, and changes nothing: Failed asks it first, and so does a
// failure that waits (offline, hidden) instead of being retried, because
// terminal means terminal in every state.
func (rc *Reconnector) terminal(now time.Time, c Cause) Terminal {
	if !rc.Classify {
		return NotEnded
	}
	switch Classify(c) {
	case ClassEnded:
		return Ended
	case ClassForbidden:
		return Forbidden
	case ClassTokenExpired:
		if rc.refreshes >= rc.MaxRefreshes {
			return RefreshExhausted
		}
		return NotEnded
	}
	// A run that has not begun begins now, and a window cannot be over at
	// its first instant.
	if rc.windowOver || (rc.Window > 0 && !rc.failingSince.IsZero() && !now.Before(rc.failingSince.Add(rc.Window))) {
		return GaveUp
	}
	if rc.Budget > 0 && rc.attempts >= rc.Budget {
		return GaveUp
	}
	return NotEnded
}

// nextAt draws the next delay with the cap the run's length allows.
func (rc *Reconnector) nextAt(now time.Time, r float64) time.Duration {
	if len(rc.CapGrowth) == 0 {
		return rc.Next(r)
	}
	capped, ok := rc.Policy.(interface{ WithCap(time.Duration) Policy })
	if !ok {
		return rc.Next(r)
	}
	failing := now.Sub(rc.failingSince)
	var cap time.Duration
	for _, s := range rc.CapGrowth {
		if failing >= s.After {
			cap = s.Cap
		}
	}
	if cap == 0 {
		return rc.Next(r)
	}
	saved := rc.Policy
	rc.Policy = capped.WithCap(cap)
	d := rc.Next(r)
	rc.Policy = saved
	return d
}

func (rc *Reconnector) left(now time.Time) (budget int, window time.Duration) {
	budget, window = -1, -1
	if rc.Budget > 0 {
		budget = rc.Budget - rc.attempts
	}
	if rc.Window > 0 && !rc.failingSince.IsZero() {
		window = max(0, rc.failingSince.Add(rc.Window).Sub(now))
	}
	return budget, window
}

// WindowEnds returns when the current run of failures runs out of window.
func (rc *Reconnector) WindowEnds() (time.Time, bool) {
	if !rc.Classify || rc.Window <= 0 || rc.failingSince.IsZero() {
		return time.Time{}, false
	}
	return rc.failingSince.Add(rc.Window), true
}

// WindowOver notes that the window ran out while the client was READY: the
// next failure before a stable READY gives up at once.
func (rc *Reconnector) WindowOver() { rc.windowOver = true }

// Ready notes that the session reached READY: the fresh token worked.
func (rc *Reconnector) Ready() { rc.refreshes = 0 }

// Stable applies the cooldown rule: READY for Cooldown resets the backoff
// and ends the run of failures (budget and window start over).
func (rc *Reconnector) Stable() {
	rc.Reset()
	rc.failingSince, rc.attempts, rc.windowOver = time.Time{}, 0, false
}

// Fresh starts a new session: everything starts over.
func (rc *Reconnector) Fresh() {
	rc.Stable()
	rc.refreshes = 0
}

// Failing reports whether a run of failures is under way.
func (rc *Reconnector) Failing() bool { return !rc.failingSince.IsZero() }

func (rc *Reconnector) String() string {
	s := rc.Backoff.String()
	if rc.Budget > 0 {
		s += ", budget " + strconv.Itoa(rc.Budget-rc.attempts) + " left"
	}
	return s
}
