//go:build !js

package native

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// HandshakeLimiter spaces the handshakes of every Client that shares it
// (Options.Handshakes): a process that runs many logical sessions against
// one provider (a server-to-server user of the realtime-LLM guide) does
// not send it a thundering herd when the provider restarts. A Client asks
// it for a slot before each dial and gets the earliest instant that is at
// least 1/PerSecond from every other slot granted, and 1/PerTenantPerSecond
// from every other of its tenant's (Options.Tenant): no bursts, and a
// tenant at its own ceiling does not hold the others back. A dial that
// must wait waits for its slot, counted against MaxWaiters; one that would
// exceed it fails at once with ErrHandshakeLimited (a failed attempt: the
// client backs off and tries again, as after any). A waiting dial whose
// socket is given up (the core's connect timeout, the reconnect window,
// Close) stops waiting at once and gives its slot back.
//
// It starts no goroutine and needs no Close. It is safe for concurrent
// use.
type HandshakeLimiter struct {
	every, tenantEvery time.Duration // the spacing: 1/PerSecond, 1/PerTenantPerSecond (0: none)
	maxWaiters         int

	mu      sync.Mutex
	slots   calendar            // the slots granted that still space others
	tenants map[string]calendar // the same, per tenant; at most maxLimiterTenants
	waiters int
}

// calendar is a set of granted slots in time order. It holds the slots
// not yet a spacing in the past, so at most the waiters and the spacing's
// worth of recent grants: bounded by MaxWaiters and the rate.
type calendar []time.Time

// prune drops the slots that can no longer space a slot at or after now.
func (c calendar) prune(now time.Time, every time.Duration) calendar {
	i := 0
	for i < len(c) && !c[i].Add(every).After(now) {
		i++
	}
	if i == len(c) {
		return c[:0]
	}
	return c[i:]
}

// fit returns the earliest instant at or after t at least every from each
// slot of c.
func (c calendar) fit(t time.Time, every time.Duration) time.Time {
	for _, s := range c {
		if !t.Add(every).After(s) {
			return t // fits before s, and after the one before it
		}
		if u := s.Add(every); t.Before(u) {
			t = u
		}
	}
	return t
}

// add inserts slot t in order.
func (c calendar) add(t time.Time) calendar {
	i := len(c)
	for i > 0 && c[i-1].After(t) {
		i--
	}
	c = append(c, time.Time{})
	copy(c[i+1:], c[i:])
	c[i] = t
	return c
}

// remove deletes slot t (one of them, if granted twice: never, spaced).
func (c calendar) remove(t time.Time) calendar {
	for i, s := range c {
		if s.Equal(t) {
			return append(c[:i], c[i+1:]...)
		}
	}
	return c
}

// HandshakeLimits configures a HandshakeLimiter. Zero is a value in each
// field, not "the default".
type HandshakeLimits struct {
	// PerSecond is the most handshakes a second every Client sharing the
	// limiter starts together, spaced evenly. Must be positive (there is
	// no default: it is the provider's capacity, the program's to know).
	PerSecond float64
	// PerTenantPerSecond is the most a second for the Clients of one
	// tenant (Options.Tenant; "" is a tenant too), spaced evenly, within
	// PerSecond. 0: no ceiling per tenant; a negative one is refused.
	PerTenantPerSecond float64
	// MaxWaiters bounds the dials waiting for a slot at once; one more
	// fails at once with ErrHandshakeLimited. 0: none waits (a dial goes
	// only when its slot is free now); a negative one is refused. A
	// process of N sessions that should all come back after a restart
	// wants N.
	MaxWaiters int
}

// lateWake is how late a wait may end and still use its slot (Wait).
const lateWake = 25 * time.Millisecond

// maxLimiterTenants bounds the tenants a HandshakeLimiter keeps a spacing
// for: past it, tenants whose next slot has passed are forgotten, and if
// every one is still spacing, a dial for a new tenant fails with
// ErrHandshakeLimited.
const maxLimiterTenants = 10_000

// ErrHandshakeLimited is a dial's error (WaitReady's NotReadyError.LastDial
// wraps it) when its HandshakeLimiter has MaxWaiters dials waiting
// already, or maxLimiterTenants (10,000) tenants still spacing.
var ErrHandshakeLimited = errors.New("handshake limiter full")

// NewHandshakeLimiter returns a limiter for l, or an *OptionError
// (errors.Is(err, ErrInvalidOptions)) for limits it refuses.
func NewHandshakeLimiter(l HandshakeLimits) (*HandshakeLimiter, error) {
	switch {
	case !(l.PerSecond > 0) || math.IsInf(l.PerSecond, 1):
		return nil, &OptionError{Option: "HandshakeLimits.PerSecond", Err: fmt.Errorf("is %v: want a positive, finite rate per second", l.PerSecond)}
	case !(l.PerTenantPerSecond >= 0) || math.IsInf(l.PerTenantPerSecond, 1):
		return nil, &OptionError{Option: "HandshakeLimits.PerTenantPerSecond", Err: fmt.Errorf("is %v: want a finite rate per second (0: no ceiling per tenant)", l.PerTenantPerSecond)}
	case l.MaxWaiters < 0:
		return nil, &OptionError{Option: "HandshakeLimits.MaxWaiters", Err: fmt.Errorf("is %d: want a count (0: no dial waits)", l.MaxWaiters)}
	}
	hl := &HandshakeLimiter{every: spacing(l.PerSecond), maxWaiters: l.MaxWaiters}
	if l.PerTenantPerSecond > 0 {
		hl.tenantEvery, hl.tenants = spacing(l.PerTenantPerSecond), map[string]calendar{}
	}
	return hl, nil
}

