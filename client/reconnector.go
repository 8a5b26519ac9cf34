package client

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Reconnector holds every reconnect rule in one pure value. The Core holds
// one and carries out its decisions (reconnect.go); the simulator runs one
// per simulated client, so no rule is written twice and no path can skip
// one. Each rule has a file of its own:
//
//	reconnector.go          the value, its rules and AfterFailure, the decision every failure takes
//	reconnector_delay.go    the delay: the policy's backoff, its cap growth and its reset (on
//	                        open, or after Cooldown of READY), the small delay after a wait
//	reconnector_budget.go   stage 6: the attempt budget, the reconnect window, refreshes, terminal states
//	reconnector_waits.go    the waits for the network (stage 5) and for a visible page (stage 6;
//	                        at stage 8 only with PauseWhenHidden)
//	reconnector_fallback.go stage 8: the transport the next dial uses (the HTTP fallback, the re-probe)
//	reconnector_tabs.go     stage 8: a follower tab dials nothing
//	reconnector_clock.go    stage 8: a clock jump is not charged to the window
//
// NewReconnector builds it from a Config. The rules are fixed then and
// shared by every copy of the value; each copy has its own state, 56 bytes,
// so a simulator can run a million (a test pins the size). The zero value
// has no rules and must not be used.
//
// Instants are time.Time, as everywhere in the package: the Core passes
// its events' instants, the simulator its virtual ones.
type Reconnector struct {
	r *reconnectRules

	prev         time.Duration // the delay the policy chose last
	failingSince time.Time     // the run of failures began (while failing)
	attempt      int32         // backoff attempts since the last reset
	attempts     int32         // reconnect attempts in this run
	refreshes    int32         // token refreshes since the last READY
	flags        rcFlags
	unproven     uint8 // attempts in a row on the transport in use that never saw a first ping (saturates)
	capStep      uint8 // the cap growth step (index+1) the last delay was drawn with; 0: the policy's own cap
}

// rcFlags are a Reconnector's yes/no state, in one byte so the value stays
// small.
type rcFlags uint8

const (
	rcFailing     rcFlags = 1 << iota // a run of failures is under way
	rcWindowOver                      // the window ran out while the client was READY
	rcOffline                         // the platform reports no network
	rcHidden                          // the page is hidden
	rcFollower                        // another tab holds the connection: nothing is dialled
	rcFallback                        // the next dials use the fallback transport
	rcProbeWanted                     // the driver is to probe the fallback (EffProbeHTTP), once
	rcProbeOut                        // that probe is out: ProbeAnswered answers it
)

func (rc *Reconnector) is(f rcFlags) bool { return rc.flags&f != 0 }

func (rc *Reconnector) set(f rcFlags, on bool) {
	if on {
		rc.flags |= f
	} else {
		rc.flags &^= f
	}
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
	overloadBase time.Duration // a 1013 without a retry-after waits from this (OverloadFactor)
	waitOnline   bool          // stage 5: nothing is dialled while offline; online resets and reconnects soon
	waitVisible  bool          // stage 6 (8: with PauseWhenHidden): nothing is dialled while hidden; visible resets and reconnects soon
	watchdogNow  bool          // before stage 5: the watchdog reconnects at once
	soon         time.Duration // the most a reconnect waits once the network or the page is back
	transports   []Transport   // the preferred first; a second is the fallback
	reprobe      time.Duration // on the fallback, the preferred is tried again this often
	jumps        bool          // stage 8: a clock jump is not charged to the window
}

// NewReconnector returns the reconnect value cfg describes, with the
// Config's defaults: with the Backoff fix, Policy and Cooldown (with the
// Cooldown fix disabled, a reset on open) and the wait for the network;
// without it, NaiveDelay with a reset on open and an immediate reconnect
// after the watchdog; with the Session fix, the classification with
// Budget, Window, CapGrowth and MaxRefreshes, and the wait for a visible
// page. Rand is not needed: the caller hands each decision its random
// draw.
func NewReconnector(cfg Config) (Reconnector, error) {
	cfg, err := cfg.defaults()
	if err != nil {
		return Reconnector{}, err
	}
	return reconnectorOf(cfg), nil
}

