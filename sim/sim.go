// Package sim is a virtual-time fleet simulator. It runs the client core's
// own reconnection code (client.Policy values and the client.Backoff reset
// rule, not copies) over thousands of clients against a server model, to
// show what one browser tab cannot: a stampede after a restart.
package sim

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/wsready/wsready/client"
)

// Config is one scenario. Every field is a flag of wsready sim.
type Config struct {
	Clients  int           // fleet size; default 10000
	Capacity int           // handshakes accepted per one-second window [k, k+1) after the downtime; default 500
	Downtime time.Duration // the server refuses everything before this; default 10s
	Base     time.Duration // policy base; default 1s
	Cap      time.Duration // policy cap; default 30s
	Horizon  time.Duration // simulated time; default 90s
	Seed     uint64        // random seed; the same seed gives the same figures
	// FirstAttemptZero makes every client's first attempt happen at t=0
	// (a synchronized reconnect) instead of delay(0) after the disconnect.
	FirstAttemptZero bool
}

func (c Config) withDefaults() (Config, error) {
	if c.Clients == 0 {
		c.Clients = 10000
	}
	if c.Capacity == 0 {
		c.Capacity = 500
	}
	if c.Downtime == 0 {
		c.Downtime = 10 * time.Second
	}
	if c.Base == 0 {
		c.Base = time.Second
	}
	if c.Cap == 0 {
		c.Cap = 30 * time.Second
	}
	if c.Horizon == 0 {
		c.Horizon = 90 * time.Second
	}
	switch {
	case c.Clients < 0 || c.Clients > 10_000_000:
		return c, errors.New("clients must be between 1 and 10000000")
	case c.Capacity < 0:
		return c, errors.New("capacity must be positive")
	case c.Downtime < 0 || c.Base < 0 || c.Cap < c.Base:
		return c, errors.New("downtime and base must not be negative, and cap must be at least base")
	case c.Horizon <= 0 || c.Horizon > 24*time.Hour:
		return c, errors.New("horizon must be between 1ms and 24h")
	}
	return c, nil
}

// NamedPolicy is a policy with the short name the flags and tables use.
type NamedPolicy struct {
	Name   string
	Policy client.Policy
}

// Policies returns the four policies of the SPEC for base and cap.
func Policies(base, cap time.Duration) []NamedPolicy {
	return []NamedPolicy{
		{"fixed", client.Fixed{D: base}},
		{"exponential", client.Exponential{Base: base, Cap: cap}},
		{"linear", client.RandomStartLinear{Step: base}},
		{"jitter", client.FullJitter{Base: base, Cap: cap}},
	}
}

