//go:build !js

package server

import (
	"net/http"
	"sort"
	"time"

	"github.com/wsready/wsready/protocol"
)

// ConnStats describes one open connection.
type ConnStats struct {
	ID         uint64    `json:"id"`
	OpenedAt   time.Time `json:"openedAt"`
	Remote     string    `json:"remote,omitempty"` // only in Demo mode: the peer, or behind TrustedProxies the client the limits key by
	Transport  string    `json:"transport"`        // "ws" (WebSocket) or "sse" (the HTTP transport)
	Subscribed bool      `json:"subscribed"`
	Frozen     bool      `json:"frozen"`
	FramesIn   uint64    `json:"framesIn"`
	ErrorsSent uint64    `json:"errorsSent"`
}

// Limits counts what the server's bounds did, since start.
type Limits struct {
	RefusedFull     uint64 `json:"refusedFull"`     // handshakes refused at MaxConns
	RefusedPerIP    uint64 `json:"refusedPerIP"`    // handshakes refused at MaxConnsPerIP
	SlowConsumer    uint64 `json:"slowConsumer"`    // connections closed with 4429 (queue over its byte bound)
	Stalled         uint64 `json:"stalled"`         // connections dropped when a write made no progress within WriteTimeout
	MessageTimeouts uint64 `json:"messageTimeouts"` // connections closed when a message was not finished within MessageTimeout
	PeerGone        uint64 `json:"peerGone"`        // frozen connections ended because the peer went away
	Overloaded      uint64 `json:"overloaded"`      // handshakes closed with 1013 by the Overload switch
	RefusedRate     uint64 `json:"refusedRate"`     // handshakes refused over the handshake ceiling (fleet or tenant)
	SweepClosed     uint64 `json:"sweepClosed"`     // connections closed by the liveness sweep
}

// Stats is the server's own accounting, as StatsHandler returns it (the
// demo's GET /api/stats adds the demo's part: server/demo's Stats).
type Stats struct {
	Now              time.Time   `json:"now"`
	Demo             bool        `json:"demo"`    // Options.Demo: the demo's switches can be changed over HTTP
	Slots            bool        `json:"slots"`   // refusals, Restart and drains carry reconnect slots
	Publish          bool        `json:"publish"` // Options.Publish: clients may publish (where Authorize allows)
	Open             int         `json:"open"`
	Subscribed       int         `json:"subscribed"`
	Handshakes       uint64      `json:"handshakes"`       // since start
	HandshakesWindow uint64      `json:"handshakesWindow"` // since ResetAt
	RefusedWindow    uint64      `json:"refusedWindow"`    // since ResetAt
	ResetAt          time.Time   `json:"resetAt"`
	Node             string      `json:"node,omitempty"` // Options.Node
	PingIntervalMs   int64       `json:"pingIntervalMs"`
	Limits           Limits      `json:"limits"`
	PeerCloses       CloseCounts `json:"peerCloses"` // close codes clients sent, since start
	Auth             AuthStats   `json:"auth"`
	Connections      []ConnStats `json:"connections"`
}

// CloseCounts counts close frames received from clients by code. Codes a
// client may choose freely are folded into Other, so a peer cannot grow it.
type CloseCounts struct {
	Normal           uint64 `json:"1000"`
	GoingAway        uint64 `json:"1001"`
	HeartbeatTimeout uint64 `json:"4408"`
	Other            uint64 `json:"other"`
}

func (c *CloseCounts) add(code int) {
	switch code {
	case protocol.CloseNormal:
		c.Normal++
	case protocol.CloseGoingAway:
		c.GoingAway++
	case protocol.CloseHeartbeatTimeout:
		c.HeartbeatTimeout++
	default:
		c.Other++
	}
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	now := s.opts.Now()
	frozen := s.freezeGate().isFrozen()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &s.counters
	cc := &s.connCounters
	cc.mu.Lock()
	defer cc.mu.Unlock()
	st := Stats{
		Now: now, Demo: s.opts.Demo, Slots: !s.opts.NoSlots, Publish: s.opts.Publish, Open: len(s.conns), Handshakes: k.handshakes,
		HandshakesWindow: k.handshakesWindow, RefusedWindow: k.refused,
		ResetAt: k.resetAt, Node: s.opts.Node, PingIntervalMs: s.opts.PingInterval.Milliseconds(),
		Limits: Limits{RefusedFull: k.refusedFull, RefusedPerIP: k.refusedPerIP, SlowConsumer: cc.slowConsumer,
			Stalled: cc.stalled, MessageTimeouts: cc.messageTimeouts, PeerGone: cc.peerGone, Overloaded: cc.overloaded,
			RefusedRate: k.refusedRate, SweepClosed: cc.sweepClosed},
		PeerCloses:  cc.peerCloses,
		Connections: make([]ConnStats, 0, len(s.conns)),
	}
	st.Auth = s.auth.stats(now, s.opts.Demo)
	st.Auth.Mode = s.opts.Auth
	st.Auth.Revoked = s.revocations.count(now) // Server.Revoke's, every node's (control.go)
	for _, c := range s.conns {
		n := c.subscriptions()
		if n > 0 {
			st.Subscribed++
		}
		cs := ConnStats{ID: c.id, OpenedAt: c.openedAt, Subscribed: n > 0, Transport: c.tr.kind().String(),
			Frozen: frozen, FramesIn: c.framesIn.Load(), ErrorsSent: c.errorsOut.Load()}
		if s.opts.Demo {
			cs.Remote = c.remote
			if c.ip != remoteIP(c.remote) {
				cs.Remote = c.ip // behind TrustedProxies: the client the limits key by, not the proxy
			}
		}
		st.Connections = append(st.Connections, cs)
	}
	sort.Slice(st.Connections, func(i, j int) bool { return st.Connections[i].ID < st.Connections[j].ID })
	return st
}

// StatsHandler answers GET with Stats as JSON; ?connections=false leaves
// out the per-connection list. Behind the Host check; GET and HEAD only.
// wsready serve mounts it at /api/stats.
func (s *Server) StatsHandler() http.Handler {
	return s.httpGuard(http.HandlerFunc(s.serveStats), readMethods...)
}

// serveStats is GET /api/stats; ?connections=false leaves out the
// per-connection list (a poller that needs the counters only).
func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	st := s.Stats()
	if r.URL.Query().Get("connections") == "false" {
		st.Connections = nil
	}
	writeJSON(w, http.StatusOK, st)
}
