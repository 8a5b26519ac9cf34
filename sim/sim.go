// Package sim is a virtual-time fleet simulator. It runs the client core's
// own reconnection code (client.Reconnector, built by client.NewReconnector
// from a client config: its policies, reset rule and session rules, not
// copies) over thousands of clients against a server model, to show what
// one browser tab cannot: a stampede after a restart.
package sim

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"
	"unsafe"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/slots"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"
)

// Config is one scenario. Every field is a flag of wsready sim, and every
// value means what it says: zero is a value (a zero Downtime is a server
// that never refuses), not "use the default". DefaultConfig has the SPEC's
// base scenario.
type Config struct {
	Clients  int           // fleet size, 1..10,000,000
	Capacity int           // handshakes accepted per one-second window [k, k+1) after the downtime; 0: none
	Downtime time.Duration // the server refuses everything before this; 0: never
	Horizon  time.Duration // simulated time, 1ms..24h
	Seed     uint64        // random seed; the same seed gives the same figures
	// FirstAttemptZero makes every client's first attempt happen at t=0
	// (a synchronized reconnect) instead of delay(0) after the disconnect.
	FirstAttemptZero bool
	// Session makes every client a stage 6 client (the session rules of
	// client.Reconnector): it honours RetryAfter and gives up after Budget
	// attempts.
	Session bool
	// RetryAfter is what the server's refusals ask clients to wait (HTTP
	// 503 with Retry-After, or 1013); 0: refusals carry none. Only stage 6
	// clients honour it.
	RetryAfter time.Duration
	// Budget is a stage 6 client's attempt budget; 0: unbounded.
	Budget int
	// Slots makes the server hand out reconnect slots, as the real one
	// does (internal/slots): the disconnect at t=0 (a Restart's 1012) and
	// every refusal carry a time to come back, spread at 90% of Capacity
	// after the downtime. Only stage 6 clients honour them. It replaces
	// RetryAfter.
	Slots bool
}

// DefaultConfig is the SPEC's base scenario: 10,000 clients, 500
// handshakes per second after 10 s of downtime, 90 s horizon, seed 1.
func DefaultConfig() Config {
	return Config{Clients: 10000, Capacity: 500, Downtime: 10 * time.Second, Horizon: 90 * time.Second, Seed: 1}
}

func (c Config) validate() error {
	switch {
	case c.Clients < 1 || c.Clients > 10_000_000:
		return errors.New("clients must be between 1 and 10000000")
	case c.Capacity < 0:
		return errors.New("capacity must not be negative")
	case c.Downtime < 0:
		return errors.New("downtime must not be negative")
	case c.Horizon < time.Millisecond || c.Horizon > 24*time.Hour:
		return errors.New("horizon must be between 1ms and 24h")
	case c.RetryAfter < 0 || c.Budget < 0:
		return errors.New("retry-after and budget must not be negative")
	case c.Slots && c.Capacity < 1:
		return errors.New("slots need a capacity of at least 1")
	}
	return nil
}

// PolicyParams are the policies' own parameters, one set per policy, so
// that "fixed 1 s beside exponential from 500 ms" can be said.
type PolicyParams struct {
	Fixed     time.Duration // fixed: the delay every time; > 0
	Base, Cap time.Duration // exponential and jitter: base > 0, cap >= base
	Step      time.Duration // linear: the first delay is uniform in [0, Step), then +Step per attempt; > 0
	LinearCap time.Duration // linear: the longest delay; 0 means no cap
}

// DefaultPolicyParams are the SPEC's: fixed 1 s; base 1 s, cap 30 s; step 1 s, no cap.
func DefaultPolicyParams() PolicyParams {
	return PolicyParams{Fixed: time.Second, Base: time.Second, Cap: 30 * time.Second, Step: time.Second}
}

// Validate refuses parameters that would make a policy wait nothing (a
// fleet that retries in the same instant forever) or cap below its base.
func (p PolicyParams) Validate() error {
	switch {
	case p.Fixed <= 0:
		return errors.New("fixed delay must be positive")
	case p.Base <= 0:
		return errors.New("base must be positive")
	case p.Cap < p.Base:
		return errors.New("cap must be at least base")
	case p.Step <= 0:
		return errors.New("linear step must be positive")
	case p.LinearCap < 0 || (p.LinearCap > 0 && p.LinearCap < p.Step):
		return errors.New("linear cap must be 0 (none) or at least the step")
	}
	return nil
}

// NamedPolicy is a policy with the short name the flags and tables use.
type NamedPolicy struct {
	Name   string
	Policy client.Policy
}

