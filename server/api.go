//go:build !js

package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Faults is the state of the failure switches, as GET /api/faults returns
// it. In a POST every field is optional: absent fields keep their state.
// Restart and endSession are triggers: true acts, false is ignored;
// Restart reads true while refusing. revoke takes a client id to refuse
// with 4003 ("" clears the list); Revoked counts the ids refused.
type Faults struct {
	Freeze      bool `json:"freeze"`
	ServiceDown bool `json:"serviceDown"`
	SlowReplies bool `json:"slowReplies"`
	Flapping    bool `json:"flapping"`
	Restart     bool `json:"restart"`
	ShortTokens bool `json:"shortTokens"` // tickets live ShortTicketLife
	Overload    bool `json:"overload"`    // every handshake is closed with 1013 and a retry-after
	Jitter      bool `json:"jitter"`      // each ping is delayed by a random 0 to JitterMax (800 ms)
	Revoked     int  `json:"revoked"`
}

type faultsPatch struct {
	Freeze      *bool   `json:"freeze"`
	ServiceDown *bool   `json:"serviceDown"`
	SlowReplies *bool   `json:"slowReplies"`
	Flapping    *bool   `json:"flapping"`
	Restart     *bool   `json:"restart"`
	ShortTokens *bool   `json:"shortTokens"`
	Overload    *bool   `json:"overload"`
	Jitter      *bool   `json:"jitter"`
	EndSession  *bool   `json:"endSession"`
	Revoke      *string `json:"revoke"`
}

// ConnStats describes one open connection.
type ConnStats struct {
	ID         uint64    `json:"id"`
	OpenedAt   time.Time `json:"openedAt"`
	Remote     string    `json:"remote,omitempty"` // only in Demo mode
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

// Stats is the server's own accounting, as GET /api/stats returns it.
type Stats struct {
	Now              time.Time   `json:"now"`
	Demo             bool        `json:"demo"`  // the failure switches can be changed
	Slots            bool        `json:"slots"` // refusals, Restart and drains carry reconnect slots
	Open             int         `json:"open"`
	Subscribed       int         `json:"subscribed"`
	Handshakes       uint64      `json:"handshakes"`       // since start
	HandshakesWindow uint64      `json:"handshakesWindow"` // since ResetAt
	RefusedWindow    uint64      `json:"refusedWindow"`    // since ResetAt
	ResetAt          time.Time   `json:"resetAt"`
	FeedSeq          int64       `json:"feedSeq"`        // the last feed seq this node produced (0 with NoFeed)
	Node             string      `json:"node,omitempty"` // Options.Node
	PingIntervalMs   int64       `json:"pingIntervalMs"`
	Faults           Faults      `json:"faults"`
	RestartUntil     *time.Time  `json:"restartUntil"` // while Restart refuses: when it accepts again
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
	frozen := s.gate.isFrozen()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &s.counters
	cc := &s.connCounters
	cc.mu.Lock()
	defer cc.mu.Unlock()
	st := Stats{
		Now: now, Demo: s.opts.Demo, Slots: !s.opts.NoSlots, Open: len(s.conns), Handshakes: k.handshakes,
		HandshakesWindow: k.handshakesWindow, RefusedWindow: k.refused,
		ResetAt: k.resetAt, FeedSeq: s.feedSeq.Load(), Node: s.opts.Node, PingIntervalMs: s.opts.PingInterval.Milliseconds(),
		Faults: s.faultsLocked(now, frozen),
		Limits: Limits{RefusedFull: k.refusedFull, RefusedPerIP: k.refusedPerIP, SlowConsumer: cc.slowConsumer,
			Stalled: cc.stalled, MessageTimeouts: cc.messageTimeouts, PeerGone: cc.peerGone, Overloaded: cc.overloaded,
			RefusedRate: k.refusedRate, SweepClosed: cc.sweepClosed},
		PeerCloses:  cc.peerCloses,
		Connections: make([]ConnStats, 0, len(s.conns)),
	}
	if now.Before(s.restartUntil) {
		until := s.restartUntil
		st.RestartUntil = &until
	}
	st.Auth = s.auth.stats(now, s.opts.Demo)
	st.Auth.Mode = s.opts.Auth
	st.Faults.Revoked = st.Auth.Revoked
	for _, c := range s.conns {
		n := c.subscriptions()
		if n > 0 {
			st.Subscribed++
		}
		cs := ConnStats{ID: c.id, OpenedAt: c.openedAt, Subscribed: n > 0,
			Frozen: frozen, FramesIn: c.framesIn.Load(), ErrorsSent: c.errorsOut.Load()}
		if s.opts.Demo {
			cs.Remote = c.remote
		}
		st.Connections = append(st.Connections, cs)
	}
	sort.Slice(st.Connections, func(i, j int) bool { return st.Connections[i].ID < st.Connections[j].ID })
	return st
}

func (s *Server) faultsLocked(now time.Time, frozen bool) Faults {
	return Faults{Freeze: frozen, ServiceDown: s.serviceDown, SlowReplies: s.slowReplies,
		Flapping: s.flapping, Restart: now.Before(s.restartUntil), ShortTokens: s.shortTokens, Overload: s.overload,
		Jitter: s.jitter.Load()}
}

// ResetCounters zeroes the windowed attempt counters so a test can measure
// one scenario.
func (s *Server) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters.handshakesWindow = 0
	s.counters.refused = 0
	s.counters.resetAt = s.opts.Now()
	s.auth.forgetRejections() // a demo that looped on Revoke starts clean
}

