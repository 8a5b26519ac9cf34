package client

import "time"

// Policy chooses the delay before a reconnect attempt. It is pure: attempt
// counts the attempts since the last backoff reset (0 for the first), prev
// is the delay this policy chose for the previous attempt (0 for the first)
// and r is a uniform random number in [0, 1) supplied by the caller.
//
// The simulator (package sim) runs these very values over a fleet, inside
// the core's own Reconnector.
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
