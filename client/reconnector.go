package client

import (
	"math"
	"strconv"
	"time"
)

// Reconnector holds every reconnect rule in one pure value: the delay
// policy and its reset rule (on open, or after Cooldown of READY), and at
// stage 6 the close classification, the retry-after floor, token
// refreshes, the attempt budget, the reconnect window and the cap that
// grows under sustained failure. The Core holds one; the simulator runs one
// per simulated client, so no rule is written twice.
//
// NewReconnector builds it from a Config. The rules are fixed then and
// shared by every copy of the value; each copy has its own state, 40 bytes,
// so a simulator can run a million (a test pins the size). The zero value
// has no rules and must not be used.
//
// Instants are durations since an origin the caller keeps and never moves
// (the Core: its Start; the simulator: the disconnect at t=0), so the value
// holds no time.Time (24 bytes with its location) and a monotonic clock
// stays monotonic.
type Reconnector struct {
	r *reconnectRules

	prev         time.Duration // the delay the policy chose last
	failingSince time.Duration // the run of failures began (while failing)
	attempt      int32         // backoff attempts since the last reset
	attempts     int32         // reconnect attempts in this run
	refreshes    int32         // token refreshes since the last READY
	failing      bool          // a run of failures is under way
	windowOver   bool          // the window ran out while the client was READY
}

// reconnectRules are a Reconnector's rules, from the Config; never changed
// after NewReconnector.
type reconnectRules struct {
	policy       Policy
	cooldown     time.Duration // 0: the backoff resets when a socket opens
	classify     bool          // stage 6: classify closes; terminal states
	budget       int           // 0: unbounded
	window       time.Duration // 0: unbounded
	capGrowth    []CapStep
	maxRefreshes int
}

// NewReconnector returns the reconnect value cfg describes, with the
// Config's defaults: Features.Backoff chooses Policy and Cooldown (or
// ResetOnOpen) over NaiveDelay with a reset on open, and Features.Session
// turns on the classification with Budget, Window, CapGrowth and
// MaxRefreshes. Rand is not needed: the caller hands each decision its
// random draw.
func NewReconnector(cfg Config) (Reconnector, error) {
	cfg, err := cfg.defaults()
	if err != nil {
		return Reconnector{}, err
	}
	return reconnectorOf(cfg), nil
}

