//go:build !js

// Package faults is the seam between the server and the demo's failure
// switches (server/demo): the Hook the server consults at a few named
// points, and the Control the demo acts on the server through. It holds
// interfaces only, so a program that embeds the server without the demo
// links no switch; it is internal so that neither is part of the server's
// public API (an application cannot set a hook, and has no use for one).
package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Hook is what the server asks of the demo's switches, at these named
// points only, and only once Attach has set one: a Server alone has none
// (nil), so each point costs it one atomic load and takes no lock, waits
// at no gate, arms no timer. Every method is called on a connection's or a
// request's path, some with the server's mutex held: each must answer from
// the hook's own state (atomics), without calling back into Control.
type Hook interface {
	// UpgradeBlocked: a WebSocket upgrade is refused with 403, before
	// anything else (Block WebSocket).
	UpgradeBlocked() bool
	// Overloaded: an accepted connection (WebSocket or HTTP session) is
	// closed at once with 1013 and Settings.OverloadRetryAfter (Overload).
	Overloaded() bool
	// RefusingUntil: admission refuses new connections until then
	// (Restart); zero: it does not.
	RefusingUntil() time.Time
	// Flapping: every connection is closed Settings.FlapAfter after it is
	// accepted; asked again when that timer fires.
	Flapping() bool
	// DropsService: requests, subscribes and publishes are ignored
	// (Service down).
	DropsService() bool
	// DelaysReplies: replies go Settings.SlowReplyDelay late (Slow replies).
	DelaysReplies() bool
	// OwnsTopic: a client's publish to topic is refused (the feed's).
	OwnsTopic(topic string) bool
	// JittersPings: each ping goes a random 0 to Settings.JitterMax late
	// (Jitter).
	JittersPings() bool
	// ShortensTickets: tickets live, and are good for,
	// Settings.ShortTicketLife at most (Short tokens).
	ShortensTickets() bool
	// FeedSeq is the demo feed's last seq on this node, 0 before its first
	// update or with NoFeed (the wsready_feed_seq metric).
	FeedSeq() int64
	// Settings are the switches' durations; asked once, when the hook is
	// set.
	Settings() Settings
}

// Settings are the durations the server's side of the switches uses, the
// demo's options (server/demo's Options, defaults filled in).
type Settings struct {
	SlowReplyDelay     time.Duration // how late a reply goes while Slow replies is on
	FlapAfter          time.Duration // how long a connection lives while Flapping is on
	JitterMax          time.Duration // the most a ping is delayed while Jitter is on
	ShortTicketLife    time.Duration // a ticket's life while Short tokens is on
	OverloadRetryAfter time.Duration // the retry-after Overload's closes give
}

// Control is what the demo does to the server. A Server implements it;
// Attach hands it out.
type Control interface {
	// Options is the *server.Options in effect, defaults filled in: a
	// copy (this package cannot name the type: server imports it).
	Options() any
	// SetFrozen holds every connection's reads and writes, both ways, new
	// ones included (Freeze); Frozen reports it.
	SetFrozen(on bool)
	Frozen() bool
	// SetDeaf stops reading what clients send (WebSocket frames, HTTP
	// transport POSTs wait) while the server's own frames go on (Deaf);
	// Deaf reports it.
	SetDeaf(on bool)
	Deaf() bool
	// DropSubscriptions drops every connection's subscriptions with an
	// unsubscribed frame that gives reason.
	DropSubscriptions(reason string)
	// StartFlaps arms the Flapping close on every open connection
	// (Hook.Flapping is asked again when it fires).
	StartFlaps()
	// Restart closes every connection with 1012 and its reconnect slot
	// after until (Hook.RefusingUntil must already say until).
	Restart(until time.Time)
	// CloseAll closes every connection with code and reason.
	CloseAll(code int, reason string)
	// RearmExpiries re-arms every authenticated connection's token expiry
	// (after Hook.ShortensTickets changed).
	RearmExpiries()
	// ResetCounters zeroes the windowed attempt counters and the ticket
	// rejection windows.
	ResetCounters()
	// Revoke refuses user for d on every node (Server.Revoke);
	// ClearRevocations lifts every revocation on every node; both end
	// with ctx or when the server closes. Revoked counts the users refused
	// at now (without the server's mutex).
	Revoke(ctx context.Context, user string, d time.Duration) error
	ClearRevocations(ctx context.Context) error
	Revoked(now time.Time) int
	// ValidClientID reports whether id is one the ticket endpoint issues
	// tickets for.
	ValidClientID(id string) bool
	// CreateTopic makes topic exist in the History; Append stores data on
	// it (as the backend's own update) and returns its seq. Both are
	// bounded by Options.HistoryTimeout.
	CreateTopic(ctx context.Context, topic string) error
	Append(ctx context.Context, topic string, data []byte) (int64, error)
	// AddMethod adds a request method unless the application has one of
	// that name.
	AddMethod(name string, fn func(ctx context.Context, params json.RawMessage) (any, error))
	// Go runs fn in a goroutine the server's Close stops (through ctx) and
	// waits for; false (fn not run) once the server is closed.
	Go(fn func(ctx context.Context)) bool
	// Guard is the server's guard for a plain HTTP handler serving
	// methods (Host, Origin, content type, deadlines); HostGuard the Host
	// check alone; Drain the POST that runs a drain and accepts again
	// after it; WriteJSON answers code with v as JSON.
	Guard(h http.Handler, methods ...string) http.Handler
	HostGuard(h http.Handler) http.Handler
	Drain() http.HandlerFunc
	WriteJSON(w http.ResponseWriter, code int, v any)
}

// Attach sets the fault hook of the server srv (a *server.Server) that
// make returns, once: make gets the server's Control and is called the
// first time only; every call returns the hook that was set. It is set by
// package server's init, so it is never nil where the server is linked.
var Attach func(srv any, make func(Control) Hook) Hook
