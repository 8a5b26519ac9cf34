//go:build !js

package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/wsready/wsready/protocol"
)

// wsTransport is a connection's I/O over a WebSocket (coder/websocket),
// on its hijacked socket (wsConn, transport_ws_write.go).
//
// Its reads and writes pass coder/websocket a context that never ends
// (context.Background: coder/websocket then sets no context.AfterFunc per
// read and per write); the connection's end is one AfterFunc on the
// conn's context, set by newWSTransport, that closes the socket, and a
// message's MessageTimeout is one timer per connection, reset per message.
type wsTransport struct {
	c  *conn
	ws *websocket.Conn
	gc *wsConn // nil when the ResponseWriter could not be hijacked (tests)

	// The message being read (the reader only, but for the timer's func).
	msgT    *time.Timer // made at the first message, reset for each
	reading atomic.Bool // a message began and has not ended: msgT's func closes the connection

	// The liveness ping's deadline (gc set): armed by liveness, stopped by
	// the pong (coder/websocket's OnPongReceived, on the reader goroutine).
	pingT     *time.Timer
	pingHolds atomic.Uint64 // s.holds() when the ping went out
	pingHeard atomic.Uint64 // heard when the ping went out

	// heard counts the frames read from the peer (a message begun, or a
	// pong): proof of life the sweep need not ask for. heardTick is heard
	// at the sweep's previous tick (the heartbeat goroutine's only).
	heard     atomic.Uint64
	heardTick uint64

	// stalled: the connection was counted as stalled (Limits.Stalled counts
	// connections: after the first write past the deadline every later one
	// fails with the same error, the gate's saved werr).
	stalled atomic.Bool
}

// stall counts the connection as stalled, once.
func (t *wsTransport) stall() {
	if t.stalled.CompareAndSwap(false, true) {
		t.c.s.count(func(k *connCounters) { k.stalled++ })
	}
}

// livenessPing is the sweep's WebSocket ping as a server sends it (FIN,
// opcode 9, unmasked, no payload). It goes through the send queue like any
// frame and its writer writes it to the socket itself (write), between two
// whole frames; a pong to it, or to anything, is proof of life.
var livenessPing = []byte{0x89, 0x00}

func isLivenessPing(f []byte) bool { return len(f) == 2 && &f[0] == &livenessPing[0] }

// newWSTransport makes the transport of c over ws (gc: its hijacked
// socket, when the hijack went through hijackWriter) and ties the socket's life to
// c's context.
func newWSTransport(c *conn, ws *websocket.Conn, gc *wsConn) *wsTransport {
	t := &wsTransport{c: c, ws: ws, gc: gc}
	if gc != nil {
		gc.failed = t.backlogFailed
		gc.drained = c.writeInline
		t.pingT = time.AfterFunc(time.Hour, t.pongLate)
		t.pingT.Stop()
	}
	context.AfterFunc(c.ctx, t.closeSocket)
	return t
}

// closeSocket closes the socket at once, whatever coder/websocket is doing
// (CloseNow during a close handshake would wait for the handshake): what
// is blocked on it fails, and the reader ends the connection.
func (t *wsTransport) closeSocket() {
	if t.gc != nil {
		t.gc.abort()
		return
	}
	t.ws.CloseNow()
}

func (t *wsTransport) inline() bool { return t.gc != nil && t.gc.raw != nil }
func (t *wsTransport) park() bool   { return t.gc != nil && t.gc.park() }

// backlogFailed is the socket's drainer failing to write the
// backlog: as a write of the send queue's that fails, it ends the
// connection (a write that made no progress within WriteTimeout is
// counted as stalled).
func (t *wsTransport) backlogFailed(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.stall()
	}
	t.c.cancel() // closes the socket (closeSocket)
}

func (t *wsTransport) kind() transportKind { return transportWS }