// PolicyByName returns one of Policies, or false.
func PolicyByName(name string, base, cap time.Duration) (NamedPolicy, bool) {
	for _, p := range Policies(base, cap) {
		if p.Name == name {
			return p, true
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
	AttemptsPerClient  float64 `json:"attemptsPerClient"`
	// Per second k (window [k, k+1)): attempts, accepted handshakes, and
	// clients connected at the end of the window.
	AttemptsPerSecond  []int `json:"attemptsPerSecond"`
	AcceptedPerSecond  []int `json:"acceptedPerSecond"`
	ConnectedPerSecond []int `json:"connectedPerSecond"`
}

// epoch anchors virtual time for the core's time.Time-based reset rule.
var epoch = time.Unix(0, 0).UTC()

// calendar is a bucket queue of client indices by millisecond: O(1) per
// event, and deterministic (a bucket keeps insertion order).
type calendar struct {
	buckets [][]int32
}

func newCalendar(horizon time.Duration) *calendar {
	return &calendar{buckets: make([][]int32, max(1, horizon.Milliseconds()))}
}

// at schedules client i at t; events at or past the horizon are dropped.
func (c *calendar) at(t time.Duration, i int32) {
	ms := t.Milliseconds()
	if ms < int64(len(c.buckets)) {
		c.buckets[ms] = append(c.buckets[ms], i)
	}
}

// Run simulates the base scenario for one policy: every client lost its
// connection at t=0; the server refuses everything until Downtime, then
// accepts at most Capacity handshakes per one-second window and rejects
// the rest; a rejected attempt is a failure and the client schedules its
// next attempt by its policy; a connected client stays connected.
func Run(cfg Config, np NamedPolicy) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	secs := int(cfg.Horizon / time.Second)
	if cfg.Horizon%time.Second != 0 {
		secs++
	}
	res := Result{Policy: np.Name, Description: np.Policy.String(), Clients: cfg.Clients,
		AttemptsPerSecond: make([]int, secs), AcceptedPerSecond: make([]int, secs), ConnectedPerSecond: make([]int, secs)}
	backoffs := make([]client.Backoff, cfg.Clients)
	cal := newCalendar(cfg.Horizon)
	for i := range backoffs {
		backoffs[i] = client.Backoff{Policy: np.Policy}
		d := backoffs[i].Next(rng.Float64())
		if cfg.FirstAttemptZero {
			d = 0
		}
		cal.at(d, int32(i))
	}
	connected := 0
	need99 := (cfg.Clients*99 + 99) / 100
	for ms, bucket := range cal.buckets {
		t := time.Duration(ms) * time.Millisecond
		sec := ms / 1000
		for _, i := range bucket {
			res.Attempts++
			res.AttemptsPerSecond[sec]++
			if t >= cfg.Downtime && res.AcceptedPerSecond[sec] < cfg.Capacity {
				res.AcceptedPerSecond[sec]++
				connected++
				if connected == need99 && res.T99Ms == nil {
					v := t.Milliseconds()
					res.T99Ms = &v
				}
				if connected == cfg.Clients {
					v := t.Milliseconds()
					res.T100Ms = &v
				}
				continue
			}
			res.Rejected++
			cal.at(t+backoffs[i].Next(rng.Float64()), i)
		}
		cal.buckets[ms] = nil
		if (ms+1)%1000 == 0 || ms == len(cal.buckets)-1 {
			res.ConnectedPerSecond[min(sec, secs-1)] = connected
		}
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
// and closes each connection CloseAfter later (Flapping).
type FlapConfig struct {
	Clients    int           // default 1000
	Horizon    time.Duration // default 10m
	CloseAfter time.Duration // default 300ms
	Cooldown   time.Duration // the "reset after readiness" rule; default 5s
	Base, Cap  time.Duration // default 1s, 30s
	Seed       uint64
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
	if cfg.Clients == 0 {
		cfg.Clients = 1000
	}
	if cfg.Horizon == 0 {
		cfg.Horizon = 10 * time.Minute
	}
	if cfg.CloseAfter == 0 {
		cfg.CloseAfter = 300 * time.Millisecond
	}
	if cfg.Cooldown == 0 {
		cfg.Cooldown = 5 * time.Second
	}
	if cfg.Clients < 0 || cfg.Clients > 1_000_000 || cfg.Horizon < 0 || cfg.Horizon > 24*time.Hour || cfg.CloseAfter < 0 {
		return FlapResult{}, errors.New("flap: clients must be 1..1000000, horizon up to 24h, close-after not negative")
	}
	run := func(cooldown time.Duration) int {
		rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
		cal := newCalendar(cfg.Horizon)
		backoffs := make([]client.Backoff, cfg.Clients)
		for i := range backoffs {
			backoffs[i] = client.Backoff{Policy: np.Policy, Cooldown: cooldown}
			cal.at(backoffs[i].Next(rng.Float64()), int32(i))
		}
		conns := 0
		for ms, bucket := range cal.buckets {
			t := time.Duration(ms) * time.Millisecond
			for _, i := range bucket {
				conns++
				b := &backoffs[i]
				b.Opened() // the core's reset-on-open rule (a no-op with a cooldown)
				closeAt := t + cfg.CloseAfter
				if due, ok := b.ResetDue(epoch.Add(t)); ok && !due.After(epoch.Add(closeAt)) {
					b.Reset() // READY long enough: the core's cooldown rule
				}
				cal.at(closeAt+b.Next(rng.Float64()), i)
			}
			cal.buckets[ms] = nil
		}
		return conns
	}
	minutes := cfg.Horizon.Minutes()
	open, ready := run(0), run(cfg.Cooldown)
	return FlapResult{
		Policy:                     np.Name,
		PerMinuteResetOnOpen:       float64(open) / minutes / float64(cfg.Clients),
		PerMinuteResetOnReady:      float64(ready) / minutes / float64(cfg.Clients),
		FleetPerMinuteResetOnOpen:  float64(open) / minutes,
		FleetPerMinuteResetOnReady: float64(ready) / minutes,
	}, nil
}
