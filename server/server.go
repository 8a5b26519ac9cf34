//go:build !js

// Package server is wsready's backend: it speaks the wire protocol over
// WebSocket at /ws, runs a small live feed, answers requests, can be broken
// on demand by failure switches, and counts what it sees.
package server

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// Options configures a Server. A nil *Options means all defaults. A zero
// field takes its default; the wsready command's flags refuse zeros that
// would mean nothing.
type Options struct {
	// PingInterval is how often the server pings each connection; the first
	// ping goes out at once. Default 1s.
	PingInterval time.Duration
	// FeedInterval is the time between two feed updates. Default 250ms.
	FeedInterval time.Duration
	// SlowReplyDelay is how late responses arrive while Slow replies is on.
	// Default 8s (beyond the client's 5s request timeout).
	SlowReplyDelay time.Duration
	// FlapAfter is how long a connection lives while Flapping is on. Default 300ms.
	FlapAfter time.Duration
	// JitterMax is the most a ping is delayed while Jitter is on (each by
	// a random 0 to JitterMax). Default 800ms.
	JitterMax time.Duration
	// RestartDowntime is how long new connections are refused after Restart.
	// Default 4s.
	RestartDowntime time.Duration

	// Demo turns on the demo's control surface: POST /api/faults (the
	// failure switches), POST /api/reset, and the remote addresses in
	// /api/stats. Off by default: a server anyone can reach must not be
	// freezable by anyone.
	Demo bool
	// AllowedHosts are the host names (without port) a request's Host
	// header may carry; anything else is refused with 421, which also
	// defeats DNS rebinding. "*" allows any host. Default localhost,
	// 127.0.0.1 and ::1.
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
	// MaxConnsPerIP caps them per remote IP address. Default 256.
	MaxConnsPerIP int
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
	// TenantRate and TenantBurst are the ceiling per remote IP. Default
	// 20/s, burst 40.
	TenantRate  float64
	TenantBurst int
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
	// ticker sends every connection a WebSocket ping every SweepInterval and
	// closes a connection whose pong has not come within two intervals plus
	// the grace (a connection's first sweep ping goes at the next tick).
	// Browsers answer these pings themselves. Default 10s and 5s.
	SweepInterval time.Duration
	SweepGrace    time.Duration
	// DrainWindow is how long a drain (drain.go) spreads its closes over.
	// Default 10s.
	DrainWindow time.Duration

	// Auth is whether the server asks for tickets (auth.go). Default AuthOff.
	Auth AuthMode
	// AuthKey signs tickets (HMAC-SHA256). Default: 32 random bytes made at
	// start (tickets then die with the process).
	AuthKey []byte
	// TicketLife is how long a ticket from POST /api/token lives. Default 10m.
	TicketLife time.Duration
	// IssueTickets turns POST /api/token on outside Demo mode. It hands a
	// ticket for any client id to anyone who can reach the server (so
	// AuthRequired then stops nobody): off by default, when it answers 403;
	// on with Demo. In production the application issues the tickets,
	// signed with AuthKey (the format is in auth.go).
	IssueTickets bool
	// TicketRate and TicketBurst limit POST /api/token per remote address
	// (an IPv6 /64 is one address), whatever turned it on: beyond them it
	// answers 429 with Retry-After. At most 10,000 addresses are tracked
	// (a bucket that has refilled is forgotten; with 10,000 live ones a new
	// address gets 429). Default 5/s, burst 20: a page fetches one ticket
	// per lifetime, and wsready storm's clients use none.
	TicketRate  float64
	TicketBurst int
	// ShortTicketLife is their life while the Short tokens switch is on.
	// Default 5s.
	ShortTicketLife time.Duration
	// AuthTimeout is how long AuthRequired waits for the auth frame before
	// closing with 4003. Default 10s.
	AuthTimeout time.Duration
	// RejectionThreshold and RejectionWindow are the backstop for a looping
	// client: a client id whose tickets (signed by us, refused as revoked
	// or expired) were rejected more than RejectionThreshold times within
	// RejectionWindow is closed with 4003 at once. Default 20 in 5m. At
	// most 10,000 client ids are tracked.
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
	// OverloadRetryAfter is the retry-after the Overload switch gives.
	// Default 5s.
	OverloadRetryAfter time.Duration

	// ReadHeaderTimeout, RequestTimeout, IdleTimeout and MaxHeaderBytes
	// harden the HTTP server HTTPServer returns: a request's headers must
	// arrive within ReadHeaderTimeout (default 10s); a non-WebSocket
	// request must be read and answered within RequestTimeout (default
	// 30s); an idle keep-alive connection is closed after IdleTimeout
	// (default 60s); headers are limited to MaxHeaderBytes (default 16 KiB).
	ReadHeaderTimeout time.Duration
	RequestTimeout    time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int

	// Publish lets clients publish to topics (any valid name but the
	// demo's feed), creating them. Off by default: it changes server state.
	Publish bool
	// NoFeed turns off this node's demo feed. With several nodes on one
	// NATS, exactly one should produce it. Default: the feed runs.
	NoFeed bool
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
	// too_many_topics. Default 256.
	MaxTopics int
	// MaxSubscriptions caps the topics one connection may subscribe to;
	// one more is answered with too_many_subscriptions. Default 16.
	MaxSubscriptions int
	// HistoryTimeout bounds each call into the History (publish, loading a
	// topic). Default 5s.
	HistoryTimeout time.Duration
	// Node names this node in /api/stats and on the page (several nodes on
	// one NATS). Default none.
	Node string

	// Static is served at / (the demo page, the JS and the WASM). Default none.
	Static fs.FS
	// Logger receives structured logs. Per-connection events are logged at
	// debug level; no token, payload or peer text is logged. Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock for timestamps in stats. Default time.Now.
	Now func() time.Time
}

