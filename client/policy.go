package client

import (
	"strconv"
	"time"
)

// Policy chooses the delay before a reconnect attempt. It is pure: attempt
// counts the attempts since the last backoff reset (0 for the first), prev
// is the delay this policy chose for the previous attempt (0 for the first)
// and r is a uniform random number in [0, 1) supplied by the caller.
//
// The simulator (package sim) runs these very values over a fleet.
type Policy interface {
	Delay(attempt int, prev time.Duration, r float64) time.Duration
	String() string
}

// Fixed waits D every time.
type Fixed struct{ D time.Duration }

func (p Fixed) Delay(int, time.Duration, float64) time.Duration { return p.D }
func (p Fixed) String() string                                  { return "fixed(" + p.D.String() + ")" }

// Exponential waits min(Cap, Base * 2^attempt), with no jitter.
type Exponential struct{ Base, Cap time.Duration }

func (p Exponential) Delay(attempt int, _ time.Duration, _ float64) time.Duration {
	return expCap(p.Base, p.Cap, attempt)
}

// WithCap returns p with another cap (the cap growth of stage 6).
func (p Exponential) WithCap(c time.Duration) Policy { p.Cap = max(c, p.Cap); return p }

func (p Exponential) String() string {
	return "exponential(base " + p.Base.String() + ", cap " + p.Cap.String() + ")"
}

// FullJitter waits a uniform random time in [0, min(Cap, Base * 2^attempt)).
type FullJitter struct{ Base, Cap time.Duration }

func (p FullJitter) Delay(attempt int, _ time.Duration, r float64) time.Duration {
	return time.Duration(r * float64(expCap(p.Base, p.Cap, attempt)))
}

// WithCap returns p with another cap (the cap growth of stage 6).
func (p FullJitter) WithCap(c time.Duration) Policy { p.Cap = max(c, p.Cap); return p }

func (p FullJitter) String() string {
	return "full-jitter(base " + p.Base.String() + ", cap " + p.Cap.String() + ")"
}

// RandomStartLinear waits a uniform random time in [0, Step) the first
// time, then Step longer than the time before, up to Cap (0: no cap).
type RandomStartLinear struct{ Step, Cap time.Duration }

func (p RandomStartLinear) Delay(attempt int, prev time.Duration, r float64) time.Duration {
	d := time.Duration(r * float64(p.Step))
	if attempt > 0 {
		d = prev + p.Step
	}
	if p.Cap > 0 && d > p.Cap {
		d = p.Cap
	}
	return d
}
func (p RandomStartLinear) String() string {
	s := "random-start-linear(step " + p.Step.String()
	if p.Cap > 0 {
		s += ", cap " + p.Cap.String()
	}
	return s + ")"
}

// expCap returns min(cap, base * 2^attempt) without overflowing.
func expCap(base, cap time.Duration, attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	d := base
	for i := 0; i < attempt; i++ {
		if d >= cap/2+1 {
			return cap
		}
		d *= 2
	}
	if d > cap {
		return cap
	}
	return d
}

// Backoff applies a Policy across attempts and owns the reset rule. The
// core uses one per client; the simulator uses one per simulated client.
type Backoff struct {
	Policy Policy
	// Cooldown is the reset rule: 0 resets the backoff when a socket opens;
	// a positive value resets it only after that long of continuous READY.
	Cooldown time.Duration

	attempt int
	prev    time.Duration
}

// Next returns the delay before the next attempt and counts the attempt.
func (b *Backoff) Next(r float64) time.Duration {
	d := b.Policy.Delay(b.attempt, b.prev, r)
	if d < 0 {
		d = 0
	}
	b.attempt++
	b.prev = d
	return d
}

// Attempt is the number of attempts since the last reset.
func (b *Backoff) Attempt() int { return b.attempt }

// Reset starts the policy over.
func (b *Backoff) Reset() { b.attempt, b.prev = 0, 0 }

// Opened applies the reset rule for a socket that opened: it resets the
// backoff only when Cooldown is 0.
func (b *Backoff) Opened() {
	if b.Cooldown == 0 {
		b.Reset()
	}
}

// ResetDue returns when the backoff resets for a client READY since
// readySince, and false when the rule does not wait for readiness.
func (b *Backoff) ResetDue(readySince time.Time) (time.Time, bool) {
	if b.Cooldown == 0 {
		return time.Time{}, false
	}
	return readySince.Add(b.Cooldown), true
}

func (b *Backoff) String() string {
	rule := "reset on open"
	if b.Cooldown > 0 {
		rule = "reset after " + b.Cooldown.String() + " ready"
	}
	return b.Policy.String() + ", " + rule + ", attempt " + strconv.Itoa(b.attempt)
}
