//go:build !js

package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsready/wsready/protocol"
	"golang.org/x/time/rate"
)

// conn is one connection, over a WebSocket or an HTTP session (its
// transport). Its reader goroutine reads; one writer at a time owns the
// send queue's writes (pings, feed, replies), so frames never interleave:
// on a WebSocket over TCP or an HTTP session it is whoever queued into an
// idle queue, writing in its own goroutine (the transport never blocks it;
// an HTTP session's stream handler takes each frame on); over TLS a
// flusher goroutine while frames wait.
type conn struct {
	id       uint64
	session  string   // the opaque id the welcome frame names: 16 random bytes, base64url
	identity Identity // who the connection belongs to (auth_connect.go); zero: anonymous. Set once by the reader, under s.mu: the reader reads it freely, others under s.mu.
	s        *Server
	tr       transport
	remote   string
	ip       string
	openedAt time.Time
	ctx      context.Context
	cancel   context.CancelFunc
	q        *sendQueue
	flushWG  sync.WaitGroup // the queue's writer at work, if any (counted under q.mu)

	served atomic.Bool // authenticated (or no auth asked): pings go out

	timerMu   sync.Mutex
	flapT     *time.Timer // the Flapping close, while armed
	jitterT   *time.Timer // a ping held by the Jitter switch
	authT     *time.Timer // AuthRequired's wait for the auth frame
	timersOff bool        // the connection ended: arm nothing more

	closing atomic.Bool // a close was started: later overflows start no other
	pinging atomic.Bool // a liveness ping is outstanding
	// slotWait: the reader waits for a request slot (requests.go) and reads
	// nothing meanwhile; slotWaits counts the waits that ended. The sweep
	// does not blame the peer for that silence (transport_ws.go).
	slotWait  atomic.Bool
	slotWaits atomic.Uint64
	closeOnce sync.Once
	framesIn  atomic.Uint64
	errorsOut atomic.Uint64

	subMu  sync.Mutex
	subs   map[string]*topic // the topics this connection is subscribed to
	subLim *rate.Limiter     // Options.SubscribeRate; made by the reader at its first subscribe

	// Auth (auth_connect.go). clientID and ticket are guarded by s.mu.
	clientID    string
	ticket      ticket
	authOK      chan struct{} // closed once the connection may be served
	authOnce    sync.Once
	authChecked bool // the first frame was seen (reader only)
	byRequest   bool // Options.Identify named the user: no token needed (set before run)
	expMu       sync.Mutex
	expiry      *time.Timer   // the token's 4001, while armed (guarded by expMu)
	expOff      bool          // the connection ended: arm no expiry (guarded by expMu)
	refreshLim  *rate.Limiter // refreshes taken (auth_refresh.go); made by the reader at the first

	endMu sync.Mutex
	ended bool // run has finished: closeAsync starts nothing

	slowMu  sync.Mutex
	slow    map[*time.Timer]struct{} // delayed replies not yet sent (Slow replies)
	slowOff bool                     // the connection ended: no more delayed replies

	req requestState // method calls in flight (requests.go)
	rep reportState  // readiness reports (reports.go); the reader's
}

// transport is a connection's I/O, all a conn needs of its socket: the
// WebSocket (transport_ws.go) or an HTTP session, Server-Sent Events out
// and POSTs in (transport_http.go). Everything else (admission, auth, the
// queue, pings, the switches, drain) is the conn's and the server's, the
// same for both.
type transport interface {
	// kind labels the metrics: transportWS or transportSSE.
	kind() transportKind
	// read blocks until the client's next frame (binary: not a text
	// frame). An error ends the connection; read has accounted for it.
	read(ctx context.Context) (data []byte, binary bool, err error)
	// write sends one frame, in order, from the one writer goroutine. An
	// error ends the connection; a write that makes no progress within
	// WriteTimeout is one.
	write(ctx context.Context, frame []byte) error
	// close tells the client code and reason and ends the connection; it
	// may block up to the transport's close timeout.
	close(code int, reason string) error
	// closeNow ends the connection without a word.
	closeNow()
	// liveness is the sweep's check (sweep.go), once per SweepInterval.
	liveness()
	// inline reports whether write never blocks: what the socket does not
	// take at once waits in a backlog of the transport's. Then the send
	// queue's writer runs in the goroutine that queued the frame.
	inline() bool
	// park reports whether frames written wait in that backlog; if so the
	// transport runs c.writeInline once they are on the socket (or the
	// connection failed), and the writer stops until then.
	park() bool
	// peerGone reports that the peer went away while the Freeze switch
	// held the connection.
	peerGone() bool
}

// transportKind names a transport in metrics and stats.
type transportKind uint8

const (
	transportWS  transportKind = iota // a WebSocket
	transportSSE                      // an HTTP session: Server-Sent Events and POST
)

var transportKinds = []transportKind{transportWS, transportSSE}

func (k transportKind) String() string {
	if k == transportSSE {
		return "sse"
	}
	return "ws"
}

