package client

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Reconnector holds every reconnect rule in one pure value: the delay
// policy and its reset rule (on open, or after Cooldown of READY), the
// immediate reconnect after the watchdog (stages 2-4), the waits for the
// network (stage 5), for a visible page (stage 6; at stage 8 only with
// PauseWhenHidden) and for the tab's leadership (a follower tab never
// dials), at stage 6 the close classification, the retry-after floor,
// token refreshes, the attempt budget, the reconnect window and the cap
// that grows under sustained failure, and at stage 8 the transport the
// next dial uses (the fallback after attempts that never reach a first
// ping, the re-probe of the preferred one) and a window that does not
// charge a clock jump. The Core holds one and carries out its decisions;
// the simulator runs one per simulated client, so no rule is written twice
// and no path can skip one.
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
	flags        rcFlags
	unproven     uint8 // attempts in a row on the transport in use that never saw a first ping (saturates)
	capStep      uint8 // the cap growth step (index+1) the last delay was drawn with; 0: the policy's own cap
}

// rcFlags are a Reconnector's yes/no state, in one byte so the value stays
// 40 bytes.
type rcFlags uint8

const (
	rcFailing     rcFlags = 1 << iota // a run of failures is under way
	rcWindowOver                      // the window ran out while the client was READY
	rcOffline                         // the platform reports no network
	rcHidden                          // the page is hidden
	rcFollower                        // another tab holds the connection: nothing is dialled
	rcFallback                        // the next dials use the fallback transport
	rcProbeWanted                     // the driver is to probe the fallback (EffProbeHTTP), once
	rcProbeOut                        // that probe is out: HTTPProbe answers it
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
	}
	return Reconnector{r: r}
}

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
	OutcomeWaitLeader  Outcome = "wait_leader"  // another tab holds the connection: nothing until this one leads
)

// Decision is what to do after a failure. It is small on purpose (four
// words): the compiler keeps a struct that small in registers, and the
// simulator takes a hundred million decisions in a million-client day.
// What the disconnect meant is Class's to say, what is left of the budget
// and the window Left's.
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
	case OutcomeReconnect, OutcomeRefresh, OutcomeWaitOnline, OutcomeWaitVisible, OutcomeWaitLeader:
		return NotEnded
	}
	return Terminal(o)
}

// Failed decides what follows a failure at instant at. A terminal close is
// terminal in every state, waiting or not. A failure while the client
// waits (offline, or hidden) spends nothing and draws nothing: the wait
// ends with Online or Visible. Otherwise rand, a uniform number in [0, 1)
// for the backoff's draw, is called exactly once (a terminal decision
// included, so a fleet's draws stay in step with its failures).
//
// The transport rule (stage 8, Config.Transports with a fallback) counts
// the failure first: a classified refusal (retry-after, 4001, 4003/1008,
// 1000) means the server is steering, and starts the count over; an
// attempt on the transport in use (c.Via) that never saw a first ping
// (!c.Proven) counts one; after fallbackAfter in a row on the preferred
// transport the driver is asked to probe the fallback (TakeProbe; an HTTP
// fallback) or, if the fallback needs no probe, the next dials use it;
// after as many on the fallback, they use the preferred one again.
func (rc *Reconnector) Failed(at time.Duration, c Cause, rand func() float64) Decision {
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
	return rc.failed(at, c, r)
}

// Class says what a disconnect means under these rules: Classify's class
// at stage 6, ClassBackoff before (every failure backs off).
func (rc *Reconnector) Class(c Cause) Class {
	if !rc.r.classify {
		return ClassBackoff
	}
	return Classify(c)
}

// failed decides a stage 6 failure that is neither terminal nor a wait.
func (rc *Reconnector) failed(at time.Duration, c Cause, r float64) Decision {
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
	first := !rc.is(rcFailing)
	if first {
		rc.set(rcFailing, true)
		rc.failingSince = at
	}
	rc.attempts = inc(rc.attempts)
	d.Delay = rc.nextAt(at, r)
	if first && c.Woke && rc.r.jumps {
		// The device's own wake is in step with no other client's
		// (clock.go): the first attempt waits only the small random delay
		// that follows online, not the backoff's draw.
		d.Delay = rc.Soon(r)
	}
	if class == ClassRetryAfter && c.RetryAfter > 0 {
		// The server's time (a reconnect slot) plus a small jitter, so a
		// fleet does not lean on clocks being in step: at most 5% of it
		// and 250 ms. The backoff's draw wins if it is longer.
		jitter := time.Duration(r * float64(min(c.RetryAfter/20, 250*time.Millisecond)))
		d.RetryAfter = c.RetryAfter
		d.Delay = max(d.Delay, c.RetryAfter+jitter)
	}
	if rc.atOnce(c) {
		d.Delay = 0
	}
	return d
}