// SetFreeze turns the Freeze switch on or off.
func (s *Server) SetFreeze(on bool) {
	s.gate.set(on)
	s.log.Info("switch", "freeze", on)
}

// SetServiceDown turns the Service down switch on or off. On: every
// subscription is dropped with an unsubscribed frame. Off: the service
// works again for clients that subscribe again.
func (s *Server) SetServiceDown(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serviceDown == on {
		return
	}
	s.serviceDown = on
	if on {
		for _, c := range s.conns {
			c.dropSubscriptions("service_unavailable")
		}
	}
	s.log.Info("switch", "serviceDown", on)
}

// SetSlowReplies turns the Slow replies switch on or off.
func (s *Server) SetSlowReplies(on bool) {
	s.mu.Lock()
	s.slowReplies = on
	s.mu.Unlock()
	s.log.Info("switch", "slowReplies", on)
}

// SetFlapping turns the Flapping switch on or off. On: every connection,
// open or new, is closed FlapAfter after it is accepted (or after the
// switch, for those already open).
func (s *Server) SetFlapping(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flapping = on
	if on {
		for _, c := range s.conns {
			c.startFlap()
		}
	}
	s.log.Info("switch", "flapping", on)
}

// SetJitter turns the Jitter switch on or off. On: each ping is sent a
// random 0 to JitterMax after its tick, so pings arrive unevenly, as from a
// loaded server; nothing else changes. A client must not take it for a
// dead server.
func (s *Server) SetJitter(on bool) {
	s.jitter.Store(on)
	s.log.Info("switch", "jitter", on)
}

// Restart drops every connection with 1012 and refuses new ones for
// RestartDowntime, as a redeploy would.
func (s *Server) Restart() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.restartUntil = s.opts.Now().Add(s.opts.RestartDowntime)
	// Started under s.mu: each connection's handler is still counted in
	// s.wg, so closeAsync's Add never races Close's Wait. Each carries its
	// reconnect slot, spread under the admission rate after the downtime.
	now := s.opts.Now()
	for _, c := range s.conns {
		c.closeAsync(protocol.CloseServiceRestart, slotText(s.slotAfter(now, s.restartUntil)))
	}
	s.mu.Unlock()
	s.log.Info("switch", "restart", true, "downtime", s.opts.RestartDowntime)
}