// read reads one message, then decodes nothing: the conn does. It reads
// with Reader and io.ReadAll, not wsjson.Read, which would break three
// things the protocol promises: wsjson.Read ignores the message type (a
// binary frame must get not_text, whatever its bytes); it takes one
// context for waiting and for reading (an idle connection must never time
// out, while a message begun must end within MessageTimeout); and it
// closes the connection with 1007 when json.Unmarshal fails (malformed
// JSON gets a bad_json error frame on a connection that stays).
//
// A close frame from the peer is counted here (its code); an unmasked
// frame is answered with 1002 before the error ends the connection.
func (t *wsTransport) read(ctx context.Context) ([]byte, bool, error) {
	c := t.c
	typ, data, err := t.readMessage(ctx)
	if err != nil {
		if code := websocket.CloseStatus(err); code != -1 {
			c.s.count(func(k *connCounters) { k.peerCloses.add(int(code)) })
			c.s.metrics.closed(false, int(code), transportWS)
		}
		if unmasked(err) {
			// RFC 6455 5.1: a server that receives an unmasked frame
			// closes the connection, and may say 1002 first.
			// coder/websocket drops the connection without a word
			// (it does send 1002 for its other protocol errors), so
			// the close frame is sent here, before run drops it.
			c.closeWith(int(websocket.StatusProtocolError), "client frames must be masked")
		}
		return nil, false, err
	}
	return data, typ != websocket.MessageText, nil
}

// readMessage waits as long as it takes for a message to begin, then allows
// MessageTimeout for the rest of it: a fragment that never finishes closes
// the connection.
func (t *wsTransport) readMessage(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, r, err := t.ws.Reader(context.Background()) // the connection's end closes the socket
	if err != nil {
		return 0, nil, err
	}
	t.heard.Add(1)
	t.reading.Store(true)
	if t.msgT == nil {
		t.msgT = time.AfterFunc(t.c.s.opts.MessageTimeout, t.messageExpired)
	} else {
		t.msgT.Reset(t.c.s.opts.MessageTimeout)
	}
	b, err := io.ReadAll(r)
	t.msgT.Stop()
	timedOut := !t.reading.CompareAndSwap(true, false)
	if err != nil && timedOut {
		t.c.s.count(func(k *connCounters) { k.messageTimeouts++ })
	}
	return typ, b, err
}

// messageExpired is MessageTimeout's end while a message is read.
func (t *wsTransport) messageExpired() {
	if t.reading.CompareAndSwap(true, false) {
		t.closeSocket()
	}
}

// unmasked reports whether err is coder/websocket's refusal of an
// unmasked client frame. The library has no sentinel error for it, only
// this text (v1.8.15, read.go); TestAnUnmaskedFrameIsAnsweredWith1002
// fails if an upgrade rewords it.
func unmasked(err error) bool {
	return strings.Contains(err.Error(), "received unmasked frame from client")
}

// write sends one frame. A write that made no progress within
// WriteTimeout (the gate's deadline) leaves a reader nothing more can
// reach, not even a close frame: the socket is dropped.
func (t *wsTransport) write(ctx context.Context, frame []byte) error {
	var err error
	if isLivenessPing(frame) {
		// Beneath coder/websocket, whose frames reach the socket whole
		// (each flushed in one Write: the queue's by this writer, between
		// two of which this one runs; its own control frames fit its buffer).
		_, err = t.gc.Write(frame)
	} else {
		err = t.ws.Write(context.Background(), websocket.MessageText, frame) // the connection's end closes the socket
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		t.stall()
		t.ws.CloseNow()
	}
	return err
}

// close runs the close handshake; coder/websocket bounds it (5 s).
func (t *wsTransport) close(code int, reason string) error {
	return t.ws.Close(websocket.StatusCode(code), reason)
}

func (t *wsTransport) closeNow() {
	if t.pingT != nil {
		t.pingT.Stop()
	}
	t.ws.CloseNow()
}