// atOnce says the watchdog's reconnect is immediate: before stage 5 the
// client reconnects as soon as its watchdog gives up, not waiting for the
// close event (which a browser may report a minute later).
func (rc *Reconnector) atOnce(c Cause) bool {
	return rc.r.watchdogNow && c.By == ByClient && c.Code == protocol.CloseHeartbeatTimeout
}

// terminal reports the terminal state a failure at instant at leads to, or
// NotEnded, and changes nothing. Failed asks it before anything else,
// before the waits too: terminal means terminal in every state.
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
	if rc.is(rcWindowOver) || (rc.r.window > 0 && rc.is(rcFailing) && at-rc.failingSince >= rc.r.window) {
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

// Left returns what is left of the current run of failures at instant at:
// reconnect attempts (the budget) and time (the window), -1 for either
// when it is unbounded.
func (rc *Reconnector) Left(at time.Duration) (budget int, window time.Duration) {
	budget, window = -1, -1
	if rc.r.budget > 0 {
		budget = rc.r.budget - int(rc.attempts)
	}
	if rc.r.window > 0 && rc.is(rcFailing) {
		window = max(0, rc.failingSince+rc.r.window-at)
	}
	return budget, window
}

// waitFor says what the client waits for before it may dial again, if
// anything: the tab's leadership first, then the network, then a visible
// page.
func (rc *Reconnector) waitFor() Outcome {
	switch {
	case rc.is(rcFollower):
		return OutcomeWaitLeader
	case rc.r.waitOnline && rc.is(rcOffline):
		return OutcomeWaitOnline
	case rc.r.waitVisible && rc.is(rcHidden):
		return OutcomeWaitVisible
	}
	return ""
}

// Offline notes that the platform lost the network. It reports whether a
// scheduled reconnect is cancelled: with Backoff nothing is dialled while
// offline.
func (rc *Reconnector) Offline() bool {
	rc.set(rcOffline, true)
	return rc.r.waitOnline
}

// Online notes that the network is back. With Backoff the backoff starts
// over, and Online reports whether a client that is down reconnects after
// a Soon delay (not while the page still hides it).
func (rc *Reconnector) Online() bool {
	rc.set(rcOffline, false)
	if !rc.r.waitOnline {
		return false
	}
	rc.reset()
	return rc.mayDial()
}

// Hidden notes that the page was hidden. It reports whether a scheduled
// reconnect is cancelled: with Session nothing is dialled while hidden.
func (rc *Reconnector) Hidden() bool {
	rc.set(rcHidden, true)
	return rc.r.waitVisible
}

// Visible notes that the page is visible again. With Session the backoff
// starts over, and Visible reports whether a client that is down
// reconnects after a Soon delay (not while it is offline).
func (rc *Reconnector) Visible() bool {
	rc.set(rcHidden, false)
	if !rc.r.waitVisible {
		return false
	}
	rc.reset()
	return rc.mayDial()
}

func (rc *Reconnector) mayDial() bool { return rc.waitFor() == "" }

// IsOnline reports the network as the platform last reported it.
func (rc *Reconnector) IsOnline() bool { return !rc.is(rcOffline) }

// IsHidden reports whether the page is hidden.
func (rc *Reconnector) IsHidden() bool { return rc.is(rcHidden) }

// Soon is the delay before the reconnect that follows Online or Visible,
// for r uniform in [0, 1): at most OnlineDelay, so a fleet whose network
// comes back does not dial in the same instant.
func (rc *Reconnector) Soon(r float64) time.Duration {
	return time.Duration(r * float64(rc.r.soon))
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
	rc.endRun()
	return 0, false
}

// WindowEnds returns when the current run of failures runs out of window.
func (rc *Reconnector) WindowEnds() (time.Duration, bool) {
	if !rc.r.classify || rc.r.window <= 0 || !rc.is(rcFailing) {
		return 0, false
	}
	return rc.failingSince + rc.r.window, true
}

// WindowOver notes that the window ran out while the client was READY: the
// next failure before a stable READY gives up at once.
func (rc *Reconnector) WindowOver() { rc.set(rcWindowOver, true) }

// Fresh starts a new session: everything starts over but what the platform
// reported (online, hidden).
func (rc *Reconnector) Fresh() {
	rc.reset()
	rc.endRun()
	rc.refreshes = 0
}

// endRun ends the run of failures: the budget and the window start over.
func (rc *Reconnector) endRun() {
	rc.set(rcFailing|rcWindowOver, false)
	rc.failingSince, rc.attempts, rc.capStep = 0, 0, 0
}

func (rc *Reconnector) reset() { rc.attempt, rc.prev = 0, 0 }

// Attempt is the number of backoff attempts since the last reset.
func (rc *Reconnector) Attempt() int { return int(rc.attempt) }

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

// fallbackAfter is how many attempts in a row on a transport that never
// reach a first ping (never open, or open and stay silent) make the
// client try the other (stage 8).
const fallbackAfter = 3

// countTransport applies the transport rule to a failure (Failed's first
// step; see there).
func (rc *Reconnector) countTransport(c Cause) {
	if len(rc.r.transports) < 2 || c.Via == 0 {
		return // one transport, or no attempt (a failed token hook)
	}
	switch Classify(c) {
	case ClassRetryAfter, ClassTokenExpired, ClassForbidden, ClassEnded:
		rc.unproven = 0 // the server is steering: the transport works
		return
	}
	if c.Proven {
		rc.unproven = 0
		return
	}
	if c.Via != rc.Via() {
		return // an attempt on the transport the client already left
	}
	if rc.unproven < math.MaxUint8 {
		rc.unproven++
	}
	if int(rc.unproven) < fallbackAfter {
		return
	}
	rc.unproven = 0
	switch {
	case rc.is(rcFallback):
		rc.set(rcFallback, false) // the fallback fails too: the preferred again
	case rc.r.transports[1] == TransportHTTP:
		if !rc.is(rcProbeOut) {
			rc.set(rcProbeWanted|rcProbeOut, true)
		}
	default:
		rc.set(rcFallback, true)
	}
}

// TakeProbe reports, once, that the last decision asks the driver to
// probe the fallback transport (EffProbeHTTP): a plain HTTP request to the
// server, answered with Probed.
func (rc *Reconnector) TakeProbe() bool {
	w := rc.is(rcProbeWanted)
	rc.set(rcProbeWanted, false)
	return w
}

// Probed takes the answer to the probe TakeProbe asked for. ok: the next
// dials use the fallback, and the backoff starts over (the failures were
// the transport's, and the server answers). It reports whether the
// transport changed; an answer nobody asked for changes nothing.
func (rc *Reconnector) Probed(ok bool) bool {
	if !rc.is(rcProbeOut) {
		return false
	}
	rc.set(rcProbeOut, false)
	if !ok || rc.is(rcFallback) {
		return false
	}
	rc.set(rcFallback, true)
	rc.unproven = 0
	rc.reset()
	return true
}

// Via is the transport the next dial uses: the preferred one
// (Config.Transports[0]), or the fallback after the rule above.
func (rc *Reconnector) Via() Transport {
	t := rc.r.transports
	switch {
	case len(t) == 0:
		return TransportWebSocket
	case rc.is(rcFallback) && len(t) > 1:
		return t[1]
	}
	return t[0]
}

// Preferred is the transport the client prefers.
func (rc *Reconnector) Preferred() Transport {
	if len(rc.r.transports) == 0 {
		return TransportWebSocket
	}
	return rc.r.transports[0]
}

// Proven notes that a socket on the transport in use saw its first ping:
// the count of attempts that did not starts over.
func (rc *Reconnector) Proven() { rc.unproven = 0 }

// Reprobe says when, at instant at, the preferred transport is next to be
// tried beside a live socket on the fallback: ReprobeInterval on. False
// when the client is not on the fallback.
func (rc *Reconnector) Reprobe(at time.Duration) (time.Duration, bool) {
	if !rc.is(rcFallback) || rc.r.reprobe <= 0 {
		return 0, false
	}
	return at + rc.r.reprobe, true
}

// Moved notes that a socket on the preferred transport replaced the
// fallback's: the next dials use the preferred one.
func (rc *Reconnector) Moved() {
	rc.set(rcFallback, false)
	rc.unproven = 0
}

// Follow notes that another tab holds the connection: nothing is dialled
// until Lead (a failure decides OutcomeWaitLeader).
func (rc *Reconnector) Follow() { rc.set(rcFollower, true) }

// Lead notes that this tab holds the connection now: the backoff starts
// over, and Lead reports whether the client may dial at once (not while
// it waits for the network or a visible page).
func (rc *Reconnector) Lead() bool {
	rc.set(rcFollower, false)
	rc.reset()
	return rc.mayDial()
}

// IsFollower reports whether another tab holds the connection.
func (rc *Reconnector) IsFollower() bool { return rc.is(rcFollower) }

// Jumped notes that the clock jumped by d (a suspended laptop, a frozen
// tab; stage 8): a run of failures under way does not count the jump
// against its window.
func (rc *Reconnector) Jumped(d time.Duration) {
	if rc.r.jumps && rc.is(rcFailing) && d > 0 {
		rc.failingSince += d
	}
}
