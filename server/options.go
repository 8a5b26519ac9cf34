//go:build !js

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Options configures a Server. A nil *Options means all defaults.
//
// Every duration, count and rate below means its default when it is 0 (the
// default is given with each field, with its unit); a negative one, or a
// value a field's doc rules out, makes New fail with an error that names
// the field. The wsready command's flags refuse the zeros that would mean
// nothing.
type Options struct {
	// PingInterval is how often the server pings each connection; the first
	// ping goes out at once, and a client's watchdog follows the interval
	// each ping announces. Default 25s, production heartbeats (as wsready
	// serve's -ping, centrifuge's and socket.io's): each ping wakes every
	// idle connection. The demo runs at 1s so a dead link shows within
	// seconds.
	PingInterval time.Duration

	// Demo turns on the demo's control surface over HTTP: a Demo's POST
	// /api/faults (the failure switches), /api/reset and /api/drain, the
	// remote addresses and per-id rejections in Stats, and TicketHandler.
	// Off by default: a server anyone can reach must not be freezable by
	// anyone. The demo's own settings (its feed, the switches' durations)
	// are server/demo's Options.
	Demo bool
	// AllowedHosts are host names (without port) a request's Host header
	// may carry besides localhost, 127.0.0.1 and ::1, which are always
	// allowed: they add to those, as wsready serve's -hosts does. A Host
	// not allowed is refused with 421, which also defeats DNS rebinding.
	// "*" allows any host. Default none (loopback names only).
	AllowedHosts []string
	// OriginPatterns lists extra origins (host patterns, as in
	// websocket.AcceptOptions) allowed to open a WebSocket or to send a
	// state-changing API request. Same-origin requests are always allowed.
	// Default none.
	OriginPatterns []string

	// MaxConns caps open WebSocket connections (and handshakes in
	// progress); beyond it a handshake is refused with 503 and Retry-After.
	// Default 10000.
	MaxConns int
	// MaxConnsPerIP caps them per client address (see TrustedProxies).
	// Default 256.
	MaxConnsPerIP int
	// TrustedProxies are the networks of the reverse proxies in front of
	// the server. When a request's TCP peer is in one of them, its client
	// address (for MaxConnsPerIP, TenantRate, TicketRate and the
	// bad-token backstop) is read from X-Forwarded-For or Forwarded
	// (RFC 7239 for=): the rightmost address that is not itself a trusted
	// proxy. From any other peer the headers are ignored; a malformed
	// header, or the two headers naming different clients, count as the
	// peer's own address (proxy.go). Default none: every limit keys by
	// the TCP peer, so behind one proxy every client shares its limits.
	TrustedProxies []netip.Prefix
	// MaxQueuedBytes bounds the bytes queued for one connection, in flight
	// included; a connection whose feed would pass it is closed with 4429.
	// Replies wait for room instead (the connection's reads pause), so a
	// client that pipelines requests is slowed, not closed. Default 1 MiB.
	MaxQueuedBytes int
	// WriteTimeout is how long one write to a connection's socket may make
	// no progress before the connection is closed (a stalled reader; time
	// spent frozen by the Freeze switch does not count). Default 10s.
	WriteTimeout time.Duration
	// MessageTimeout is how long a message may take from its first byte to
	// its last; a fragment started and never finished closes the
	// connection. Default 10s.
	MessageTimeout time.Duration
	// MaxPendingReplies caps the delayed replies (Slow replies) one
	// connection may have waiting; a request beyond it is answered at once
	// with error too_many_pending. Default 64.
	MaxPendingReplies int

	// AdmitRate and AdmitBurst are the fleet-wide handshake ceiling
	// (admission.go), in handshakes per second. Default 500/s, burst 100.
	// Reconnect slots are spread at 90% of AdmitRate.
	AdmitRate  float64
	AdmitBurst int
	// TenantRate and TenantBurst are the handshake ceiling per client
	// address (see TrustedProxies). Default 20/s, burst 40.
	TenantRate  float64
	TenantBurst int
	// MaxConnsPerTenant caps the connections of one tenant
	// (Identity.Tenant, known once a connection's token verified) on this
	// node; one more is closed with 1013 and "retry-after-ms=N" (at least
	// 1s, a reconnect slot), which the client waits out (tenants.go).
	// Connections without a tenant are not counted. Default 0: no
	// ceiling.
	MaxConnsPerTenant int
	// TenantMsgRate and TenantMsgBurst cap the subscribe, publish and
	// request frames one tenant's connections send on this node, per
	// second (a token bucket); beyond them a request or publish is
	// answered with rate_limited and retryAfterMs, a subscribe with an
	// error frame, and the connection stays (probes, auth and unsubscribe
	// frames are exempt). Default 0: no ceiling; TenantMsgBurst defaults
	// to one second's worth (TenantMsgRate rounded up) and needs a rate.
	TenantMsgRate  float64
	TenantMsgBurst int
	// TenantHandshakeRate and TenantHandshakeBurst are the handshake
	// ceiling per tenant (Identity.Tenant) on this node, a token bucket per
	// tenant (tenants.go): checked before the upgrade when Identify names
	// the tenant from the request (its cookie or header), else once the
	// connection's token names it, where MaxConnsPerTenant is. Over it a
	// handshake is refused as a tenant at MaxConnsPerTenant is: 1013 and
	// "retry-after-ms=N" (before the upgrade, as RefuseWith says: 503 with
	// Retry-After over HTTP), N the tenant's next token, spread as a
	// reconnect slot at the tenant's rate. Default 0: no ceiling. With a
	// rate, TenantHandshakeBurst must be at least 1 (a bucket of 0 admits
	// nothing); a burst without a rate is refused.
	TenantHandshakeRate  float64
	TenantHandshakeBurst int
	// ProbeKey, when set, lets a request carrying it in the X-Wsready-Probe
	// header through on a reserved limiter of ProbeRate (default 5/s)
	// instead of the fleet's, so an operator's probe gets in during a storm.
	ProbeKey  string
	ProbeRate float64
	// NoSlots turns reconnect slots off: refusals, Restart and drains then
	// carry no retry-after (to compare, as make storm does). Default: slots.
	NoSlots bool
	// RefuseWith is how a refused handshake is answered: RefuseClose (the
	// default: accept and close at once with 1013 and "retry-after-ms=N",
	// which browsers can read) or RefuseHTTP (503 or 429 with Retry-After).
	RefuseWith RefuseMode
	// SweepInterval and SweepGrace are the liveness sweep (sweep.go): one
	// ticker, every SweepInterval, sends a WebSocket ping to each
	// connection from which no frame (a message, a pong) was read since
	// the previous tick, and closes one that neither answers nor sends
	// anything within one interval plus the grace. Browsers answer these
	// pings themselves. A peer that goes silent is closed 2 to 3 intervals
	// plus the grace after the last frame read from it (25 to 35 s at the
	// defaults; up to another grace if the grace is not shorter than the
	// interval); a connection that never sends is pinged at the first tick
	// after it is served, and a live one that only answers pings is pinged
	// every other tick. Default 10s and 5s (0: the default).
	SweepInterval time.Duration
	SweepGrace    time.Duration
	// DrainWindow is how long a drain (drain.go) spreads its closes over.
	// Default 10s.
	DrainWindow time.Duration

	// MaxSendPOSTs caps the POST <mount>/send requests one HTTP-transport
	// session may have in progress at once (waiting, reading or handing
	// over their frames); one more is answered 429 with Retry-After (1 s),
	// its body dropped as it comes, never held. The client sends one at a
	// time. Default 2 (0: the default; there is no "unbounded").
	MaxSendPOSTs int
	// MaxSendBytes caps the bytes of POST <mount>/send bodies this node
	// reads and holds at once, all sessions together (a body counts its
	// Content-Length, or 1 MiB when it has none, from before it is read
	// until its frames are handed over); a POST that would pass it is
	// answered 429 with Retry-After (1 s), its body dropped unheld. At
	// least 1 MiB (one full body). Default 8 MiB (0: the default), which
	// keeps a flood of 1 MiB POSTs within tens of MB of idle.
	MaxSendBytes int
	// HTTPAttachTimeout is how long a new HTTP-transport session waits for
	// its first stream (GET <mount>/sse) before it is dropped and gives
	// back its place under MaxConns and MaxConnsPerIP; capped by the
	// detach limit (two ping intervals plus SweepGrace) that applies once
	// a stream has come. Default 5s (0: the default).
	HTTPAttachTimeout time.Duration

	// Auth is whether the server asks for tokens (auth_connect.go). Default
	// AuthRequired with Authenticate, JWT or Identify set, else AuthOff;
	// AuthOff with Authenticate or JWT set is refused (nothing would check
	// the tokens they make good), with Identify alone it is allowed (its
	// users are named, the others anonymous).
	Auth AuthMode
	// Authenticate says who is asking for a ticket (auth_tickets.go): it turns
	// the application's own request to TicketHandler (its cookie, session
	// or bearer token) into an Identity, which the ticket carries and the
	// connection that sends it gets. An error answers 401 and issues
	// nothing (an *Error's code and message reach the caller; any other
	// error's text does not). An Identity without a user or out of its
	// bounds is the application's mistake: logged, and answered 500. With
	// the hook set, TicketHandler is on whatever Demo and IssueTickets
	// say. It may be called concurrently. Default nil: TicketHandler is
	// on only with Demo or IssueTickets, for any posted client id.
	Authenticate func(r *http.Request) (Identity, error)
	// Identify says who is connecting from the connection's own request:
	// the WebSocket upgrade, or the HTTP transport's session request
	// (POST <mount>/session), with the application's cookie or header.
	// It is called after the Host and Origin checks and admission, on
	// the request's goroutine, possibly concurrently: keep it fast. An
	// Identity with a user is the connection's, served at once whatever
	// Auth says (no token needed), without expiry: end it with Disconnect
	// or Revoke at sign-out. The zero Identity and nil name no one, and
	// Auth decides as without the hook (AuthRequired: a token in the
	// first frame, a ticket for a page of another origin whose requests
	// carry no cookie; AuthOptional: a token or anonymous; AuthOff:
	// anonymous). An error refuses the connection with 4003 (the HTTP
	// transport: 403 and that close), its reason an *Error's message cut
	// to 123 bytes, or "forbidden" for any other error (whose text the
	// client never sees); a revoked user is refused the same way. An
	// Identity out of its bounds is the application's mistake: logged,
	// and closed 1011. A first-frame token on a connection it named must
	// name the same user (else 4003) and only adds its expiry. Default
	// nil.
	Identify func(r *http.Request) (Identity, error)
	// JWT lets connections authenticate with JWTs from the application's
	// identity provider instead of (or besides) our tickets (auth_jwt.go): sub
	// is the Identity's User, exp drives the 4001 refresh as a ticket's
	// expiry does. New fails if its keys cannot be read. Default nil:
	// tickets only.
	JWT *JWTOptions
	// AuthKey signs tickets (HMAC-SHA256). Default: 32 random bytes made at
	// start (tickets then die with the process).
	AuthKey []byte
	// TicketLife is how long a ticket from TicketHandler (or IssueTicket)
	// lives. Default 10m.
	TicketLife time.Duration
	// IssueTickets turns TicketHandler on outside Demo mode without an
	// Authenticate hook. It hands a ticket for any client id to anyone who
	// can reach the server (so AuthRequired then stops nobody): off by
	// default, when it answers 403; on with Demo. In production the
	// application says who the caller is (Authenticate) or issues the
	// tickets itself (Server.IssueTicket).
	IssueTickets bool
	// TicketRate and TicketBurst limit TicketHandler per remote address
	// (an IPv6 /64 is one address), whatever turned it on: beyond them it
	// answers 429 with Retry-After. At most 10,000 addresses are tracked
	// (a bucket that has refilled is forgotten; with 10,000 live ones a new
	// address gets 429). Default 5/s, burst 20: a page fetches one ticket
	// per lifetime, and wsready storm's clients use none.
	TicketRate  float64
	TicketBurst int
	// AuthTimeout is how long AuthRequired waits for the auth frame before
	// closing with 4003. Default 10s.
	AuthTimeout time.Duration
	// RejectionThreshold and RejectionWindow are the backstop for a looping
	// client: a client id whose tickets (signed by us, refused as revoked
	// or expired) from one address were rejected more than
	// RejectionThreshold times within RejectionWindow has its next refused
	// ones from that address closed with 4003 at once; a valid ticket is
	// never refused by it. Default 20 in 5m. At most 10,000 client ids
	// (per address) are tracked.
	RejectionThreshold int
	RejectionWindow    time.Duration
	// BadTicketThreshold is the backstop for tickets we did not sign
	// (garbage, forged, another key's), counted per remote address (an
	// IPv6 /64 is one), never against the client id they name: an address
	// that sent more than BadTicketThreshold of them within
	// RejectionWindow has its next ones closed with 4003 "too many
	// rejected tickets" without more accounting. Valid tickets from that
	// address are still accepted. Default 20. At most 10,000 addresses
	// are tracked.
	BadTicketThreshold int

	// ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes harden the HTTP
	// server HTTPServer returns: a request's headers must arrive within
	// ReadHeaderTimeout (default 10s); an idle keep-alive connection is
	// closed after IdleTimeout (default 60s); headers are limited to
	// MaxHeaderBytes (default 16 KiB). RequestTimeout (default 30s) is how
	// long a request to one of the plain HTTP handlers (all but Handler)
	// may take to be read and answered.
	ReadHeaderTimeout time.Duration
	RequestTimeout    time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int

	// Authorize decides whether a connection's identity may subscribe,
	// call a method or read presence (auth_permissions.go); a non-nil error
	// refuses that one call with code forbidden (or the code of an
	// *Error). It is never asked about publishes: AuthorizePublish is.
	// nil: subscribe, presence and requests are allowed. It runs on the
	// connection's goroutine: keep it fast.
	Authorize func(ctx context.Context, id Identity, a Action) error
	// AuthorizePublish decides whether a connection's identity may publish
	// to a.Topic (a.Kind is ActPublish), as Authorize does for the other
	// actions. A publish passes only with Publish on and, when either hook
	// is set, this one's nil: with Authorize set and this one nil every
	// publish is refused (forbidden), so a hook written for subscribes
	// never lets a client publish. With Publish on and neither hook, any
	// client may publish to any topic (wsready serve -publish). The same
	// function may serve both fields when it names each kind. New refuses
	// it without Publish (it would never be asked). Default nil.
	AuthorizePublish func(ctx context.Context, id Identity, a Action) error

	// Methods are the application's request methods, by name: a request
	// frame naming one runs it (requests.go). A name must not be empty nor
	// start with protocol.ReservedMethodPrefix ("wsready.", the library's
	// own), and a Method must not be nil: New refuses them. Default none:
	// every request gets unknown_method. The map is copied by New.
	Methods map[string]Method
	// MaxRequestTimeout caps a request's own timeout (its frame's
	// timeoutMs): a method's context expires at the smaller of the two.
	// Default 30s.
	MaxRequestTimeout time.Duration
	// DefaultRequestTimeout is a method's context's life for a request
	// frame without timeoutMs (clients older than the request timeout field). Default 10s, or
	// MaxRequestTimeout if that is shorter; more than MaxRequestTimeout is
	// refused.
	DefaultRequestTimeout time.Duration
	// MaxConcurrentRequests caps the method calls running at once for one
	// connection; the connection's reader waits for one to end before it
	// reads on (back-pressure, not an error). Default 16.
	MaxConcurrentRequests int

	// MaxPresenceUsers caps the users a presence answer lists (the
	// wsready.presence request, Server.Presence); Total still counts them
	// all and Truncated says some were left out. At most 1000 (an answer is
	// one frame). Default 100.
	MaxPresenceUsers int
	// PresenceHeartbeat is how often this node tells the others on NATS
	// that it is alive (presence_nats.go): a node silent for three
	// heartbeats is dropped with its users, within four heartbeats of its
	// death. Every node on one NATS should have the same. Default 2s.
	PresenceHeartbeat time.Duration
	// NATS carries presence and the application's Disconnect and Revoke
	// between the nodes that share it (core NATS subjects
	// wsready.presence.> and wsready.control; no JetStream). Default: the
	// connection of a JetStream History (NewJetStreamHistory,
	// ConnectJetStream) if History is one, so nodes that share topics
	// share presence; none otherwise: presence and Disconnect stay on this
	// node. The Server does not close it.
	NATS *nats.Conn
	// IdempotencyWindow is how long the answer to a request or a publish
	// that carried an idempotency key is kept, so a repeat of the key in
	// the same scope gets it instead of running again (idempotency.go).
	// Default 2m.
	IdempotencyWindow time.Duration
	// MaxIdempotencyKeys bounds the keys this node remembers in all (also
	// at most 32 MiB of answers): past it the largest scope's least
	// recently used answers are dropped. MaxIdempotencyKeysPerScope bounds
	// one scope's (a user's, or an anonymous session's; also at most 1 MiB
	// of answers): past it that scope's own least recently used answers
	// are dropped, never another's. A key that finds no entry it may drop
	// (only runs in progress) is refused with too_many_pending and runs
	// nothing (idempotency.go). Defaults 10,000 and 256 (or
	// MaxIdempotencyKeys if less); the one per scope is at most the
	// node's.
	MaxIdempotencyKeys         int
	MaxIdempotencyKeysPerScope int

	// Publish lets clients publish to topics (any valid name but the
	// demo's feed while it runs), creating them, as AuthorizePublish
	// allows. Off by default: it changes server state. Off, every publish
	// is refused whatever the hooks say.
	Publish bool
	// History keeps the topics' updates. Default: in memory
	// (NewMemoryHistory with the limits below), lost with the process.
	// The Server closes it.
	History History
	// HistoryMsgs, HistoryBytes and HistoryAge bound each topic's retained
	// updates (count, bytes of data, age): a replay further back reports
	// the first seq it still has. They also bound each node's copy of a
	// topic. Default 1000, 256 KiB, 10m.
	HistoryMsgs  int
	HistoryBytes int
	HistoryAge   time.Duration
	// MaxTopics caps the topics (and the topics this node keeps in
	// memory); a publish that would create one more is answered with
	// too_many_topics. A node lets go of a topic its last subscriber there
	// left. In the memory history a new topic at the cap first makes room:
	// the topics nobody on this node subscribes to whose updates have all
	// expired are forgotten (a client resuming one hears its history was
	// reset). Default 256.
	MaxTopics int
	// MaxSubscriptions caps the topics one connection may subscribe to;
	// one more is answered with too_many_subscriptions. Default 16.
	MaxSubscriptions int
	// SubscribeRate and SubscribeBurst cap the subscribe frames one
	// connection sends, per second (a token bucket): one more is answered
	// with rate_limited and retryAfterMs, and the connection stays (a
	// client asks again after it). Each subscribe may load a topic from
	// the History; a client subscribing and unsubscribing in a loop would
	// otherwise make the node work as fast as it can send. Default 20/s,
	// burst 4 x MaxSubscriptions (64): a reconnect subscribes to all its
	// topics at once.
	SubscribeRate  float64
	SubscribeBurst int
	// HistoryTimeout bounds each call into the History (publish, loading a
	// topic). Default 5s.
	HistoryTimeout time.Duration
	// Node names this node in /api/stats and on the page (several nodes on
	// one NATS). Default none.
	Node string

	// Logger receives structured logs. Per-connection events are logged at
	// debug level; no token, payload or peer text is logged. Lines a client
	// can repeat are rate limited: 5 a minute per message, then one with
	// suppressed=N. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock for timestamps in stats and for the log rate
	// limit's minute. Default time.Now.
	Now func() time.Time
}

