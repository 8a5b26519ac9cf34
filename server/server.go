//go:build !js

package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Server is the backend. Create it with New, mount Handler (and the other
// handlers it needs) on the application's mux, serve that with
// HTTPServer, stop it with Drain and Close.
type Server struct {
	opts   *Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the server starts

	mu           sync.Mutex
	conns        map[uint64]*conn
	sessions     map[string]*conn // the HTTP sessions (transport_http.go), by session id
	sendBytes    atomic.Int64     // POST <mount>/send body bytes held now, all sessions (MaxSendBytes)
	open         [2]int           // open connections by transportKind
	nextID       uint64
	closed       bool
	fx           atomic.Pointer[faultState] // the demo's switches (faults.go); nil without the demo
	auth         *authority
	adm          *admission
	tenants      *tenants // per-tenant limits (tenants.go)
	metrics      *metrics
	idem         *idemCache // answers to requests and publishes with idempotency keys (idempotency.go)
	drain        drainState
	hub          *hub
	ping         []byte // the ping frame, encoded once
	counters     counters
	connCounters connCounters
	admitted     int            // handshakes admitted and not yet unregistered (open + in progress)
	perIP        map[string]int // the same, per remote IP; entries at zero are deleted
	methods      methodTable    // the request methods (requests.go)
	fxOnce       sync.Once      // the fault hook is set once (faults.go)
	presence     *presence      // who is subscribed, cluster-wide (presence.go)
	revocations  revocationSet  // users refused for a while (control.go)
	logs         *rateLog       // log lines a peer can repeat, rate limited (lograte.go)
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

// Validate reports what New would refuse in o (nil: all defaults), and
// says which fields, without making a server: a command can refuse bad
// options before it opens a store or a listener.
func (o *Options) Validate() error {
	c, err := o.cloneWithDefaults()
	if err != nil {
		return err
	}
	_, err = newAuthority(c)
	return err
}

// New makes a server from opts (nil: all defaults) and starts its
// heartbeat (and, with NATS, presence's); Close stops them. It fails only
// when opts holds a value Options rules out, and says which, or when it
// cannot subscribe on Options.NATS (a closed connection).
func New(opts *Options) (*Server, error) {
	o, err := opts.cloneWithDefaults()
	if err != nil {
		return nil, err
	}
	auth, err := newAuthority(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: o, log: o.Logger, ctx: ctx, cancel: cancel, conns: map[uint64]*conn{}, sessions: map[string]*conn{}, perIP: map[string]int{},
		auth: auth, adm: newAdmission(o), tenants: newTenants(o), metrics: newMetrics(), idem: newIdemCache(o)}
	s.methods.init(o.Methods)
	s.logs = newRateLog(func() *slog.Logger { return s.log }, o.Now)
	s.presence = newPresence(s)
	if o.NATS != nil {
		if err := s.presence.startBus(o.NATS); err != nil {
			cancel()
			return nil, fmt.Errorf("failed to create the server: %w", err)
		}
	}
	s.counters.resetAt = o.Now()
	h := o.History
	if h == nil {
		h = NewMemoryHistory(o.retention(), o.MaxTopics, o.Now)
	}
	s.hub = newHub(s, h, o.retention())
	s.ping = protocol.Encode(protocol.Message{Type: protocol.TypePing, IntervalMs: o.PingInterval.Milliseconds()})
	s.registerGauges()
	s.registerTenantMetrics()
	s.wg.Add(1)
	go s.runHeartbeat()
	return s, nil
}

// Close stops the demo's feed, lifts every switch, closes every connection with
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
	if fs := s.fx.Load(); fs != nil {
		fs.freeze.set(false) // frozen close handshakes must be able to complete
	}
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
	s.presence.close() // before the History, which may close the NATS connection
	s.hub.close()
	s.logs.flush() // the connections and the hub are gone: what they owe
	return s.hub.h.Close()
}

// serve is Handler: a WebSocket upgrade, or one of the HTTP transport's
// requests (transport_http.go) under the same mount.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r) {
		if h := s.httpRoute(r); h != nil {
			h(w, r)
			return
		}
	}
	s.serveWS(w, r)
}

// lateKind says a connection was admitted just before Restart or a drain
// began, and registered after it took its list of connections.
type lateKind uint8

const (
	notLate lateKind = iota
	lateRestart
	lateDrain
)

// register makes and counts the connection whose transport newTr makes,
// with the Identity Options.Identify gave (zero: none; the caller then
// calls c.identified); nil when the server is closed. The caller runs it
// (c.run) and then calls s.wg.Done.
func (s *Server) register(newTr func(*conn) transport, remote, ip string, id Identity) (_ *conn, late lateKind) {
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
		id: s.nextID, session: newSessionID(), s: s, remote: remote, ip: ip, openedAt: s.opts.Now(),
		ctx: ctx, cancel: cancel,
		authOK: make(chan struct{}),
		// Under s.mu with the others: Disconnect and Revoke find it.
		identity: id, clientID: id.User, byRequest: !id.Anonymous(),
	}
	c.tr = newTr(c)
	c.q = newSendQueue(s.opts.MaxQueuedBytes, func() bool {
		c.flushWG.Add(1)
		return true // add's caller runs the writer (c.startWriter)
	})
	if s.opts.Auth != AuthRequired && !c.byRequest {
		c.authed() // served from the first frame (identified: by c.identified)
	}
	f := s.hook()
	if f != nil {
		s.acceptedLocked(c, f)
	}
	s.conns[c.id] = c
	s.open[c.tr.kind()]++
	if c.tr.kind() == transportSSE {
		s.sessions[c.session] = c
	}
	open := len(s.conns)
	switch {
	case f != nil && s.opts.Now().Before(f.RefusingUntil()):
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
	s.open[c.tr.kind()]--
	if c.tr.kind() == transportSSE {
		delete(s.sessions, c.session)
	}
	s.releaseLocked(c.ip)
	n := len(s.conns)
	s.mu.Unlock()
	s.tenants.leave(c.id, s.opts.Now())
	s.log.Debug("connection closed", "conn", c.id, "open", n)
}

// closeIfLate closes c, accepted (over either transport) while a Restart
// or a drain began, the way the others went: with a slot to come back in.
func (s *Server) closeIfLate(c *conn, late lateKind) {
	switch late {
	case lateRestart:
		c.closeAsync(protocol.CloseServiceRestart, s.slotReason(s.restartEnd()))
	case lateDrain:
		c.closeAsync(protocol.CloseGoingAway, s.slotReason(s.drainEnd()))
	}
}
