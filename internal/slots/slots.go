// Package slots hands out reconnect slots: the times a server tells the
// clients it is turning away to come back, spread so that their expected
// arrivals stay under its admission rate. The server (package server) and
// the fleet simulator (package sim) both use it, so the simulator's
// prediction is the server's rule. It reads no clock: time comes in.
package slots

import "time"

// Share is the part of the admission rate slots are spread over; the rest
// is headroom for clients that do not honour slots and for jitter.
const Share = 0.9

// Allocator hands out slots Spacing apart. The zero value is not ready:
// use New. It is not safe for concurrent use.
type Allocator struct {
	Spacing time.Duration
	next    time.Time
}

// New returns an Allocator for a server that admits rate handshakes per
// second.
func New(rate float64) *Allocator {
	return &Allocator{Spacing: time.Duration(float64(time.Second) / (Share * rate))}
}

// Take returns the next slot: at least one spacing from now, not before
// notBefore (when the server accepts again), and after every slot already
// handed out.
func (a *Allocator) Take(now, notBefore time.Time) time.Time {
	t := now.Add(a.Spacing)
	if notBefore.After(t) {
		t = notBefore
	}
	if a.next.After(t) {
		t = a.next
	}
	a.next = t.Add(a.Spacing)
	return t
}