// reconnectorOf builds the value from a config with its defaults in.
func reconnectorOf(cfg Config) Reconnector {
	r := &reconnectRules{policy: Fixed{D: cfg.NaiveDelay}}
	if cfg.Features.Backoff {
		r.policy = cfg.Policy
		if !cfg.ResetOnOpen {
			r.cooldown = cfg.Cooldown
		}
	}
	if cfg.Features.Session {
		r.classify = true
		r.budget, r.window, r.capGrowth, r.maxRefreshes = cfg.Budget, cfg.Window, cfg.CapGrowth, cfg.MaxRefreshes
	}
	return Reconnector{r: r}
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

// Failed decides what follows a failure at instant at. rand returns a
// uniform number in [0, 1) for the backoff's draw; it is called exactly
// once.
func (rc *Reconnector) Failed(at time.Duration, c Cause, rand func() float64) Decision {
	r := rand()
	d := Decision{Class: ClassBackoff, BudgetLeft: -1, WindowLeft: -1}
	if !rc.r.classify {
		d.Delay = rc.next(r)
		return d
	}
	d.Class = Classify(c)
	if d.Terminal = rc.terminal(at, c); d.Terminal != NotEnded {
		return d
	}
	if d.Class == ClassTokenExpired {
		// An orderly close, not a failure of the connection: it neither
		// starts a run nor spends the budget, but refreshes that never get
		// back to READY are bounded (terminal).
		rc.refreshes++
		d.Refresh = true
		d.BudgetLeft, d.WindowLeft = rc.left(at)
		return d
	}
	if !rc.failing {
		rc.failing, rc.failingSince = true, at
	}
	rc.attempts = inc(rc.attempts)
	d.Delay = rc.nextAt(at, r)
	if d.Class == ClassRetryAfter && c.RetryAfter > 0 {
		// The server's time (a reconnect slot) plus a small jitter, so a
		// fleet does not lean on clocks being in step: at most 5% of it
		// and 250 ms. The backoff's draw wins if it is longer.
		jitter := time.Duration(r * float64(min(c.RetryAfter/20, 250*time.Millisecond)))
		d.RetryAfter = c.RetryAfter
		d.Delay = max(d.Delay, c.RetryAfter+jitter)
	}
	d.BudgetLeft, d.WindowLeft = rc.left(at)
	return d
}

// terminal reports the terminal state a failure at instant at leads to, or
// NotEnded, and changes nothing: Failed asks it first, and so does a
// failure that waits (offline, hidden) instead of being retried, because
// terminal means terminal in every state.
func (rc *Reconnector) terminal(at time.Duration, c Cause) Terminal {
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
	if rc.windowOver || (rc.r.window > 0 && rc.failing && at-rc.failingSince >= rc.r.window) {
		return GaveUp
	}
	if rc.r.budget > 0 && int(rc.attempts) >= rc.r.budget {
		return GaveUp
	}
	return NotEnded
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
func (rc *Reconnector) nextAt(at time.Duration, r float64) time.Duration {
	if len(rc.r.capGrowth) == 0 {
		return rc.next(r)
	}
	capped, ok := rc.r.policy.(interface{ WithCap(time.Duration) Policy })
	if !ok {
		return rc.next(r)
	}
	failing := at - rc.failingSince
	var cap time.Duration
	for _, s := range rc.r.capGrowth {
		if failing >= s.After {
			cap = s.Cap
		}
	}
	if cap == 0 {
		return rc.next(r)
	}
	return rc.draw(capped.WithCap(cap), r)
}

func (rc *Reconnector) left(at time.Duration) (budget int, window time.Duration) {
	budget, window = -1, -1
	if rc.r.budget > 0 {
		budget = rc.r.budget - int(rc.attempts)
	}
	if rc.r.window > 0 && rc.failing {
		window = max(0, rc.failingSince+rc.r.window-at)
	}
	return budget, window
}

// Opened applies the reset rule to a socket that opened: without a
// cooldown the backoff starts over.
func (rc *Reconnector) Opened() {
	if rc.r.cooldown == 0 {
		rc.reset()
	}
}

// Ready applies the cooldown rule to a client READY since instant since,
// at instant at: the count of token refreshes starts over (the fresh token
// worked), and once the client has been READY for the cooldown the backoff
// resets and the run of failures ends (budget and window start over).
// While the cooldown is still running Ready returns the instant to ask
// again and true; without a cooldown (the reset is on open) it returns
// false.
func (rc *Reconnector) Ready(since, at time.Duration) (time.Duration, bool) {
	rc.refreshes = 0
	if rc.r.cooldown == 0 {
		return 0, false
	}
	if due := since + rc.r.cooldown; at < due {
		return due, true
	}
	rc.reset()
	rc.failing, rc.failingSince, rc.attempts, rc.windowOver = false, 0, 0, false
	return 0, false
}

// WindowEnds returns when the current run of failures runs out of window.
func (rc *Reconnector) WindowEnds() (time.Duration, bool) {
	if !rc.r.classify || rc.r.window <= 0 || !rc.failing {
		return 0, false
	}
	return rc.failingSince + rc.r.window, true
}

// WindowOver notes that the window ran out while the client was READY: the
// next failure before a stable READY gives up at once.
func (rc *Reconnector) WindowOver() { rc.windowOver = true }

// Fresh starts a new session: everything starts over.
func (rc *Reconnector) Fresh() {
	rc.reset()
	rc.failing, rc.failingSince, rc.attempts, rc.windowOver, rc.refreshes = false, 0, 0, false, 0
}

// Reset starts the policy over (attempt 0).
func (rc *Reconnector) Reset() { rc.reset() }

func (rc *Reconnector) reset() { rc.attempt, rc.prev = 0, 0 }

// Attempt is the number of backoff attempts since the last reset.
func (rc *Reconnector) Attempt() int { return int(rc.attempt) }

func (rc *Reconnector) String() string {
	rule := "reset on open"
	if rc.r.cooldown > 0 {
		rule = "reset after " + rc.r.cooldown.String() + " ready"
	}
	s := rc.r.policy.String() + ", " + rule + ", attempt " + strconv.Itoa(int(rc.attempt))
	if rc.r.budget > 0 {
		s += ", budget " + strconv.Itoa(rc.r.budget-int(rc.attempts)) + " left"
	}
	return s
}

// inc counts one more, stopping at the largest int32 rather than wrapping.
func inc(n int32) int32 {
	if n == math.MaxInt32 {
		return n
	}
	return n + 1
}
