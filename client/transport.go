package client

import (
	"errors"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The transport (stage 8). A proxy that strips the WebSocket upgrade
// leaves a client that never connects; every peer falls back to HTTP, and
// so does this one. The rule is the Reconnector's (reconnector_fallback.go,
// countTransport): after 3 WebSocket attempts in a row that never reach a
// first ping (never open, or open and stay silent), the core asks the
// driver to probe the server over plain HTTP (EffProbeHTTP); if the driver
// answers HTTPProbe(true), the next dial is an HTTP one (EffDial with
// TransportHTTP: Server-Sent Events for the server's frames, POST for the
// client's), at once. A classified refusal (1013 or a retry-after, 4001,
// 4003/1008, 1000, HTTP 429/503 as a driver reports it) starts the count
// over: the server is steering, not blocked. The three layers are the same
// over HTTP: transport = the stream is open, protocol = pings, service =
// subscribed (or welcome).
//
// While on the fallback, every ReprobeInterval (10 minutes) the core dials
// the preferred transport beside the live socket (a candidate). It is sent
// the ticket, if any, and nothing else; when it has opened and seen its
// first ping it becomes the current socket: the topics are subscribed on
// it with since = their cursors (stage 7 replays the gap), and the old
// socket drains: its responses still settle the requests sent on it (each
// keeps its own timeout) and, until the new socket's service is Up, its
// updates are still delivered (those at or below the cursor are dropped),
// so READY does not flicker and nothing is lost or repeated; then it is
// closed (1000). A candidate that does not open and ping within
// ConnectTimeout + FirstPingTimeout, or closes, is dropped, and the next
// re-probe is an interval later. Losing the live socket drops the
// candidate too.

// Transport names a way to carry the protocol's frames.
type Transport uint8

const (
	// TransportWebSocket: one WebSocket for both directions.
	TransportWebSocket Transport = iota + 1
	// TransportHTTP: an EventSource stream for the server's frames, POST
	// for the client's (docs/http-transport.md).
	TransportHTTP
)

func (t Transport) String() string {
	switch t {
	case TransportWebSocket:
		return "ws"
	case TransportHTTP:
		return "http"
	}
	return "none"
}

// ParseTransport reads a transport's name ("ws" or "http").
func ParseTransport(s string) (Transport, bool) {
	switch s {
	case "ws":
		return TransportWebSocket, true
	case "http":
		return TransportHTTP, true
	}
	return 0, false
}

func validTransports(ts []Transport) error {
	if len(ts) == 0 || len(ts) > 2 {
		return errors.New("client: Transports must name one or two transports")
	}
	for i, t := range ts {
		if t != TransportWebSocket && t != TransportHTTP {
			return errors.New("client: Transports names an unknown transport")
		}
		if i == 1 && t == ts[0] {
			return errors.New("client: Transports names a transport twice")
		}
	}
	return nil
}

// HTTPProbe reports the answer to an EffProbeHTTP: ok says a plain HTTP
// request to the server succeeded. If the client switches to HTTP and is
// waiting for its next dial, it dials now.
func (c *Core) HTTPProbe(ok bool, now time.Time) {
	if c.ended != NotEnded {
		return
	}
	waited := c.rc.is(rcProbeOut)
	if c.rc.ProbeAnswered(ok) {
		c.trace("transport", 0, "the server answers over HTTP: the next dial is an HTTP one")
		if c.transport == Down && !c.tokenWait && len(c.reconnects) > 0 {
			c.reconnects = nil
			c.dial(now)
		}
	} else {
		switch {
		case !waited:
			c.trace("transport", 0, "an HTTP probe answer no probe waited for: ignored")
		case !ok:
			c.trace("transport", 0, "HTTP probe failed (the server does not answer over HTTP either): staying on "+c.rc.NextTransport().String())
		default:
			c.trace("transport", 0, "HTTP probe answered: staying on "+c.rc.NextTransport().String())
		}
	}
	c.after(now)
}

// candidate is the preferred transport's socket dialled beside a live one
// on the fallback.
type candidate struct {
	id       SocketID
	via      Transport
	opened   bool
	served   bool   // it had a welcome before its first ping
	token    string // its ticket, until its open
	tokenAsk bool   // the token hook was asked for it
	expires  int64  // its token's expiry (authenticated's expiresAt, Unix ms), armed as a refresh once it is promoted
	// force: the last candidate was refused with 4001 (its ticket
	// expired), so the next re-probe asks the hook for a fresh one. Set
	// once that candidate is dropped; the next ask takes it.
	force bool
}

// reprobeDue dials the preferred transport beside the live socket.
func (c *Core) reprobeDue(now time.Time) {
	if c.current == 0 || c.transport != Up || c.cand.id != 0 || c.cand.tokenAsk || c.rc.NextTransport() == c.rc.PreferredTransport() || c.follower {
		return // the next socket on the fallback that proves itself arms it again
	}
	if c.cfg.Auth {
		force := c.cand.force
		c.cand.tokenAsk, c.cand.force = true, false
		c.stats.TokensRequested++
		if force {
			c.stats.TokenRefreshes++
		}
		c.dl[dlCandidate] = now.Add(c.cfg.TokenTimeout)
		c.emit(Effect{Kind: EffToken, Force: force})
		return
	}
	c.dialCandidate(now)
}

func (c *Core) dialCandidate(now time.Time) {
	c.nextSocket++
	c.cand.id, c.cand.via = c.nextSocket, c.rc.PreferredTransport()
	c.dl[dlCandidate] = now.Add(c.cfg.ConnectTimeout + c.cfg.FirstPingTimeout)
	c.stats.Dials++
	c.trace("reprobe", c.cand.id, "trying "+c.cand.via.String()+" again beside the "+c.via.String()+" socket")
	c.emit(Effect{Kind: EffDial, Socket: c.cand.id, Transport: c.cand.via, Token: c.cand.token})
}

// candidateEvent handles an event of the candidate socket; it reports
// whether s was the candidate.
func (c *Core) candidateOpened(s SocketID, now time.Time) bool {
	if s == 0 || s != c.cand.id {
		return false
	}
	c.cand.opened = true
	if c.cand.token != "" {
		c.emit(Effect{Kind: EffSend, Socket: s, Frame: protocol.Encode(protocol.Message{Type: protocol.TypeAuth, Token: c.cand.token})})
		c.cand.token = ""
	}
	c.after(now)
	return true
}

func (c *Core) candidateReceived(s SocketID, frame []byte, now time.Time) bool {
	if s == 0 || s != c.cand.id {
		return false
	}
	m, err := protocol.Decode(frame)
	switch {
	case err != nil:
		c.stats.BadFrames++
	case m.Type == protocol.TypeWelcome:
		c.stats.Welcomes++
		c.cand.served = true
	case m.Type == protocol.TypeAuthenticated:
		c.stats.Authenticated++
		c.cand.expires = m.ExpiresAt
	case m.Type == protocol.TypePing && c.cand.opened:
		c.promote(m, now)
	}
	c.after(now)
	return true
}

func (c *Core) candidateClosed(s SocketID, code int, now time.Time) bool {
	if s == 0 || s != c.cand.id {
		return false
	}
	c.stats.Closes++
	c.trace("reprobe-failed", s, c.cand.via.String()+" socket "+s.String()+" closed before its first ping")
	c.dropCandidate(now, false)
	// Its ticket expired: the next re-probe's is a forced fresh one, not
	// a hook's cached ticket the server just refused.
	c.cand.force = code == protocol.CloseTokenExpired
	c.after(now)
	return true
}

// candidateTimedOut: the candidate did not open and ping in time (or its
// token did not come).
func (c *Core) candidateTimedOut(now time.Time) {
	c.trace("reprobe-failed", c.cand.id, "no first ping on the "+c.rc.PreferredTransport().String()+" socket in time")
	c.dropCandidate(now, true)
}

// dropCandidate gives up on the candidate and arms the next re-probe.
func (c *Core) dropCandidate(now time.Time, close bool) {
	if close && c.cand.id != 0 {
		c.emitClose(c.cand.id, protocol.CloseNormal, "reprobe failed")
	}
	c.cand = candidate{}
	c.dl[dlCandidate] = time.Time{}
	c.armReprobe(now)
}

// armReprobe arms the next re-probe, if the client is on its fallback.
func (c *Core) armReprobe(now time.Time) {
	if at, ok := c.rc.NextReprobe(now); ok && c.dl[dlReprobe].IsZero() {
		c.dl[dlReprobe] = at
	}
}

// promote makes the candidate, which saw its first ping (m), the current
// socket; the old one drains.
func (c *Core) promote(m protocol.Message, now time.Time) {
	old, ready := c.current, c.state().Ready
	s, served, expires := c.cand.id, c.cand.served, c.cand.expires
	c.cand = candidate{}
	c.dl[dlCandidate], c.dl[dlReprobe] = time.Time{}, time.Time{}
	c.rc.BackOnPreferred()
	c.stats.Moves++
	c.trace("transport", s, "moved to "+c.rc.NextTransport().String()+" (socket "+s.String()+"); socket "+old.String()+" drains")
	c.clearScope(scopeSocket)
	c.probing = false
	c.current, c.via, c.proven = s, c.rc.NextTransport(), true
	c.buffered, c.stallProbe = 0, 0
	c.draining, c.moving = old, ready
	c.transport, c.served = Up, served
	c.stats.Opens++
	c.heartbeatOpened(now)
	c.onPing(m, now)
	c.serviceOpened(now)
	c.armRefresh(s, expires, now)
}

// moved ends the move once the new socket serves the app (or cannot), and
// closes the old socket once nothing waits on it. Every step ends with it
// (after).
func (c *Core) moved() {
	if c.draining == 0 {
		c.moving = false
		return
	}
	if c.moving && c.transport == Up && c.serviceLevel() == Up {
		c.moving = false
		c.reportMoved()
	}
	if c.moving {
		return
	}
	for _, p := range c.pending {
		if p.epoch == c.draining && p.sent {
			return
		}
	}
	c.emitClose(c.draining, protocol.CloseNormal, "moved to another transport")
	c.draining = 0
}

// drainingReceived takes a frame from the draining socket: responses
// settle their requests, updates are delivered while the move lasts.
func (c *Core) drainingReceived(s SocketID, frame []byte, now time.Time) bool {
	if s == 0 || s != c.draining {
		return false
	}
	m, err := protocol.Decode(frame)
	if err == nil {
		switch {
		case m.Type == protocol.TypeResponse || (m.Type == protocol.TypeError && m.ID != 0):
			c.onResponse(m)
		case m.Type == protocol.TypeUpdate && c.moving:
			c.onUpdate(s, m)
		}
	}
	c.after(now)
	return true
}

func (c *Core) drainingClosed(s SocketID, now time.Time) bool {
	if s == 0 || s != c.draining {
		return false
	}
	c.stats.Closes++
	c.draining, c.moving = 0, false
	c.rejectOn(s, "connection lost", false)
	c.after(now)
	return true
}