// loopbackHosts are always allowed in a Host header (Options.AllowedHosts).
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// maxPingInterval is the longest PingInterval: clients refuse a longer one.
const maxPingInterval = time.Hour

// defaultRequestTimeout is DefaultRequestTimeout's default (capped by
// MaxRequestTimeout): the native client's own default request timeout is 5s.
const defaultRequestTimeout = 10 * time.Second

// maxPresenceUsers is the most MaxPresenceUsers may be.
const maxPresenceUsers = 1000

// minAuthKey is the shortest AuthKey, in bytes: HMAC-SHA256's own size.
const minAuthKey = 32

// numField is one number an Options field holds, with its default.
type numField[T time.Duration | int | float64] struct {
	name string
	v    *T
	def  T
}

// withDefaults sets each zero field to its default, and reports to bad
// each that is negative or not a finite number; kind names what it holds.
func withDefaults[T time.Duration | int | float64](fields []numField[T], kind string, bad func(field, format string, args ...any)) {
	for _, f := range fields {
		v := *f.v
		switch {
		case v < 0 || v != v || float64(v) > math.MaxFloat64: // negative, NaN, +Inf
			bad(f.name, "is %v: %s must be positive (0 for the default, %v)", v, kind, f.def)
		case v == 0:
			*f.v = f.def
		}
	}
}