// Policies returns the four policies of the SPEC with p's parameters.
func Policies(p PolicyParams) []NamedPolicy {
	return []NamedPolicy{
		{"fixed", client.Fixed{D: p.Fixed}},
		{"exponential", client.Exponential{Base: p.Base, Cap: p.Cap}},
		{"linear", client.RandomStartLinear{Step: p.Step, Cap: p.LinearCap}},
		{"jitter", client.FullJitter{Base: p.Base, Cap: p.Cap}},
	}
}

// PolicyByName returns one of Policies, or false.
func PolicyByName(name string, p PolicyParams) (NamedPolicy, bool) {
	for _, np := range Policies(p) {
		if np.Name == name {
			return np, true
		}
	}
	return NamedPolicy{}, false
}

// Result is one policy's outcome in the base scenario.
type Result struct {
	Policy             string  `json:"policy"`
	Description        string  `json:"description"`
	Clients            int     `json:"clients"`
	Attempts           int     `json:"attempts"`
	Rejected           int     `json:"rejected"`
	PeakAfterRecovery  int     `json:"peakAfterRecovery"` // most attempts in one second at or after the downtime
	PeakOverall        int     `json:"peakOverall"`
	T99Ms              *int64  `json:"t99Ms"`  // when 99% were connected; nil: not within the horizon
	T100Ms             *int64  `json:"t100Ms"` // when all were connected; nil: not within the horizon
	ConnectedAtHorizon int     `json:"connectedAtHorizon"`
	WaitingAtHorizon   int     `json:"waitingAtHorizon"` // not connected: their next attempt falls past the horizon
	GaveUp             int     `json:"gaveUp"`           // stage 6 clients whose budget ran out`
	AttemptsPerClient  float64 `json:"attemptsPerClient"`
	// Per second k (window [k, k+1)): attempts, accepted handshakes, and
	// clients connected at the end of the window.
	AttemptsPerSecond  []int `json:"attemptsPerSecond"`
	AcceptedPerSecond  []int `json:"acceptedPerSecond"`
	ConnectedPerSecond []int `json:"connectedPerSecond"`
}

// newDraw returns the run's source of uniform draws in [0, 1) for seed:
// the values of rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).Float64,
// without its interface call (a draw per attempt).
func newDraw(seed uint64) func() float64 {
	src := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	return func() float64 {
		// rand.Rand.Float64: there are exactly 1<<53 float64s in [0, 1).
		return float64(src.Uint64()<<11>>11) / (1 << 53)
	}
}

// scratch is a run's memory for the fleet and its calendar. Runs reuse it
// (a pool), so the policies of one command, run one after another on a
// core, fault in and zero the fleet's pages once, not once per policy; on
// Linux a new fleet of 2 MiB or more is advised for huge pages
// (adviseHugePages), a page fault per 2 MiB of it instead of per 4 KiB.
type scratch struct {
	fleet []client.Reconnector
	cal   *calendar
}

var scratchPool sync.Pool // of *scratch

func getScratch(clients int, horizon time.Duration) *scratch {
	sc, _ := scratchPool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{cal: newCalendar(horizon, clients)}
	} else {
		sc.cal.reset(horizon, clients)
	}
	if cap(sc.fleet) < clients {
		sc.fleet = make([]client.Reconnector, clients)
		adviseHugePages(unsafe.Pointer(unsafe.SliceData(sc.fleet)), uintptr(clients)*unsafe.Sizeof(client.Reconnector{}))
	}
	sc.fleet = sc.fleet[:clients] // every run sets every client before it starts
	return sc
}

// putScratch returns sc to the pool unless it is much larger than the
// usual run: a 10-million-client run should not hold 440 MB afterwards.
func putScratch(sc *scratch) {
	if cap(sc.fleet) <= 1_000_000 {
		scratchPool.Put(sc)
	}
}

// RunBytes is at most what one Run or RunFlap of clients over horizon
// allocates: the fleet (a client.Reconnector each), the calendar (4 bytes
// a client, 8 a wheel slot, and a far heap of 24 bytes a client when the
// delays pass the wheel's 65.5 s) and the Result's per-second figures.
// Runs reuse the fleet and the calendar, so several runs of one command
// often allocate less than the sum.
func RunBytes(clients int, horizon time.Duration) int64 {
	perClient := int64(unsafe.Sizeof(client.Reconnector{})) + 4 + int64(unsafe.Sizeof(event{}))
	secs := int64((horizon + time.Second - 1) / time.Second)
	return int64(clients)*perClient + 2*4*wheelSlots + 3*8*secs
}

// epoch is t=0 of virtual time: the instant the Reconnector and the
// reconnect slots' allocator see for a time t is epoch.Add(t).
var epoch = time.Unix(0, 0).UTC()

