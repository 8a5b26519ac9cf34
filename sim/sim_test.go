package sim

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

func runAll(t *testing.T, cfg Config) []Result {
	t.Helper()
	var out []Result
	for _, p := range Policies(DefaultPolicyParams()) {
		r, err := Run(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestAcceptedNeverExceedCapacityAndClientsAddUp(t *testing.T) {
	cfg := Config{Clients: 5000, Capacity: 300, Downtime: 5 * time.Second, Horizon: 60 * time.Second, Seed: 7}
	for _, r := range runAll(t, cfg) {
		accepted := 0
		for s, n := range r.AcceptedPerSecond {
			if n > cfg.Capacity {
				t.Fatalf("%s: %d accepted in second %d, capacity %d", r.Policy, n, s, cfg.Capacity)
			}
			if time.Duration(s)*time.Second < cfg.Downtime && n > 0 {
				t.Fatalf("%s: accepted during the downtime", r.Policy)
			}
			accepted += n
		}
		unconnected := cfg.Clients - r.ConnectedAtHorizon
		if accepted != r.ConnectedAtHorizon || unconnected < 0 || r.ConnectedAtHorizon+unconnected != cfg.Clients {
			t.Fatalf("%s: accepted %d connected %d", r.Policy, accepted, r.ConnectedAtHorizon)
		}
		if r.Attempts != r.Rejected+r.ConnectedAtHorizon {
			t.Fatalf("%s: attempts %d != rejected %d + connected %d", r.Policy, r.Attempts, r.Rejected, r.ConnectedAtHorizon)
		}
		if last := r.ConnectedPerSecond[len(r.ConnectedPerSecond)-1]; last != r.ConnectedAtHorizon {
			t.Fatalf("%s: connected series ends at %d, not %d", r.Policy, last, r.ConnectedAtHorizon)
		}
	}
}

// Ten clients, capacity 3, downtime 2 s, fixed 1 s: everyone tries at 1 s
// (refused), then 3 get in at 2 s, 3 at 3 s, 3 at 4 s and the last at 5 s.
func TestFixedPolicyMatchesAHandCalculation(t *testing.T) {
	r, err := Run(Config{Clients: 10, Capacity: 3, Downtime: 2 * time.Second, Horizon: 10 * time.Second, Seed: 1},
		NamedPolicy{"fixed", Policies(DefaultPolicyParams())[0].Policy})
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 10+10+7+4+1 || r.Rejected != 22 || r.ConnectedAtHorizon != 10 {
		t.Fatalf("attempts %d rejected %d connected %d", r.Attempts, r.Rejected, r.ConnectedAtHorizon)
	}
	if r.T100Ms == nil || *r.T100Ms != 5000 || r.T99Ms == nil || *r.T99Ms != 5000 {
		t.Fatalf("t99 %v t100 %v", r.T99Ms, r.T100Ms)
	}
	want := []int{0, 10, 10, 7, 4, 1, 0, 0, 0, 0}
	if !reflect.DeepEqual(r.AttemptsPerSecond, want) {
		t.Fatalf("per second %v, want %v", r.AttemptsPerSecond, want)
	}
}

// Without jitter, exponential clients all wait in lockstep: attempts land
// only at 1, 3, 7, 15, 31 and 63 s, and no second in between sees one.
func TestExponentialAttemptsOnlyWhenItShould(t *testing.T) {
	p, _ := PolicyByName("exponential", DefaultPolicyParams())
	r, err := Run(Config{Clients: 100, Capacity: 1, Downtime: time.Hour, Horizon: 90 * time.Second}, p)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[int]bool{1: true, 3: true, 7: true, 15: true, 31: true, 61: true}
	for s, n := range r.AttemptsPerSecond {
		if n > 0 && !allowed[s] {
			t.Fatalf("attempts at second %d (%v)", s, r.AttemptsPerSecond)
		}
		if allowed[s] && n != 100 {
			t.Fatalf("second %d: %d attempts, want all 100", s, n)
		}
	}
	if r.ConnectedAtHorizon != 0 || r.T100Ms != nil {
		t.Fatal("connected while the server was down")
	}
}

func TestFullJitterSpreadsTheFirstWaveWithinOneSecond(t *testing.T) {
	p, _ := PolicyByName("jitter", DefaultPolicyParams())
	// A one-second horizon sees every client's first attempt (delay(0) is in
	// [0, 1s)) and, for those whose second delay was short, a second one.
	r, err := Run(Config{Clients: 1000, Capacity: 1, Downtime: time.Hour, Horizon: time.Second, Seed: 3}, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.AttemptsPerSecond[0] < 1000 || r.Attempts != r.AttemptsPerSecond[0] {
		t.Fatalf("first wave: %v", r.AttemptsPerSecond)
	}
	// The expected share with a second attempt inside the first second is
	// P(U1 + 2*U2 < 1) = 1/4; allow wide sampling noise.
	if extra := r.Attempts - 1000; extra < 150 || extra > 350 {
		t.Fatalf("%d second attempts in the first second, expected about 250", extra)
	}
}

func TestSameSeedSameFiguresOtherSeedOtherFigures(t *testing.T) {
	p, _ := PolicyByName("jitter", DefaultPolicyParams())
	cfg := DefaultConfig()
	cfg.Clients, cfg.Capacity, cfg.Seed = 2000, 100, 42
	a, _ := Run(cfg, p)
	b, _ := Run(cfg, p)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different results")
	}
	cfg.Seed = 43
	c, _ := Run(cfg, p)
	if reflect.DeepEqual(a.AttemptsPerSecond, c.AttemptsPerSecond) {
		t.Fatal("the seed does not matter")
	}
}

func TestBadConfigIsAnError(t *testing.T) {
	p, _ := PolicyByName("fixed", DefaultPolicyParams())
	for _, cfg := range []Config{{Clients: -1, Horizon: time.Second}, {Clients: 0, Horizon: time.Second}, {Clients: 1, Capacity: -5, Horizon: time.Second},
		{Clients: 1, Downtime: -time.Second, Horizon: time.Second}, {Clients: 1, Horizon: -time.Second}, {Clients: 1, Horizon: 25 * time.Hour}} {
		if _, err := Run(cfg, p); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	for _, tweak := range []func(*PolicyParams){
		func(p *PolicyParams) { p.Base = 0 }, func(p *PolicyParams) { p.Fixed = 0 }, func(p *PolicyParams) { p.Step = 0 },
		func(p *PolicyParams) { p.Cap = p.Base / 2 }, func(p *PolicyParams) { p.LinearCap = -1 },
	} {
		pp := DefaultPolicyParams()
		tweak(&pp)
		if pp.Validate() == nil {
			t.Errorf("%+v accepted", pp)
		}
	}
	if _, ok := PolicyByName("nope", DefaultPolicyParams()); ok {
		t.Fatal("unknown policy found")
	}
	for _, fc := range []FlapConfig{{Clients: 0, Horizon: time.Minute, Cooldown: time.Second}, {Clients: 1, Horizon: time.Minute}, {Clients: 1, Horizon: time.Minute, Cooldown: time.Second, CloseAfter: -1}} {
		if _, err := RunFlap(fc, p); err == nil {
			t.Errorf("%+v accepted", fc)
		}
	}
}

// Zero is a value: no downtime means the server accepts from the first
// millisecond, not the default 10 s.
func TestZeroDowntimeMeansNoDowntime(t *testing.T) {
	p, _ := PolicyByName("fixed", DefaultPolicyParams())
	cfg := DefaultConfig()
	cfg.Clients, cfg.Capacity, cfg.Downtime = 100, 1000, 0
	r, err := Run(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 100 || r.T100Ms == nil || *r.T100Ms != 1000 {
		t.Fatalf("attempts %d, all connected at %v ms; want 100 attempts, all in at 1000 ms", r.Attempts, r.T100Ms)
	}
}

// Every client is accounted for: connected, or waiting for an attempt past
// the horizon; none is lost when its next attempt lands in the millisecond
// being processed (full jitter draws such delays; fixed 1 ms forces them).
func TestEveryClientIsConnectedOrWaiting(t *testing.T) {
	fast := DefaultPolicyParams()
	fast.Fixed = time.Millisecond
	for _, run := range []struct {
		cfg Config
		pp  PolicyParams
	}{
		{DefaultConfig(), DefaultPolicyParams()},
		{Config{Clients: 300, Capacity: 50, Downtime: 2 * time.Second, Horizon: 8 * time.Second, Seed: 9}, fast},
	} {
		cfg := run.cfg
		for _, np := range Policies(run.pp) {
			r, err := Run(cfg, np)
			if err != nil {
				t.Fatal(err)
			}
			if r.ConnectedAtHorizon+r.WaitingAtHorizon != cfg.Clients {
				t.Errorf("%s %+v: connected %d + waiting %d != %d clients", np.Name, cfg, r.ConnectedAtHorizon, r.WaitingAtHorizon, cfg.Clients)
			}
			if r.Attempts != r.Rejected+r.ConnectedAtHorizon {
				t.Errorf("%s: attempts %d != rejected %d + connected %d", np.Name, r.Attempts, r.Rejected, r.ConnectedAtHorizon)
			}
			sum := 0
			for _, n := range r.AttemptsPerSecond {
				sum += n
			}
			if sum != r.Attempts {
				t.Errorf("%s: per-second attempts add to %d, not %d", np.Name, sum, r.Attempts)
			}
		}
	}
}

// Fixed and exponential take their own parameters: fixed 1 s beside an
// exponential from 500 ms.
func TestEachPolicyHasItsOwnParameters(t *testing.T) {
	pp := PolicyParams{Fixed: time.Second, Base: 500 * time.Millisecond, Cap: 4 * time.Second, Step: 250 * time.Millisecond, LinearCap: time.Second}
	if err := pp.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []string{"fixed(1s)", "exponential(base 500ms, cap 4s)", "random-start-linear(step 250ms, cap 1s)", "full-jitter(base 500ms, cap 4s)"}
	for i, np := range Policies(pp) {
		if got := np.Policy.String(); got != want[i] {
			t.Errorf("%s: %s, want %s", np.Name, got, want[i])
		}
	}
}

// Under Flapping a fixed policy reconnects every 1.3 s whatever the reset
// rule: first at 1 s, then 1 + 1.3k up to 600 s, so 461 per 10 minutes.
func TestFlapFixedPolicyClosedForm(t *testing.T) {
	p, _ := PolicyByName("fixed", DefaultPolicyParams())
	r, err := RunFlap(FlapConfig{Clients: 10, Horizon: 10 * time.Minute, CloseAfter: 300 * time.Millisecond, Cooldown: 5 * time.Second}, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.PerMinuteResetOnOpen != 46.1 || r.PerMinuteResetOnReady != 46.1 {
		t.Fatalf("%+v", r)
	}
}

// Resetting on open keeps exponential at its base delay forever; resetting
// only after 5 s of READY lets it back off to the cap.
func TestFlapResetAfterReadinessCutsExponential(t *testing.T) {
	p, _ := PolicyByName("exponential", DefaultPolicyParams())
	r, err := RunFlap(FlapConfig{Clients: 10, Horizon: 10 * time.Minute, CloseAfter: 300 * time.Millisecond, Cooldown: 5 * time.Second}, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.PerMinuteResetOnOpen != 46.1 {
		t.Fatalf("reset on open: %v", r.PerMinuteResetOnOpen)
	}
	if r.PerMinuteResetOnReady > 3 {
		t.Fatalf("reset after readiness: %v per minute", r.PerMinuteResetOnReady)
	}
}

func BenchmarkRun100k(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Clients, cfg.Capacity = 100_000, 5000
	for b.Loop() {
		for _, p := range Policies(DefaultPolicyParams()) {
			if _, err := Run(cfg, p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Stage 6 clients honour the server's retry-after and give up after their
// budget; stage 5 clients ignore both. Every client is accounted for.
func TestStage6FleetHonoursRetryAfterAndBudget(t *testing.T) {
	np, _ := PolicyByName("jitter", DefaultPolicyParams())
	base := DefaultConfig()
	plain, _ := Run(base, np)
	ignored := base
	ignored.RetryAfter = 5 * time.Second // stage 5 clients do not read it
	same, _ := Run(ignored, np)
	if !reflect.DeepEqual(plain, same) {
		t.Fatal("a retry-after changed what stage 5 clients did")
	}
	s6 := base
	s6.Session, s6.RetryAfter = true, 5*time.Second
	ra, err := Run(s6, np)
	if err != nil {
		t.Fatal(err)
	}
	// Every refused client waits at least 5 s: no second after the first
	// refusals can see more attempts than clients refused 5 s before.
	if ra.Attempts >= plain.Attempts || ra.ConnectedAtHorizon+ra.WaitingAtHorizon != base.Clients {
		t.Fatalf("retry-after: attempts %d (plain %d), connected %d waiting %d", ra.Attempts, plain.Attempts, ra.ConnectedAtHorizon, ra.WaitingAtHorizon)
	}
	for s := 1; s < 5; s++ {
		if ra.AttemptsPerSecond[s] != 0 {
			t.Fatalf("attempts in second %d, within 5 s of every client's first refusal: %v", s, ra.AttemptsPerSecond[:8])
		}
	}
	s6.RetryAfter, s6.Budget = 0, 3
	bu, _ := Run(s6, np)
	if bu.GaveUp == 0 || bu.ConnectedAtHorizon+bu.WaitingAtHorizon+bu.GaveUp != base.Clients || bu.Attempts > base.Clients*4 {
		t.Fatalf("budget 3: %+v", bu)
	}
}

// Runs reuse the fleet and the calendar of the runs before (a pool): a
// run after a larger fleet, a longer horizon and far attempts gives the
// figures of a run with fresh memory.
func TestReusedMemoryGivesTheFiguresOfFreshMemory(t *testing.T) {
	np, _ := PolicyByName("jitter", DefaultPolicyParams())
	small := Config{Clients: 700, Capacity: 40, Downtime: 3 * time.Second, Horizon: 40 * time.Second, Seed: 5}
	scratchPool = sync.Pool{}
	fresh, err := Run(small, np)
	if err != nil {
		t.Fatal(err)
	}
	// A bigger run whose delays pass the wheel's range, stopped by its
	// horizon with attempts still pending, leaves its memory to the pool.
	far, _ := PolicyByName("exponential", PolicyParams{Fixed: time.Second, Base: time.Second, Cap: 5 * time.Minute, Step: time.Second})
	if _, err := Run(Config{Clients: 3000, Capacity: 10, Horizon: 7 * time.Minute, Seed: 1}, far); err != nil {
		t.Fatal(err)
	}
	again, err := Run(small, np)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh, again) {
		t.Fatal("a run on reused memory differs from one on fresh memory")
	}
}

// RunBytes bounds what a run holds: the fleet, the calendar and the figures.
func TestRunBytesCoversTheFleetAndTheCalendar(t *testing.T) {
	if got, min := RunBytes(100_000, 20*time.Minute), int64(100_000*(40+4))+8*wheelSlots; got < min || got > 2*min {
		t.Fatalf("RunBytes(100000, 20m) = %d, want between %d and %d", got, min, 2*min)
	}
}

// The published Python model's scenario (fleet_model.py: 100,000 clients,
// 5,000 handshakes a second, no downtime, base 1 s, cap 60 s, seed 7, to
// completion), one policy at a time.
func BenchmarkModelScenario(b *testing.B) {
	cfg := Config{Clients: 100_000, Capacity: 5000, Horizon: 20 * time.Minute, Seed: 7}
	for _, np := range Policies(PolicyParams{Fixed: time.Second, Base: time.Second, Cap: time.Minute, Step: time.Second}) {
		b.Run(np.Name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(cfg, np); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