// cloneWithDefaults returns a copy of o with every zero field at its
// default, or an error naming every field New refuses.
func (o *Options) cloneWithDefaults() (*Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("Options.%s %s", field, fmt.Sprintf(format, args...)))
	}
	// One line a field: its name, where it is, its default.
	withDefaults([]numField[time.Duration]{
		{"PingInterval", &c.PingInterval, 25 * time.Second},
		{"WriteTimeout", &c.WriteTimeout, 10 * time.Second},
		{"MessageTimeout", &c.MessageTimeout, 10 * time.Second},
		{"SweepInterval", &c.SweepInterval, 10 * time.Second},
		{"SweepGrace", &c.SweepGrace, 5 * time.Second},
		{"DrainWindow", &c.DrainWindow, 10 * time.Second},
		{"TicketLife", &c.TicketLife, 10 * time.Minute},
		{"AuthTimeout", &c.AuthTimeout, 10 * time.Second},
		{"RejectionWindow", &c.RejectionWindow, 5 * time.Minute},
		{"ReadHeaderTimeout", &c.ReadHeaderTimeout, 10 * time.Second},
		{"RequestTimeout", &c.RequestTimeout, 30 * time.Second},
		{"IdleTimeout", &c.IdleTimeout, 60 * time.Second},
		{"HistoryAge", &c.HistoryAge, 10 * time.Minute},
		{"HistoryTimeout", &c.HistoryTimeout, 5 * time.Second},
		{"MaxRequestTimeout", &c.MaxRequestTimeout, 30 * time.Second},
		{"PresenceHeartbeat", &c.PresenceHeartbeat, 2 * time.Second},
		{"IdempotencyWindow", &c.IdempotencyWindow, 2 * time.Minute},
		{"HTTPAttachTimeout", &c.HTTPAttachTimeout, 5 * time.Second},
	}, "a duration", bad)
	withDefaults([]numField[int]{
		{"MaxConns", &c.MaxConns, 10000},
		{"MaxConnsPerIP", &c.MaxConnsPerIP, 256},
		{"MaxQueuedBytes", &c.MaxQueuedBytes, 1 << 20},
		{"MaxPendingReplies", &c.MaxPendingReplies, 64},
		{"AdmitBurst", &c.AdmitBurst, 100},
		{"TenantBurst", &c.TenantBurst, 40},
		{"TicketBurst", &c.TicketBurst, 20},
		{"RejectionThreshold", &c.RejectionThreshold, 20},
		{"BadTicketThreshold", &c.BadTicketThreshold, 20},
		{"MaxHeaderBytes", &c.MaxHeaderBytes, 16 << 10},
		{"HistoryMsgs", &c.HistoryMsgs, 1000},
		{"HistoryBytes", &c.HistoryBytes, 256 << 10},
		{"MaxTopics", &c.MaxTopics, 256},
		{"MaxSubscriptions", &c.MaxSubscriptions, 16},
		{"MaxConcurrentRequests", &c.MaxConcurrentRequests, 16},
		{"MaxPresenceUsers", &c.MaxPresenceUsers, 100},
		{"MaxIdempotencyKeys", &c.MaxIdempotencyKeys, 10000},
		{"MaxSendPOSTs", &c.MaxSendPOSTs, 2},
		{"MaxSendBytes", &c.MaxSendBytes, 8 << 20},
	}, "a count", bad)
	switch n := c.MaxIdempotencyKeysPerScope; {
	case n < 0:
		bad("MaxIdempotencyKeysPerScope", "is %d: a count must be positive (0 for the default, 256 or MaxIdempotencyKeys if less)", n)
	case n == 0:
		c.MaxIdempotencyKeysPerScope = min(256, c.MaxIdempotencyKeys)
	case n > c.MaxIdempotencyKeys && c.MaxIdempotencyKeys > 0:
		bad("MaxIdempotencyKeysPerScope", "is %d: at most MaxIdempotencyKeys (%d)", n, c.MaxIdempotencyKeys)
	}
	withDefaults([]numField[float64]{
		{"AdmitRate", &c.AdmitRate, 500},
		{"TenantRate", &c.TenantRate, 20},
		{"ProbeRate", &c.ProbeRate, 5},
		{"TicketRate", &c.TicketRate, 5},
		{"SubscribeRate", &c.SubscribeRate, 20},
	}, "a rate (per second)", bad)
	withDefaults([]numField[int]{
		{"SubscribeBurst", &c.SubscribeBurst, 4 * c.MaxSubscriptions},
	}, "a count", bad)
	switch r := c.TenantMsgRate; {
	case r < 0 || r != r || r > math.MaxFloat64:
		bad("TenantMsgRate", "is %v: a rate (per second) must be positive (0 for no ceiling)", r)
	case c.TenantMsgBurst < 0:
		bad("TenantMsgBurst", "is %d: a count must be positive (0 for one second's worth)", c.TenantMsgBurst)
	case r == 0 && c.TenantMsgBurst > 0:
		bad("TenantMsgBurst", "is %d without a TenantMsgRate", c.TenantMsgBurst)
	case r > 0 && c.TenantMsgBurst == 0:
		c.TenantMsgBurst = int(min(math.Ceil(r), math.MaxInt32))
	}
	switch r := c.TenantHandshakeRate; {
	case r < 0 || r != r || r > math.MaxFloat64:
		bad("TenantHandshakeRate", "is %v: a rate (per second) must be positive (0 for no ceiling)", r)
	case c.TenantHandshakeBurst < 0:
		bad("TenantHandshakeBurst", "is %d: a count must be positive", c.TenantHandshakeBurst)
	case r == 0 && c.TenantHandshakeBurst > 0:
		bad("TenantHandshakeBurst", "is %d without a TenantHandshakeRate", c.TenantHandshakeBurst)
	case r > 0 && c.TenantHandshakeBurst == 0:
		bad("TenantHandshakeBurst", "is 0 with a TenantHandshakeRate: a bucket of 0 admits no handshake (1 spaces them evenly)")
	}
	if c.MaxConnsPerTenant < 0 {
		bad("MaxConnsPerTenant", "is %d: a count must be positive (0 for no ceiling)", c.MaxConnsPerTenant)
	}
	switch d := c.DefaultRequestTimeout; {
	case d < 0:
		bad("DefaultRequestTimeout", "is %v: a duration must be positive (0 for the default, %v)", d, defaultRequestTimeout)
	case d == 0:
		c.DefaultRequestTimeout = min(defaultRequestTimeout, c.MaxRequestTimeout)
	case d > c.MaxRequestTimeout:
		bad("DefaultRequestTimeout", "is %v: at most MaxRequestTimeout (%v)", d, c.MaxRequestTimeout)
	}
	c.Methods = checkMethods(c.Methods, bad)
	if c.MaxSendBytes > 0 && c.MaxSendBytes < maxSendBody {
		bad("MaxSendBytes", "is %d: at least %d (one full POST body)", c.MaxSendBytes, maxSendBody)
	}
	if c.MaxPresenceUsers > maxPresenceUsers {
		bad("MaxPresenceUsers", "is %d: at most %d (a presence answer is one frame)", c.MaxPresenceUsers, maxPresenceUsers)
	}
	if c.NATS == nil {
		if h, ok := c.History.(interface{ natsConn() *nats.Conn }); ok {
			c.NATS = h.natsConn()
		}
	}
	if c.PingInterval > maxPingInterval {
		bad("PingInterval", "is %v: at most %v (clients refuse longer intervals)", c.PingInterval, maxPingInterval)
	}
	switch c.RefuseWith {
	case "":
		c.RefuseWith = RefuseClose
	case RefuseClose, RefuseHTTP:
	default:
		bad("RefuseWith", "is %q: it must be %q or %q", c.RefuseWith, RefuseClose, RefuseHTTP)
	}
	if c.AuthorizePublish != nil && !c.Publish {
		bad("AuthorizePublish", "is set while Publish is off: every publish is refused before it is asked (set Publish)")
	}
	hooked := c.Authenticate != nil || c.JWT != nil
	switch c.Auth {
	case "":
		c.Auth = AuthOff
		if hooked || c.Identify != nil {
			c.Auth = AuthRequired
		}
	case AuthOff:
		if hooked {
			bad("Auth", "is %q while Authenticate or JWT is set: the tokens they make good would never be asked for (leave Auth empty for %q, or set %q)", c.Auth, AuthRequired, AuthOptional)
		}
	case AuthOptional, AuthRequired:
	default:
		bad("Auth", "is %q: it must be %q, %q or %q", c.Auth, AuthOff, AuthOptional, AuthRequired)
	}
	if n := len(c.AuthKey); n > 0 && n < minAuthKey {
		bad("AuthKey", "has %d bytes: at least %d (or none for a random key)", n, minAuthKey)
	}
	proxies := make([]netip.Prefix, 0, len(c.TrustedProxies))
	for _, p := range c.TrustedProxies {
		switch {
		case !p.IsValid():
			bad("TrustedProxies", "holds an invalid prefix")
		case p.Addr().Is4In6():
			bad("TrustedProxies", "holds %v: write an IPv4 network as IPv4", p)
		case p.Addr().Zone() != "":
			bad("TrustedProxies", "holds %v: a network has no zone", p)
		default:
			proxies = append(proxies, p.Masked())
		}
	}
	c.TrustedProxies = proxies
	for _, h := range c.AllowedHosts {
		if strings.TrimSpace(h) == "" {
			bad("AllowedHosts", "holds an empty host name")
		}
	}
	for _, p := range c.OriginPatterns {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			bad("OriginPatterns", "holds %q, which is not a host pattern", p)
		}
	}
	c.AllowedHosts = append(append([]string(nil), loopbackHosts...), c.AllowedHosts...)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("failed to create the server: %w", errors.Join(errs...))
	}
	return &c, nil
}

func (o *Options) retention() Retention {
	return Retention{MaxMsgs: o.HistoryMsgs, MaxBytes: o.HistoryBytes, MaxAge: o.HistoryAge}
}