func (o *Options) cloneWithDefaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	dur := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	num := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	dur(&c.PingInterval, time.Second)
	dur(&c.FeedInterval, 250*time.Millisecond)
	dur(&c.SlowReplyDelay, 8*time.Second)
	dur(&c.FlapAfter, 300*time.Millisecond)
	dur(&c.JitterMax, 800*time.Millisecond)
	dur(&c.RestartDowntime, 4*time.Second)
	dur(&c.WriteTimeout, 10*time.Second)
	dur(&c.MessageTimeout, 10*time.Second)
	dur(&c.ReadHeaderTimeout, 10*time.Second)
	dur(&c.RequestTimeout, 30*time.Second)
	dur(&c.IdleTimeout, 60*time.Second)
	num(&c.MaxConns, 10000)
	num(&c.MaxConnsPerIP, 256)
	num(&c.MaxQueuedBytes, 1<<20)
	num(&c.MaxPendingReplies, 64)
	num(&c.MaxHeaderBytes, 16<<10)
	dur(&c.TicketLife, 10*time.Minute)
	dur(&c.ShortTicketLife, 5*time.Second)
	dur(&c.AuthTimeout, 10*time.Second)
	dur(&c.RejectionWindow, 5*time.Minute)
	dur(&c.OverloadRetryAfter, 5*time.Second)
	dur(&c.SweepInterval, 10*time.Second)
	dur(&c.SweepGrace, 5*time.Second)
	dur(&c.DrainWindow, 10*time.Second)
	num(&c.HistoryMsgs, 1000)
	num(&c.HistoryBytes, 256<<10)
	dur(&c.HistoryAge, 10*time.Minute)
	num(&c.MaxTopics, 256)
	num(&c.MaxSubscriptions, 16)
	dur(&c.HistoryTimeout, 5*time.Second)
	if c.AdmitRate <= 0 {
		c.AdmitRate = 500
	}
	num(&c.AdmitBurst, 100)
	if c.TenantRate <= 0 {
		c.TenantRate = 20
	}
	num(&c.TenantBurst, 40)
	if c.ProbeRate <= 0 {
		c.ProbeRate = 5
	}
	if c.RefuseWith == "" {
		c.RefuseWith = RefuseClose
	}
	num(&c.RejectionThreshold, 20)
	num(&c.BadTicketThreshold, 20)
	if c.TicketRate <= 0 {
		c.TicketRate = 5
	}
	num(&c.TicketBurst, 20)
	if c.Auth == "" {
		c.Auth = AuthOff
	}
	if len(c.AllowedHosts) == 0 {
		c.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &c
}

// Server is the backend. Create it with New, serve Handler (or
// HTTPServer), stop it with Close.
type Server struct {
	opts   *Options
	log    *slog.Logger
	gate   gate
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the server starts
	static http.Handler

	mu           sync.Mutex
	conns        map[uint64]*conn
	nextID       uint64
	closed       bool
	serviceDown  bool
	slowReplies  bool
	flapping     bool
	shortTokens  bool
	overload     bool
	auth         *authority
	adm          *admission
	metrics      *metrics
	drain        drainState
	restartUntil time.Time
	hub          *hub
	ping         []byte       // the ping frame, encoded once
	jitter       atomic.Bool  // the Jitter switch
	feedSeq      atomic.Int64 // the feed's last seq on this node's producer
	feedValue    int64
	feedFailing  bool // the last feed update failed (runFeed's)
	counters     counters
	connCounters connCounters
	admitted     int            // handshakes admitted and not yet unregistered (open + in progress)
	perIP        map[string]int // the same, per remote IP; entries at zero are deleted

	// panicMethod, when set (by tests), is a request method whose handler
	// panics, to prove a panic stays with its connection.
	panicMethod string
}