// reconnectorOf builds the value from a config with its defaults in.
func reconnectorOf(cfg Config) Reconnector {
	r := &reconnectRules{policy: Fixed{D: cfg.NaiveDelay}, watchdogNow: true, soon: cfg.OnlineDelay,
		transports: slices.Clone(cfg.Transports), reprobe: cfg.ReprobeInterval, jumps: cfg.on.WhereUsersAre}
	if cfg.on.Backoff {
		r.policy, r.waitOnline, r.watchdogNow = cfg.Policy, true, false
		if cfg.on.Cooldown {
			r.cooldown = cfg.Cooldown
		}
	}
	if cfg.on.Session {
		r.classify = true
		r.waitVisible = !cfg.on.WhereUsersAre || cfg.PauseWhenHidden
		r.budget, r.window, r.capGrowth, r.maxRefreshes = cfg.Budget, cfg.Window, slices.Clone(cfg.CapGrowth), cfg.MaxRefreshes
		r.overloadBase = overloadBase(r.policy)
	}
	return Reconnector{r: r}
}

// Outcome is what a reconnect decision did.
type Outcome string

const (
	OutcomeReconnect   Outcome = "reconnect"    // a dial after Delay
	OutcomeRefresh     Outcome = "refresh"      // a fresh token, then a dial at once
	OutcomeWaitOnline  Outcome = "wait_online"  // offline: nothing until online
	OutcomeWaitVisible Outcome = "wait_visible" // the page is hidden: nothing until visible
	OutcomeWaitLeader  Outcome = "wait_leader"  // another tab holds the connection: nothing until this one leads
	// OutcomeReady is no decision but a run's end: READY again. Only a
	// Record carries it (records.go), never a Decision.
	OutcomeReady Outcome = "ready"
)

// Decision is what to do after a failure. It is small on purpose (four
// words): the compiler keeps a struct that small in registers, and the
// simulator takes a hundred million decisions in a million-client day.
// What the disconnect meant is ClassOf's to say, what is left of the
// budget and the window Remaining's.
type Decision struct {
	// Outcome: reconnect after Delay; refresh (a forced fresh token, then a
	// dial at once); wait for online or for a visible page (nothing is
	// dialled until then); or a terminal state (Outcome.Terminal).
	Outcome    Outcome
	Delay      time.Duration // before the next dial (reconnect)
	RetryAfter time.Duration // the server's, when it set the delay's floor
}

// Terminal returns the terminal state an outcome ends the session in, or
// NotEnded. (A method of Outcome, not of Decision: the simulator asks it
// once per decision, and a Decision is too large to copy cheaply.)
func (o Outcome) Terminal() Terminal {
	switch o {
	case OutcomeReconnect, OutcomeRefresh, OutcomeWaitOnline, OutcomeWaitVisible, OutcomeWaitLeader, OutcomeReady:
		return NotEnded
	}
	return Terminal(o)
}

// AfterFailure decides what follows a failure (a lost connection or a
// failed attempt) at instant at. A terminal close is terminal in every
// state, waiting or not. A failure while the client waits (offline, or
// hidden) spends nothing and draws nothing: the wait ends with CameOnline
// or BecameVisible. Otherwise rand, a uniform number in [0, 1) for the
// backoff's draw, is called exactly once (a terminal decision included, so
// a fleet's draws stay in step with its failures).
//
// The transport rule (reconnector_fallback.go) counts the failure first.
func (rc *Reconnector) AfterFailure(at time.Time, c Cause, rand func() float64) Decision {
	rc.countTransport(c)
	wait := rc.waitFor()
	var r float64
	if wait == "" {
		r = rand()
	}
	if rc.r.classify { // before stage 6 nothing is terminal
		if t := rc.terminal(at, c); t != NotEnded {
			return Decision{Outcome: Outcome(t)}
		}
	}
	if wait != "" {
		return Decision{Outcome: wait}
	}
	if !rc.r.classify {
		d := rc.next(r)
		if rc.atOnce(c) {
			d = 0
		}
		return Decision{Outcome: OutcomeReconnect, Delay: d}
	}
	return rc.classified(at, c, r)
}

// ClassOf says what a disconnect means under these rules: Classify's class
// at stage 6, ClassBackoff before (every failure backs off).
func (rc *Reconnector) ClassOf(c Cause) Class {
	if !rc.r.classify {
		return ClassBackoff
	}
	return Classify(c)
}