// Run simulates the base scenario for one policy: every client lost its
// connection at t=0; the server refuses everything until Downtime, then
// accepts at most Capacity handshakes per one-second window and rejects
// the rest; a rejected attempt is a failure and the client schedules its
// next attempt by its policy; a connected client stays connected.
func Run(cfg Config, np NamedPolicy) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	secs := int(cfg.Horizon / time.Second)
	if cfg.Horizon%time.Second != 0 {
		secs++
	}
	res := Result{Policy: np.Name, Description: np.Policy.String(), Clients: cfg.Clients,
		AttemptsPerSecond: make([]int, secs), AcceptedPerSecond: make([]int, secs), ConnectedPerSecond: make([]int, secs)}
	// What a refused or lost client does next: the core's own Reconnector,
	// built from a client config like the core's, one per client. Copies
	// share the rules and keep 56 bytes of state each.
	stage := 5 // backoff and cooldown
	if cfg.Session {
		stage = 6 // and the session contract: classification, budget, window
	}
	off, err := stages.Disabled(stage)
	if err != nil {
		return Result{}, err
	}
	rc, err := client.NewReconnector(client.Config{Disable: off, Policy: np.Policy, Budget: cfg.Budget})
	if err != nil {
		return Result{}, err
	}
	sc := getScratch(cfg.Clients, cfg.Horizon)
	defer putScratch(sc)
	fleet, cal := sc.fleet, sc.cal
	for i := range fleet {
		fleet[i] = rc
	}
	draw := newDraw(cfg.Seed) // one draw per decision, as the core makes
	// What a refusal looks like to a client: an HTTP refusal (1006 to a
	// browser) or, with a retry-after, the server's word to wait.
	refusal := client.Cause{By: client.ByNetwork, Code: protocol.CloseAbnormal}
	if cfg.RetryAfter > 0 {
		refusal = client.Cause{By: client.ByServer, Code: protocol.CloseTryAgainLater, RetryAfter: cfg.RetryAfter}
	}
	lost := client.Cause{By: client.ByNetwork, Code: protocol.CloseAbnormal} // the disconnect at t=0
	var alloc *slots.Allocator
	slotFrom := func(t time.Duration) time.Duration { // the next slot, as a retry-after from t
		return alloc.Take(epoch.Add(t), epoch.Add(max(t, cfg.Downtime))).Sub(epoch.Add(t))
	}
	if cfg.Slots {
		alloc = slots.New(float64(cfg.Capacity))
	}
	for i := range int32(cfg.Clients) {
		cause := lost
		if cfg.Slots {
			cause = client.Cause{By: client.ByServer, Code: protocol.CloseServiceRestart, RetryAfter: slotFrom(0)}
		}
		d := fleet[i].AfterFailure(epoch, cause, draw).Delay
		if cfg.FirstAttemptZero {
			d = 0
		}
		if !cal.at(d, i) {
			res.WaitingAtHorizon++
		}
	}
	// The figures are counted in locals and stored once the run is over:
	// this loop runs once per attempt, millions of times.
	var attempts, rejected, gaveUp, waiting, connected int
	var t99, t100 *int64
	need99 := (cfg.Clients*99 + 99) / 100
	perSec, acceptedPerSec, connectedPerSec := res.AttemptsPerSecond, res.AcceptedPerSecond, res.ConnectedPerSecond
	filled := 0 // connectedPerSec is set for the seconds before this one
	for {
		ms, i, ok := cal.pop()
		if !ok {
			break
		}
		t := time.Duration(ms) * time.Millisecond
		sec := int(ms / 1000)
		for ; filled < sec; filled++ {
			connectedPerSec[filled] = connected // at the end of that second
		}
		attempts++
		perSec[sec]++
		if t >= cfg.Downtime && acceptedPerSec[sec] < cfg.Capacity {
			acceptedPerSec[sec]++
			connected++
			if connected == need99 && t99 == nil {
				v := t.Milliseconds()
				t99 = &v
			}
			if connected == cfg.Clients {
				v := t.Milliseconds()
				t100 = &v
			}
			continue
		}
		rejected++
		cause := refusal
		if cfg.Slots {
			cause = client.Cause{By: client.ByServer, Code: protocol.CloseTryAgainLater, RetryAfter: slotFrom(t)}
		}
		d := fleet[i].AfterFailure(epoch.Add(t), cause, draw)
		if d.Outcome.Terminal() != client.NotEnded {
			gaveUp++
			continue
		}
		if !cal.at(t+d.Delay, i) {
			waiting++
		}
	}
	res.Attempts, res.Rejected, res.GaveUp, res.T99Ms, res.T100Ms = attempts, rejected, gaveUp, t99, t100
	res.WaitingAtHorizon += waiting
	for ; filled < secs; filled++ {
		res.ConnectedPerSecond[filled] = connected
	}
	res.ConnectedAtHorizon = connected
	res.AttemptsPerClient = float64(res.Attempts) / float64(cfg.Clients)
	for s, n := range res.AttemptsPerSecond {
		res.PeakOverall = max(res.PeakOverall, n)
		if time.Duration(s)*time.Second >= cfg.Downtime {
			res.PeakAfterRecovery = max(res.PeakAfterRecovery, n)
		}
	}
	return res, nil
}

