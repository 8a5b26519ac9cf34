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
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// Options configures a Server. A nil *Options means all defaults.
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
	// RestartDowntime is how long new connections are refused after Restart.
	// Default 4s.
	RestartDowntime time.Duration
	// OriginPatterns lists extra origins (host patterns, as in
	// websocket.AcceptOptions) allowed to open a WebSocket. Same-origin
	// requests are always allowed. Default none.
	OriginPatterns []string
	// SendQueue is the per-connection outbound queue length; a client that
	// falls this far behind is closed with 4429. Default 256.
	SendQueue int
	// Static is served at / (the demo page, the JS and the WASM). Default none.
	Static fs.FS
	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock for timestamps in stats. Default time.Now.
	Now func() time.Time
}

func (o *Options) cloneWithDefaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.PingInterval <= 0 {
		c.PingInterval = time.Second
	}
	if c.FeedInterval <= 0 {
		c.FeedInterval = 250 * time.Millisecond
	}
	if c.SlowReplyDelay <= 0 {
		c.SlowReplyDelay = 8 * time.Second
	}
	if c.FlapAfter <= 0 {
		c.FlapAfter = 300 * time.Millisecond
	}
	if c.RestartDowntime <= 0 {
		c.RestartDowntime = 4 * time.Second
	}
	if c.SendQueue <= 0 {
		c.SendQueue = 256
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &c
}

// Server is the backend. Create it with New, serve Handler, stop it with Close.
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
	restartUntil time.Time
	feedSeq      int64
	counters     counters

	// panicMethod, when set (by tests), is a request method whose handler
	// panics, to prove a panic stays with its connection.
	panicMethod string
}

type counters struct {
	handshakes       uint64 // since start
	handshakesWindow uint64 // since the last reset
	refused          uint64 // since the last reset
	resetAt          time.Time
}

// New starts a server's feed. Call Close to stop it.
func New(opts *Options) *Server {
	o := opts.cloneWithDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: o, log: o.Logger, ctx: ctx, cancel: cancel, conns: map[uint64]*conn{}}
	s.counters.resetAt = o.Now()
	if o.Static != nil {
		s.static = newStaticHandler(o.Static)
	}
	s.wg.Add(1)
	go s.runFeed()
	return s
}

// Handler returns the HTTP handler: /ws, /api/..., and the static files.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.serveWS)
	mux.HandleFunc("GET /api/stats", s.serveStats)
	mux.HandleFunc("GET /api/faults", s.serveFaults)
	mux.HandleFunc("POST /api/faults", s.setFaults)
	mux.HandleFunc("POST /api/reset", s.resetCounters)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	if s.static != nil {
		mux.Handle("/", s.static)
	}
	return mux
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
	return nil
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	now := s.opts.Now()
	s.mu.Lock()
	s.counters.handshakes++
	s.counters.handshakesWindow++
	refuse := s.closed || now.Before(s.restartUntil)
	if refuse {
		s.counters.refused++
	}
	retry := s.restartUntil.Sub(now)
	s.mu.Unlock()
	if refuse {
		secs := int(retry/time.Second) + 1
		w.Header().Set("Retry-After", itoa(secs))
		http.Error(w, "restarting: try again later", http.StatusServiceUnavailable)
		return
	}

	fw := &freezeWriter{ResponseWriter: w, g: &s.gate}
	ws, err := websocket.Accept(fw, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns})
	if err != nil {
		s.log.Info("handshake rejected", "remote", r.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(protocol.MaxFrameBytes)
	c, restarting := s.register(ws, fw.gated, r.RemoteAddr)
	if c == nil {
		ws.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer s.wg.Done() // register counted this handler
	if restarting {
		// Accepted while Restart began: it goes the way of the others.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.closeWith(protocol.CloseServiceRestart, "server restart")
		}()
	}
	c.run()
}

func (s *Server) register(ws *websocket.Conn, gc *gatedConn, remote string) (_ *conn, restarting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	// Counted under s.mu with closed false, so Close's Wait never races an
	// Add from zero. Goroutines a connection starts later are counted while
	// this one still is.
	s.wg.Add(1)
	s.nextID++
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{
		id: s.nextID, s: s, ws: ws, gc: gc, remote: remote, openedAt: s.opts.Now(),
		ctx: ctx, cancel: cancel,
		out:  make(chan []byte, s.opts.SendQueue),
		flap: make(chan struct{}, 1),
	}
	if s.flapping {
		c.flap <- struct{}{}
	}
	s.conns[c.id] = c
	s.log.Info("connection opened", "conn", c.id, "remote", remote, "open", len(s.conns))
	return c, s.opts.Now().Before(s.restartUntil)
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c.id)
	n := len(s.conns)
	s.mu.Unlock()
	s.log.Info("connection closed", "conn", c.id, "open", n)
}

// runFeed publishes one update per FeedInterval to every subscribed connection.
func (s *Server) runFeed() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.FeedInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.publish(now)
		}
	}
}

func (s *Server) publish(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serviceDown || s.gate.isFrozen() {
		return
	}
	s.feedSeq++
	seq := s.feedSeq
	data := []byte(`{"ts":` + itoa64(now.UnixMilli()) + `,"value":` + itoa64(50+(seq*37)%50) + `}`)
	frame := protocol.Encode(protocol.Message{Type: protocol.TypeUpdate, Topic: protocol.DefaultTopic, Seq: seq, Data: data})
	for _, c := range s.conns {
		if c.subscribed {
			c.enqueue(frame)
		}
	}
}