// liveness is the sweep's tick for this connection (sweep.go). A peer
// heard from since the previous tick is alive: nothing is sent. A silent
// one is sent a WebSocket protocol ping, unless one is outstanding. Through
// the gate it is queued like any frame (livenessPing) and its pong comes to
// pong: no goroutine waits for it. Without the gate (tests) a goroutine
// pings and ends with the pong, or with the connection.
func (t *wsTransport) liveness() {
	c := t.c
	s := c.s
	if s.holding() {
		return
	}
	if c.slotWait.Load() {
		return // the server holds the reader (requests.go): its silence is not the peer's
	}
	if h := t.heardN(); h != t.heardTick {
		t.heardTick = h
		return
	}
	if !c.pinging.CompareAndSwap(false, true) {
		return
	}
	t.pingHeard.Store(t.heardN())
	if t.gc != nil {
		t.pingHolds.Store(s.holds())
		t.pingT.Reset(s.pongWithin())
		c.offer(livenessPing)
		return
	}
	holds := s.holds()
	done := make(chan struct{})
	var deadline *time.Timer
	deadline = time.AfterFunc(time.Hour, func() {
		select {
		case <-done:
			return
		default:
		}
		if s.holding() || s.holds() != holds || c.slotWait.Load() || t.heardN() != t.pingHeard.Load() {
			// A switch held the traffic, or the peer spoke: not dead.
			// The ping stays outstanding, so the deadline starts again.
			holds = s.holds()
			t.pingHeard.Store(t.heardN())
			deadline.Reset(s.pongWithin())
			return
		}
		c.sweepClose()
	})
	deadline.Reset(s.pongWithin()) // deadline is set before its func can run

	s.wg.Add(1) // the connection's handler is counted while this runs: no Add from zero
	go func() {
		defer s.wg.Done()
		t.ws.Ping(context.Background()) // returns on the pong, or when the connection closes
		close(done)
		deadline.Stop()
		c.pinging.Store(false)
	}()
}

// heardN is heard plus the reader's waits for a request slot that ended
// (requests.go): while it waits it reads nothing, pongs included, so a
// wait that ended since a tick or a ping counts as hearing from the peer.
func (t *wsTransport) heardN() uint64 { return t.heard.Load() + t.c.slotWaits.Load() }

// pongTo routes coder/websocket's OnPongReceived to the connection's
// transport once it is registered (before its reader starts). A type of
// its own: the callback lives as long as the connection, and must not keep
// the handshake's ResponseWriter (net/http's 4 KiB buffers) alive with it.
type pongTo struct{ tr *wsTransport }

func (p *pongTo) pong(context.Context, []byte) {
	if p.tr != nil {
		p.tr.pong()
	}
}

// pong is coder/websocket's OnPongReceived (the reader goroutine): the
// peer is alive. Any pong counts, the sweep's or one the peer sends
// unasked.
func (t *wsTransport) pong() {
	t.heard.Add(1)
	if t.gc != nil && t.c.pinging.CompareAndSwap(true, false) {
		t.pingT.Stop()
	}
}

// pongLate is the liveness ping's deadline: no pong within one sweep
// interval plus SweepGrace closes the connection at once, unless the peer
// was heard from meanwhile (a message: it is alive, its pong is late) or a
// switch held the traffic (not the peer's fault). Either way the next
// tick decides.
func (t *wsTransport) pongLate() {
	c, s := t.c, t.c.s
	if !c.pinging.Load() {
		return
	}
	if s.holding() || s.holds() != t.pingHolds.Load() || c.slotWait.Load() || t.heardN() != t.pingHeard.Load() {
		c.pinging.Store(false)
		return
	}
	c.sweepClose()
}

func (t *wsTransport) peerGone() bool { return t.gc != nil && t.gc.peerGone.Load() }

// deafen shrinks (on) the socket's receive buffer while the Deaf switch
// holds its reads, so the client's sends stall after a few KiB instead of
// the megabytes loopback TCP would take in; off gives it room again.
func (t *wsTransport) deafen(on bool) {
	if t.gc == nil {
		return
	}
	rb, ok := t.gc.Conn.(interface{ SetReadBuffer(int) error })
	if !ok {
		return
	}
	if on {
		rb.SetReadBuffer(deafReadBuffer)
	} else {
		rb.SetReadBuffer(awakeReadBuffer)
	}
}