type counters struct {
	handshakes       uint64 // since start
	handshakesWindow uint64 // since the last reset
	refused          uint64 // since the last reset
	refusedFull      uint64 // since start: MaxConns reached
	refusedPerIP     uint64 // since start: MaxConnsPerIP reached
	refusedRate      uint64 // since start: over the handshake ceiling
	resetAt          time.Time
}

// connCounters are counted from connection paths, some of which hold s.mu
// already (the feed), so they have a lock of their own.
type connCounters struct {
	mu              sync.Mutex
	slowConsumer    uint64 // closed with 4429
	stalled         uint64 // a write made no progress within WriteTimeout
	messageTimeouts uint64 // a message not finished within MessageTimeout
	peerGone        uint64 // the peer closed TCP while frozen
	overloaded      uint64 // handshakes closed with 1013 by the Overload switch
	sweepClosed     uint64 // connections closed by the liveness sweep
	peerCloses      CloseCounts
}

// New starts a server's feed. Call Close to stop it.
func New(opts *Options) *Server {
	o := opts.cloneWithDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: o, log: o.Logger, ctx: ctx, cancel: cancel, conns: map[uint64]*conn{}, perIP: map[string]int{},
		auth: newAuthority(o), adm: newAdmission(o), metrics: newMetrics()}
	s.counters.resetAt = o.Now()
	if o.Static != nil {
		s.static = newStaticHandler(o.Static)
	}
	h := o.History
	if h == nil {
		h = NewMemoryHistory(o.retention(), o.MaxTopics, o.Now)
	}
	s.hub = newHub(s, h, o.retention())
	s.ping = protocol.Encode(protocol.Message{Type: protocol.TypePing, IntervalMs: o.PingInterval.Milliseconds()})
	s.registerGauges()
	s.wg.Add(1)
	go s.runHeartbeat()
	if !o.NoFeed {
		// The feed exists from the start, so a subscribe before its first
		// update is served. A failure (JetStream away) is retried by every
		// update.
		ctx, cancel := context.WithTimeout(ctx, o.HistoryTimeout)
		if err := h.Create(ctx, protocol.DefaultTopic); err != nil {
			s.log.Warn("feed topic not created", "err", err.Error())
		}
		cancel()
		s.wg.Add(1)
		go s.runFeed()
	}
	return s
}

// Handler returns the HTTP handler: /ws, /api/..., /healthz and the static
// files, behind the Host, Origin and Content-Type checks of guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.serveWS)
	mux.HandleFunc("GET /api/stats", s.serveStats)
	mux.HandleFunc("GET /api/faults", s.serveFaults)
	mux.HandleFunc("POST /api/faults", s.demoOnly(s.setFaults))
	mux.HandleFunc("POST /api/reset", s.demoOnly(s.resetCounters))
	mux.HandleFunc("POST /api/token", s.serveToken)
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.Handle("GET /metrics", s.serveMetrics())
	mux.HandleFunc("POST /api/drain", s.demoOnly(s.serveDrain))
	if s.static != nil {
		mux.Handle("/", s.static)
	}
	return s.guard(mux)
}

// Close stops the feed, lifts every switch, closes every connection with
// 1001 (going away) and waits for all the server's goroutines to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.gate.set(false) // frozen close handshakes must be able to complete
	var closing sync.WaitGroup
	for _, c := range conns {
		closing.Add(1)
		go func() {
			defer closing.Done()
			c.closeWith(protocol.CloseGoingAway, "server shutting down")
		}()
	}
	closing.Wait()
	s.cancel()
	s.wg.Wait()
	s.hub.close()
	return s.hub.h.Close()
}