// FlapConfig is the second scenario: the server accepts every handshake
// and closes each connection CloseAfter later (Flapping). As with Config,
// zero is a value; DefaultFlapConfig has the SPEC's.
type FlapConfig struct {
	Clients    int           // 1..1,000,000
	Horizon    time.Duration // 1ms..24h
	CloseAfter time.Duration // >= 0
	Cooldown   time.Duration // the "reset after readiness" rule; > 0
	Seed       uint64
}

// DefaultFlapConfig: 1000 clients over 10 minutes, closed 300 ms after
// accept, 5 s cooldown, seed 1.
func DefaultFlapConfig() FlapConfig {
	return FlapConfig{Clients: 1000, Horizon: 10 * time.Minute, CloseAfter: 300 * time.Millisecond, Cooldown: 5 * time.Second, Seed: 1}
}

func (c FlapConfig) validate() error {
	switch {
	case c.Clients < 1 || c.Clients > 1_000_000:
		return errors.New("flap: clients must be between 1 and 1000000")
	case c.Horizon < time.Millisecond || c.Horizon > 24*time.Hour:
		return errors.New("flap: horizon must be between 1ms and 24h")
	case c.CloseAfter < 0:
		return errors.New("flap: close-after must not be negative")
	case c.Cooldown <= 0:
		return errors.New("flap: cooldown must be positive")
	}
	return nil
}

// FlapResult compares the two reset rules for one policy.
type FlapResult struct {
	Policy string `json:"policy"`
	// Connections per client per minute, averaged over the fleet and the
	// horizon, when the backoff resets on open and after Cooldown of READY.
	PerMinuteResetOnOpen  float64 `json:"perMinuteResetOnOpen"`
	PerMinuteResetOnReady float64 `json:"perMinuteResetOnReady"`
	// The same for the whole fleet.
	FleetPerMinuteResetOnOpen  float64 `json:"fleetPerMinuteResetOnOpen"`
	FleetPerMinuteResetOnReady float64 `json:"fleetPerMinuteResetOnReady"`
}

// RunFlap measures connections per minute under Flapping for one policy
// with both reset rules. A connection counts as READY from accept to close,
// so a client resets its backoff under the cooldown rule only if CloseAfter
// is at least Cooldown: under Flapping it never does.
func RunFlap(cfg FlapConfig, np NamedPolicy) (FlapResult, error) {
	if err := cfg.validate(); err != nil {
		return FlapResult{}, err
	}
	closed := client.Cause{By: client.ByServer, Code: protocol.CloseFlapping} // the server's Flapping close
	// One run per reset rule: the core's Reconnector, a stage 5 client's
	// with the policy, resetting on open or after the cooldown.
	run := func(resetOnOpen bool) (int, error) {
		off, err := stages.Disabled(5)
		if err != nil {
			return 0, err
		}
		off.Cooldown = resetOnOpen
		rc, err := client.NewReconnector(client.Config{Disable: off, Policy: np.Policy, Cooldown: cfg.Cooldown})
		if err != nil {
			return 0, err
		}
		draw := newDraw(cfg.Seed)
		sc := getScratch(cfg.Clients, cfg.Horizon)
		defer putScratch(sc)
		fleet, cal := sc.fleet, sc.cal
		for i := range fleet {
			fleet[i] = rc
			cal.at(fleet[i].AfterFailure(epoch, closed, draw).Delay, int32(i))
		}
		conns := 0
		for {
			ms, i, ok := cal.pop()
			if !ok {
				break
			}
			t := time.Duration(ms) * time.Millisecond
			conns++
			rc := &fleet[i]
			closeAt := t + cfg.CloseAfter
			rc.SocketOpened()                               // accepted at t
			rc.ReadySince(epoch.Add(t), epoch.Add(closeAt)) // READY from accept to close: the cooldown rule decides
			cal.at(closeAt+rc.AfterFailure(epoch.Add(closeAt), closed, draw).Delay, i)
		}
		return conns, nil
	}
	minutes := cfg.Horizon.Minutes()
	open, err := run(true)
	if err != nil {
		return FlapResult{}, err
	}
	ready, err := run(false)
	if err != nil {
		return FlapResult{}, err
	}
	return FlapResult{
		Policy:                     np.Name,
		PerMinuteResetOnOpen:       float64(open) / minutes / float64(cfg.Clients),
		PerMinuteResetOnReady:      float64(ready) / minutes / float64(cfg.Clients),
		FleetPerMinuteResetOnOpen:  float64(open) / minutes,
		FleetPerMinuteResetOnReady: float64(ready) / minutes,
	}, nil
}