func (c *conn) run() {
	if c.s.opts.Auth == AuthRequired {
		c.armAuthWait()
	}
	c.readLoop()
	c.reportsEnd()
	c.cancel()
	c.stopExpiry()
	c.stopTimers()
	c.endMu.Lock()
	c.ended = true
	c.endMu.Unlock()
	c.stopSlowReplies()
	c.dropSubscriptions("")
	c.q.close()      // no flusher starts after this
	c.flushWG.Wait() // and the one at work has seen the cancel
	if c.tr.peerGone() {
		c.s.count(func(k *connCounters) { k.peerGone++ })
	}
	c.s.unregister(c)
	c.tr.closeNow()
	c.endRequests() // their contexts ended with the cancel above
}

// armAuthWait closes the connection with 4003 if it is not
// authenticated within AuthTimeout (AuthRequired). Time the Deaf switch
// was on in it does not count: the auth frame may have waited unread.
func (c *conn) armAuthWait() {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.timersOff {
		return
	}
	dg := c.s.deafGate()
	deaf, deafs := dg.isFrozen(), dg.count()
	c.authT = time.AfterFunc(c.s.opts.AuthTimeout, func() {
		select {
		case <-c.authOK:
		case <-c.ctx.Done():
		default:
			if dg := c.s.deafGate(); deaf || dg.isFrozen() || dg.count() != deafs {
				c.armAuthWait() // Deaf's doing, not the client's: a fresh wait
				return
			}
			c.closeAsync(protocol.CloseForbidden, "auth required")
		}
	})
}

// readLoop hands each frame the transport reads to handle, until the
// transport fails (the peer left, or the connection is closing). While the
// Deaf switch is on it holds the frame it has and reads no more.
func (c *conn) readLoop() {
	for {
		data, binary, err := c.tr.read(c.ctx)
		if err != nil {
			return
		}
		if !c.s.deafGate().wait(c.ctx.Done()) {
			return
		}
		c.framesIn.Add(1)
		if binary {
			c.sendError(0, protocol.ErrNotText, "binary frames are not part of the protocol")
			continue
		}
		c.handle(data)
	}
}

// badTokenField: err is the decoder's refusal of an auth frame's token.
func badTokenField(err error) bool {
	var de *protocol.DecodeError
	return errors.As(err, &de) && de.Field == "token"
}

// handle serves one frame. A panic here is this connection's problem only:
// it is logged and answered with an error frame, and the connection stays.
func (c *conn) handle(data []byte) {
	defer func() {
		if r := recover(); r != nil {
			c.s.logs.Error("handler panic", "conn", c.id, "panic", fmt.Sprint(r))
			c.sendError(0, protocol.ErrInternal, "internal error")
		}
	}()
	m, err := protocol.DecodeJSON(data)
	if mode := c.s.opts.Auth; mode != AuthOff && !c.authChecked {
		c.authChecked = true
		switch {
		case m.Type == protocol.TypeAuth && (err == nil || badTokenField(err)):
			// A token the decoder refused (empty, not a string, over
			// MaxTokenBytes) is a bad token, refused and counted as one,
			// not a missing auth frame.
			c.authenticate(m)
			return
		case mode == AuthRequired && !c.byRequest:
			c.closeAsync(protocol.CloseForbidden, "auth required")
			return
		}
	}
	if err != nil && m.Type == protocol.TypeReport {
		c.badReport(err) // counted, not answered: a report asks for no answer
		return
	}
	if m.Type == protocol.TypeRefresh && (err == nil || badTokenField(err)) {
		// As an auth frame's: a token the decoder refused is a bad token.
		c.refresh(m)
		return
	}
	if err != nil {
		var de *protocol.DecodeError
		errors.As(err, &de)
		var id uint64
		if m.Type == protocol.TypeRequest || m.Type == protocol.TypePublish {
			id = m.ID // about a request: say which, so the client can settle it
		}
		c.sendError(id, de.Code, de.Error())
		return
	}
	if c.overTenantRate(m) {
		return // answered rate_limited (tenants.go)
	}
	switch m.Type {
	case protocol.TypeSubscribe:
		c.subscribe(m)
	case protocol.TypeUnsubscribe:
		c.unsubscribe(m)
	case protocol.TypePublish:
		c.publish(m)
	case protocol.TypeProbe:
		// At once, whatever the switches say (but Freeze, which holds every
		// byte): a probe asks whether the peer is alive, not the service.
		c.reply(protocol.ProbeAckFrame{Type: protocol.TypeProbeAck, ID: m.ID})
	case protocol.TypeRequest:
		c.request(m)
	case protocol.TypeReport:
		c.report(m)
	default:
		c.sendError(m.ID, protocol.ErrUnexpected, "the server does not accept "+string(m.Type)+" frames")
	}
}

func (c *conn) sendError(id uint64, code, msg string) {
	c.errorsOut.Add(1)
	c.reply(protocol.ErrorFrame{Type: protocol.TypeError, ID: id, Code: code, Message: msg})
}