// classified decides a stage 6 failure that is neither terminal nor a
// wait.
func (rc *Reconnector) classified(at time.Time, c Cause, r float64) Decision {
	d := Decision{Outcome: OutcomeReconnect}
	class := Classify(c)
	if class == ClassTokenExpired {
		// An orderly close, not a failure of the connection: it neither
		// starts a run nor spends the budget, but refreshes that never get
		// back to READY are bounded (terminal).
		rc.refreshes++
		d.Outcome = OutcomeRefresh
		return d
	}
	first := rc.startRun(at)
	d.Delay = rc.nextAt(at, r)
	if first && c.Woke && rc.r.jumps {
		// The device's own wake is in step with no other client's
		// (reconnector_clock.go): the first attempt waits only the small
		// random delay that follows online, not the backoff's draw.
		d.Delay = rc.SoonDelay(r)
	}
	if class == ClassRetryAfter && c.RetryAfter > 0 {
		// The server's time (a reconnect slot) plus a small jitter, so a
		// fleet does not lean on clocks being in step: at most 5% of it
		// and 250 ms. The backoff's draw wins if it is longer.
		jitter := time.Duration(r * float64(min(c.RetryAfter/20, 250*time.Millisecond)))
		d.RetryAfter = c.RetryAfter
		d.Delay = max(d.Delay, c.RetryAfter+jitter)
	}
	if class == ClassRetryAfter && c.RetryAfter <= 0 {
		// Overloaded, and the server did not say for how long (a 1013
		// with no retry-after, or a malformed one): back off more than
		// after a plain drop, from the larger base, jittered over one
		// more base so a fleet refused together does not return together.
		d.Delay = max(d.Delay, rc.r.overloadBase+time.Duration(r*float64(rc.r.overloadBase)))
	}
	if rc.atOnce(c) {
		d.Delay = 0
	}
	if end, ok := rc.WindowDeadline(); ok && d.Delay > 0 && !at.Add(d.Delay).Before(end) {
		// The dial would start at or after the window's end: no attempt
		// can finish inside it, so the session gives up now rather than
		// holding its callers until the window's deadline.
		return Decision{Outcome: Outcome(GaveUp), Delay: d.Delay}
	}
	return d
}

// OverloadFactor sets the larger base a 1013 without a retry-after backs
// off from (stage 6): OverloadFactor times the policy's longest first
// delay (Policy.Delay of attempt 0), 5 s with the default full jitter of
// base 1 s. The wait is drawn uniformly from [base, 2*base) (5 to 10 s by
// default), or is the backoff's draw if that is longer. The server is
// overloaded and did not say for how long; a plain drop's first delay is
// under one base, and a fleet that came back that fast would meet the
// overload again.
const OverloadFactor = 5

// overloadBase is OverloadFactor times p's longest first delay: its
// Delay of attempt 0 at r = 1, the upper end of its draw (the draws
// themselves are below it).
func overloadBase(p Policy) time.Duration {
	first := max(p.Delay(0, 0, 1), 0)
	if first > math.MaxInt64/(2*OverloadFactor) {
		return math.MaxInt64 / 2 // the draw adds at most one more base: no overflow
	}
	return OverloadFactor * first
}

// NewSession starts a new session (Core.Reconnect): everything starts
// over but what the platform reported (online, hidden, leadership).
func (rc *Reconnector) NewSession() {
	rc.reset()
	rc.endRun()
	rc.refreshes = 0
}

func (rc *Reconnector) String() string {
	rule := "reset on open"
	if rc.r.cooldown > 0 {
		rule = "reset after " + rc.r.cooldown.String() + " ready"
	}
	// The policy as the last delay was drawn: with the cap the run's
	// length had grown it to, not the configured one.
	p := rc.r.policy
	if i := int(rc.capStep) - 1; i >= 0 && i < len(rc.r.capGrowth) {
		if capped, ok := p.(interface{ WithCap(time.Duration) Policy }); ok {
			p = capped.WithCap(rc.r.capGrowth[i].Cap)
		}
	}
	s := p.String() + ", " + rule + ", attempt " + strconv.Itoa(int(rc.attempt))
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