// SetShortTokens turns the Short tokens switch on or off. On: new tickets
// live ShortTicketLife, and every ticket, old ones included, is good for at
// most that long after it was issued; connections past it close with 4001.
func (s *Server) SetShortTokens(on bool) {
	s.mu.Lock()
	s.shortTokens = on
	var authed []*conn
	for _, c := range s.conns {
		if c.clientID != "" {
			authed = append(authed, c)
		}
	}
	s.mu.Unlock()
	for _, c := range authed {
		s.mu.Lock()
		t := c.ticket
		s.mu.Unlock()
		c.armExpiry(s.effectiveExpiry(t))
	}
	s.log.Info("switch", "shortTokens", on)
}

// Revoke refuses client id with 4003 from now on and closes its open
// connections; "" clears the list. It fails when the list is full.
func (s *Server) Revoke(id string) error {
	if id != "" && !validClientID(id) {
		return errors.New("revoke: a client id is 1 to 64 of A-Z a-z 0-9 _ -")
	}
	if !s.auth.revoke(id) {
		return errors.New("revoke: the revoked list is full")
	}
	s.mu.Lock()
	if id != "" {
		for _, c := range s.conns {
			if c.clientID == id {
				c.closeAsync(protocol.CloseForbidden, "forbidden")
			}
		}
	}
	s.mu.Unlock()
	s.log.Info("switch", "revoke", id != "")
	return nil
}

// EndSession closes every connection with 1000: the server ends the
// sessions for good.
func (s *Server) EndSession() {
	s.mu.Lock()
	for _, c := range s.conns {
		c.closeAsync(protocol.CloseNormal, "session ended")
	}
	s.mu.Unlock()
	s.log.Info("switch", "endSession", true)
}

// SetOverload turns the Overload switch on or off. On: every connection,
// open or new, is closed with 1013 and "retry-after-ms=N".
func (s *Server) SetOverload(on bool) {
	s.mu.Lock()
	s.overload = on
	if on {
		reason := protocol.RetryAfterReason(s.opts.OverloadRetryAfter)
		for _, c := range s.conns {
			c.closeAsync(protocol.CloseTryAgainLater, reason)
		}
	}
	s.mu.Unlock()
	s.log.Info("switch", "overload", on)
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

func (s *Server) serveFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats().Faults)
}

func (s *Server) setFaults(w http.ResponseWriter, r *http.Request) {
	var p faultsPatch
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		msg := "bad JSON: " + err.Error()
		if strings.Contains(err.Error(), "unknown field") {
			msg = "unknown switch: " + strings.TrimPrefix(err.Error(), "json: unknown field ") + "; switches are freeze, serviceDown, slowReplies, flapping, restart, shortTokens, overload, jitter, endSession, revoke"
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": msg})
		return
	}
	if dec.More() {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad JSON: trailing data"})
		return
	}
	if p.Freeze != nil {
		s.SetFreeze(*p.Freeze)
	}
	if p.ServiceDown != nil {
		s.SetServiceDown(*p.ServiceDown)
	}
	if p.SlowReplies != nil {
		s.SetSlowReplies(*p.SlowReplies)
	}
	if p.Jitter != nil {
		s.SetJitter(*p.Jitter)
	}
	if p.Flapping != nil {
		s.SetFlapping(*p.Flapping)
	}
	if p.Restart != nil && *p.Restart {
		s.Restart()
	}
	if p.ShortTokens != nil {
		s.SetShortTokens(*p.ShortTokens)
	}
	if p.Overload != nil {
		s.SetOverload(*p.Overload)
	}
	if p.EndSession != nil && *p.EndSession {
		s.EndSession()
	}
	if p.Revoke != nil {
		if err := s.Revoke(*p.Revoke); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, s.Stats().Faults)
}

func (s *Server) resetCounters(w http.ResponseWriter, r *http.Request) {
	s.ResetCounters()
	writeJSON(w, http.StatusOK, s.Stats())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, errors.New("encode: "+err.Error()).Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