func (o *Options) retention() Retention {
	return Retention{MaxMsgs: o.HistoryMsgs, MaxBytes: o.HistoryBytes, MaxAge: o.HistoryAge}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
		// A browser sees a refused handshake only as a bare 1006: accept
		// and close with 1008 and a fixed reason the page can show.
		s.metrics.handshake(outOrigin)
		// At debug (-v), without the origin or the address: the origin is
		// the peer's text, and no log line here carries a remote address.
		s.log.Debug("websocket origin refused")
		if ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}); err == nil {
			ws.Close(websocket.StatusPolicyViolation, protocol.ReasonOriginNotAllowed)
		}
		return
	}
	ip := remoteIP(r.RemoteAddr)
	if ref := s.admit(r, ip); ref != nil {
		s.refuse(w, r, ref)
		return
	}
	fw := &freezeWriter{ResponseWriter: w, g: &s.gate, writeTimeout: s.opts.WriteTimeout}
	ws, err := websocket.Accept(fw, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns})
	if err != nil {
		s.release(ip)
		// The error can quote the peer's headers: log only that it happened.
		s.log.Debug("handshake rejected")
		return
	}
	ws.SetReadLimit(protocol.MaxFrameBytes)
	s.mu.Lock()
	overload := s.overload
	s.mu.Unlock()
	if overload {
		// Accepted and closed at once: a browser cannot read an HTTP
		// refusal's status, but it reads a close code and reason.
		s.release(ip)
		s.count(func(k *connCounters) { k.overloaded++ })
		s.metrics.handshake(outOverload)
		ws.Close(protocol.CloseTryAgainLater, protocol.RetryAfterReason(s.opts.OverloadRetryAfter))
		return
	}
	c, late := s.register(ws, fw.gated, r.RemoteAddr, ip)
	if c == nil {
		s.release(ip)
		ws.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer s.wg.Done() // register counted this handler
	s.metrics.handshake(outAccepted)
	switch late {
	case lateRestart:
		// Accepted while Restart began: it goes the way of the others.
		c.closeAsync(protocol.CloseServiceRestart, s.slotReason(s.restartEnd()))
	case lateDrain:
		c.closeAsync(protocol.CloseGoingAway, s.slotReason(s.drainEnd()))
	}
	c.run()
}

// lateKind says a connection was admitted just before Restart or a drain
// began, and registered after it took its list of connections.
type lateKind uint8

const (
	notLate lateKind = iota
	lateRestart
	lateDrain
)

func (s *Server) register(ws *websocket.Conn, gc *gatedConn, remote, ip string) (_ *conn, late lateKind) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, notLate
	}
	// Counted under s.mu with closed false, so Close's Wait never races an
	// Add from zero. Goroutines a connection starts later are counted while
	// this one still is.
	s.wg.Add(1)
	s.nextID++
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{
		id: s.nextID, s: s, ws: ws, gc: gc, remote: remote, ip: ip, openedAt: s.opts.Now(),
		ctx: ctx, cancel: cancel,
		authOK: make(chan struct{}),
	}
	c.q = newSendQueue(s.opts.MaxQueuedBytes, func() {
		c.flushWG.Add(1)
		go c.flush()
	})
	if s.opts.Auth != AuthRequired {
		c.authed() // served from the first frame
	}
	if s.flapping {
		c.startFlap()
	}
	s.conns[c.id] = c
	open := len(s.conns)
	switch {
	case s.opts.Now().Before(s.restartUntil):
		late = lateRestart
	case s.drain.active:
		late = lateDrain
	}
	s.mu.Unlock()
	s.log.Debug("connection opened", "conn", c.id, "open", open)
	return c, late
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c.id)
	s.releaseLocked(c.ip)
	n := len(s.conns)
	s.mu.Unlock()
	s.log.Debug("connection closed", "conn", c.id, "open", n)
}

// runFeed appends one update per FeedInterval to the feed topic; the hub
// delivers it to the subscribers (of every node, on JetStream).
func (s *Server) runFeed() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.FeedInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.produce(now)
		}
	}
}

func (s *Server) produce(now time.Time) {
	s.mu.Lock()
	down := s.serviceDown
	s.mu.Unlock()
	if down || s.gate.isFrozen() {
		return
	}
	s.feedValue++
	v := s.feedValue
	data := []byte(`{"ts":` + itoa64(now.UnixMilli()) + `,"value":` + itoa64(50+(v*37)%50) + `}`)
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.HistoryTimeout)
	seq, err := s.hub.h.Append(ctx, protocol.DefaultTopic, data, true)
	cancel()
	if err != nil {
		// Logged when it starts failing and when it recovers, not 4 times a
		// second while the history backend is away.
		if s.ctx.Err() == nil && !s.feedFailing {
			s.feedFailing = true
			s.log.Warn("feed updates not stored: the history backend failed", "cause", errKind(err))
		}
		return
	}
	if s.feedFailing {
		s.feedFailing = false
		s.log.Info("feed updates stored again")
	}
	s.feedSeq.Store(seq)
}