// spacing is the time between two slots at rate per second (at least 1 ns).
func spacing(rate float64) time.Duration {
	return max(time.Duration(float64(time.Second)/rate), 1)
}

// Wait takes a handshake slot for tenant, waiting for it if it is not
// free now. Its errors: ErrHandshakeLimited (wrapped) when it may not
// wait, and ctx's error when ctx ends first (the slot is given back).
// ctx's deadline is honoured before the wait: a slot that would come
// after it is not taken, and Wait fails at once with
// context.DeadlineExceeded: an attempt that cannot start before its
// deadline is not started. A wait that ends more than lateWake (25 ms)
// or one spacing (1/PerSecond) late, whichever is longer (a process
// starved of CPU wakes its timers late, and together), takes a fresh slot
// from then, so late dials do not start in a bunch: in any second at most
// PerSecond*1.025 + 2 start. Clients call it before every dial; a program may call it too, for
// handshakes of its own to the same provider.
func (hl *HandshakeLimiter) Wait(ctx context.Context, tenant string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	hl.mu.Lock()
	at, err := hl.place(now, tenant)
	if err != nil {
		hl.mu.Unlock()
		return err
	}
	wait := at.Sub(now)
	if wait > 0 && hl.waiters >= hl.maxWaiters {
		hl.mu.Unlock()
		return fmt.Errorf("failed to take a handshake slot: %w (%d dials waiting)", ErrHandshakeLimited, hl.maxWaiters)
	}
	if dl, ok := ctx.Deadline(); ok && at.After(dl) {
		hl.mu.Unlock()
		return fmt.Errorf("failed to take a handshake slot: the next is %v away, after the deadline: %w", wait.Round(time.Millisecond), context.DeadlineExceeded)
	}
	hl.take(at, tenant)
	if wait <= 0 {
		hl.mu.Unlock()
		return nil
	}
	hl.waiters++
	hl.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			hl.mu.Lock()
			hl.waiters--
			hl.giveBack(at, tenant)
			hl.mu.Unlock()
			return fmt.Errorf("failed to take a handshake slot: %w", ctx.Err())
		}
		hl.mu.Lock()
		now := time.Now()
		if now.Sub(at) <= max(hl.every, lateWake) {
			hl.waiters--
			hl.mu.Unlock()
			return nil
		}
		// Woken late: this slot has passed; the next free one from now.
		hl.giveBack(at, tenant)
		if at, err = hl.place(now, tenant); err != nil {
			hl.waiters--
			hl.mu.Unlock()
			return err
		}
		hl.take(at, tenant)
		hl.mu.Unlock()
		t.Reset(at.Sub(now)) // 0 or more: fires at once when free now
	}
}

// place returns the earliest slot at or after now that both the global
// and the tenant's calendars allow, taking nothing. Called with mu held.
func (hl *HandshakeLimiter) place(now time.Time, tenant string) (time.Time, error) {
	hl.slots = hl.slots.prune(now, hl.every)
	at := hl.slots.fit(now, hl.every)
	if hl.tenants == nil {
		return at, nil
	}
	tc, known := hl.tenants[tenant]
	if !known && len(hl.tenants) >= maxLimiterTenants {
		hl.forgetIdle(now)
		if len(hl.tenants) >= maxLimiterTenants {
			return time.Time{}, fmt.Errorf("failed to take a handshake slot: %w (%d tenants spacing)", ErrHandshakeLimited, maxLimiterTenants)
		}
	}
	tc = tc.prune(now, hl.tenantEvery)
	if len(tc) == 0 {
		delete(hl.tenants, tenant)
	} else {
		hl.tenants[tenant] = tc
	}
	// Each fit only moves the instant later, so this ends (at the latest
	// past both calendars' last slots).
	for {
		u := hl.slots.fit(tc.fit(at, hl.tenantEvery), hl.every)
		if u.Equal(at) {
			return at, nil
		}
		at = u
	}
}

// take books slot at for tenant. Called with mu held.
func (hl *HandshakeLimiter) take(at time.Time, tenant string) {
	hl.slots = hl.slots.add(at)
	if hl.tenants != nil {
		hl.tenants[tenant] = hl.tenants[tenant].add(at)
	}
}

// giveBack frees slot at of tenant: a later dial may have it. Called with
// mu held.
func (hl *HandshakeLimiter) giveBack(at time.Time, tenant string) {
	hl.slots = hl.slots.remove(at)
	if hl.tenants != nil {
		if tc := hl.tenants[tenant].remove(at); len(tc) == 0 {
			delete(hl.tenants, tenant)
		} else {
			hl.tenants[tenant] = tc
		}
	}
}

// forgetIdle drops the tenants none of whose slots spaces a slot now:
// they would get one now whether remembered or not. Called with mu held.
func (hl *HandshakeLimiter) forgetIdle(now time.Time) {
	for t, tc := range hl.tenants {
		if len(tc.prune(now, hl.tenantEvery)) == 0 {
			delete(hl.tenants, t)
		}
	}
}

// Waiting is the number of dials waiting for a slot now.
func (hl *HandshakeLimiter) Waiting() int {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return hl.waiters
}