const (
	deafReadBuffer  = 4 << 10
	awakeReadBuffer = 1 << 20
)

// serveWS is the WebSocket endpoint.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r) {
		// Said before admission, so a plain GET (a browser tab, a probe on
		// the wrong path) is neither counted as a handshake nor takes one.
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		writeJSON(w, http.StatusUpgradeRequired, map[string]string{
			"error": "this is a WebSocket endpoint: open it with a WebSocket client (Connection: Upgrade, Upgrade: websocket)"})
		return
	}
	f := s.hook()
	if f != nil && f.UpgradeBlocked() {
		// The Block WebSocket switch: refused as a proxy that strips
		// upgrades would, before anything else (not counted as a
		// handshake: the server would never see it).
		s.metrics.handshake(outBlocked)
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "WebSocket upgrades are blocked (the Block WebSocket switch): use the HTTP transport"})
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
		// A browser sees a refused handshake only as a bare 1006: accept
		// and close with 1008 and a fixed reason the page can show.
		s.metrics.handshake(outOrigin)
		// At debug (-v), without the origin or the address: the origin is
		// the peer's text, and no log line here carries a remote address.
		s.logs.Debug("websocket origin refused")
		if ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}); err == nil {
			ws.Close(websocket.StatusPolicyViolation, protocol.ReasonOriginNotAllowed)
		}
		return
	}
	ip := s.clientIP(r) // behind TrustedProxies, the client's (proxy.go)
	if ref := s.admit(r, ip); ref != nil {
		s.refuse(w, r, ref)
		return
	}
	// Before the upgrade, so the hook sees the request as any handler
	// would; its refusal is a close after it, which a browser can read.
	id, refuseCode, refuseWhy := s.identify(r)
	if refuseCode == 0 && id.Tenant != "" {
		if ref := s.tenantHandshakeRefusal(id); ref != nil { // the tenant's handshake ceiling (tenants.go)
			s.release(ip)
			s.refuse(w, r, ref)
			return
		}
	}
	fw := &hijackWriter{ResponseWriter: w, hold: s.freezeGate(), writeTimeout: s.opts.WriteTimeout}
	pt := &pongTo{}
	ws, err := websocket.Accept(fw, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns, OnPongReceived: pt.pong})
	if err != nil {
		s.release(ip)
		// The error can quote the peer's headers: log only that it happened.
		s.logs.Debug("handshake rejected")
		return
	}
	ws.SetReadLimit(protocol.MaxFrameBytes)
	if f != nil && f.Overloaded() {
		// Accepted and closed at once: a browser cannot read an HTTP
		// refusal's status, but it reads a close code and reason.
		s.release(ip)
		s.count(func(k *connCounters) { k.overloaded++ })
		s.metrics.handshake(outOverload)
		ws.Close(protocol.CloseTryAgainLater, protocol.RetryAfterReason(s.faultSettings().OverloadRetryAfter))
		return
	}
	if refuseCode != 0 {
		s.release(ip)
		s.metrics.handshake(outAuth)
		ws.Close(websocket.StatusCode(refuseCode), refuseWhy)
		return
	}
	c, late := s.register(func(c *conn) transport {
		t := newWSTransport(c, ws, fw.gated)
		pt.tr = t // before the reader starts: pongs come to it
		return t
	}, r.RemoteAddr, ip, id)
	if c == nil {
		s.release(ip)
		ws.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	s.metrics.handshake(outAccepted)
	c.identified()
	s.closeIfLate(c, late)
	// The connection's reader is a goroutine of its own and the handler
	// returns: net/http's goroutine ends, and with it what it held for the
	// connection's life (the request, the response and its buffer, a stack
	// grown by the handshake). Still one goroutine per connection.
	go func() {
		defer s.wg.Done() // register counted this connection
		c.run()
	}()
}

// isUpgrade reports whether r asks for a WebSocket upgrade: Connection
// carries the token upgrade and Upgrade the token websocket (RFC 6455 4.1,
// tokens compared case-insensitively). coder/websocket checks the rest.
func isUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

// headerHasToken reports whether a comma-separated header holds token.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
