//go:build !js

package server

import "time"

// faultHook is where the demo's failure switches (demoFaults:
// demo_switches.go, demo_freeze.go, demo_feed.go) reach into the server.
// The server consults it at these named points only, and only once
// NewDemo has set one: a Server alone has none (nil), so each point costs
// it one atomic load and takes no lock, waits at no gate, arms no timer.
//
// Methods whose name ends in Locked are called with s.mu held.
type faultHook interface {
	// Accept: a new connection.

	// upgradeBlocked: a WebSocket upgrade is refused with 403, before
	// anything else (Block WebSocket).
	upgradeBlocked() bool
	// overloaded: an accepted connection (WebSocket or HTTP session) is
	// closed at once with 1013 and OverloadRetryAfter (Overload).
	overloaded() bool
	// refusingUntilLocked: admission refuses new connections until then
	// (Restart); zero: it does not.
	refusingUntilLocked() time.Time
	// acceptedLocked: c was registered (per-connection effects: Flapping's
	// timer, Deaf's shrunk receive buffer).
	acceptedLocked(c *conn)

	// Read and write.

	// freezeGate holds connections' reads and writes, both ways (Freeze);
	// deafGate holds what clients send (Deaf). Either may be nil.
	freezeGate() *gate
	deafGate() *gate

	// Reply and subscribe.

	// dropsService: requests, subscribes and publishes are ignored
	// (Service down).
	dropsService() bool
	// delaysReplies: replies go SlowReplyDelay late (Slow replies).
	delaysReplies() bool
	// ownsTopic: a client's publish to topic is refused (the feed's).
	ownsTopic(topic string) bool

	// Ping and tickets.

	// jittersPings: each ping goes a random 0 to JitterMax late (Jitter).
	jittersPings() bool
	// shortensTickets: tickets live, and are good for, ShortTicketLife at
	// most (Short tokens).
	shortensTickets() bool

	// Observation and the end.

	// statsLocked fills the demo's part of st (Faults, RestartUntil,
	// FeedSeq).
	statsLocked(st *Stats, now time.Time)
	// lastFeedSeq is the demo feed's last sequence number on this node.
	lastFeedSeq() int64
	// closing: the server is closing; frozen close handshakes must be
	// able to complete.
	closing()
}

// faults returns the fault hook, nil without the demo.
func (s *Server) faults() faultHook {
	if p := s.fx.Load(); p != nil {
		return *p
	}
	return nil
}

// freezeGate is the fault hook's Freeze gate; nil (never held) without one.
func (s *Server) freezeGate() *gate {
	if f := s.faults(); f != nil {
		return f.freezeGate()
	}
	return nil
}

// deafGate is the fault hook's Deaf gate; nil (never held) without one.
func (s *Server) deafGate() *gate {
	if f := s.faults(); f != nil {
		return f.deafGate()
	}
	return nil
}