// reply queues a frame the reader produced in answer to one (a response,
// an error, an ack: one of the protocol's reply types), encoded with
// encoding/json, waiting while the queue is over half its bound: the
// reader stops reading, so a client that floods requests is slowed by TCP,
// not closed. Only a client that does not read for WriteTimeout is closed.
//
// Not wsjson.Write: it writes to the socket from the calling goroutine,
// outside the send queue, so a reply would overtake frames queued before
// it (the feed, a subscribe's replay) and escape the queue's byte bound.
// Used only when nothing is queued (where it can overtake nothing), it
// was measured (client and server in one process) at about 15% less CPU
// per frame for a client that waits for each answer, and 30 to 55% more
// for one that pipelines (BenchmarkFrameRequest, BenchmarkFramePipelined:
// the flusher writes replies in bursts while the reader reads on); the
// design card allows CPU per frame to move by 5%.
func (c *conn) reply(v any) {
	own, err := c.q.put(c.ctx, c.encode(v), c.s.opts.MaxQueuedBytes/2, c.s.opts.WriteTimeout)
	if errors.Is(err, errQueueFull) {
		c.overflow()
	}
	if own {
		c.startWriter()
	}
}

// encode marshals a reply for the send queue. encoding/json refuses only
// a raw result that is not JSON, which the server never sends (each is
// JSON both codecs accept, FuzzBothDecoders holds them to encoding/json):
// should it happen, an internal error frame goes in its place.
func (c *conn) encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Not err itself: it may quote the result.
		c.s.log.Error("failed to encode a reply", "conn", c.id, "type", fmt.Sprintf("%T", v))
		return []byte(`{"type":"error","code":"internal","message":"internal error"}`)
	}
	return b
}

// offer queues a frame the server produced on its own (the feed, a delayed
// reply, unsubscribed) without waiting; a connection whose queue is full is
// closed with 4429.
func (c *conn) offer(frame []byte) {
	own, err := c.q.offer(frame)
	if errors.Is(err, errQueueFull) {
		c.overflow()
	}
	if own {
		c.startWriter()
	}
}

func (c *conn) overflow() {
	if c.closeAsync(protocol.CloseSlowConsumer, "send queue full") {
		c.s.count(func(k *connCounters) { k.slowConsumer++ })
	}
}

// closeAsync starts closeWith on a goroutine of its own, once per
// connection however often it is asked. It reports whether it started one.
func (c *conn) closeAsync(code int, reason string) bool {
	c.endMu.Lock()
	defer c.endMu.Unlock()
	if c.ended || !c.closing.CompareAndSwap(false, true) {
		return false
	}
	c.s.wg.Add(1) // the connection's handler is still counted (ended is false): no Add from zero
	go func() {
		defer c.s.wg.Done()
		c.closeWith(code, reason)
	}()
	return true
}

// startWriter runs the send queue's writer, once an add found the queue
// idle (and counted it in flushWG). Over a transport whose writes never
// block it is the caller itself (writeInline): the feed's fan-out, the
// heartbeat and the reader write straight to the socket, and a feed update
// costs no goroutine per connection. Otherwise a flusher goroutine
// writes while frames wait.
func (c *conn) startWriter() {
	if c.tr.inline() {
		c.writeInline()
		return
	}
	go c.flush()
}

// writeInline writes what is queued, in order, in the calling goroutine,
// until the queue is empty or the transport has a backlog: then it parks,
// and the transport runs it again (from its drainer) once the backlog is
// on the socket. A connection with nothing to send has no writer; one with
// a slow reader has the transport's drainer while its backlog lasts.
func (c *conn) writeInline() {
	for {
		f, ok := c.q.pop()
		if !ok {
			c.flushWG.Done()
			return
		}
		if !c.write(f) {
			// The connection is ending; no other writer starts until the
			// queue closes.
			c.flushWG.Done()
			return
		}
		c.q.written(len(f))
		if c.tr.park() {
			return // still counted in flushWG: the transport runs writeInline again
		}
	}
}

// flush is a connection's writer goroutine over a transport whose writes
// block (a WebSocket over TLS): started by the queue when
// frames arrive and none is running, it writes everything queued, in
// order, and ends when the queue is empty.
func (c *conn) flush() {
	defer c.flushWG.Done()
	for {
		f, ok := c.q.pop()
		if !ok {
			return
		}
		if !c.write(f) {
			return // the connection is ending; no other flusher starts until the queue closes
		}
		c.q.written(len(f))
	}
}

// write sends one frame; false ends the connection.
func (c *conn) write(frame []byte) bool {
	if c.tr.write(c.ctx, frame) == nil {
		return true
	}
	c.cancel()
	return false
}

// closeWith closes the connection with a close handshake (code and
// reason). It may block for up to the transport's close timeout, so
// callers run it off hot paths.
func (c *conn) closeWith(code int, reason string) {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.s.metrics.closed(true, code, c.tr.kind())
		if err := c.tr.close(code, reason); err != nil {
			c.s.log.Debug("close did not complete", "conn", c.id, "code", code)
		}
		c.cancel()
	})
}

// count updates the connection counters under their lock.
func (s *Server) count(f func(*connCounters)) {
	s.connCounters.mu.Lock()
	f(&s.connCounters)
	s.connCounters.mu.Unlock()
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// newSessionID draws a session id: 16 random bytes, base64url (22
// characters). It names the session to its client, never anything else.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:]) // crypto/rand: never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}
