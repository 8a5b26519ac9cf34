//go:build !js

package server

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The demo's failure switches: what each does to the server and its
// connections, and the API that flips them.

// startFlap arms the Flapping close: FlapAfter from now, if the switch is
// still on then. One per connection at a time.
func (c *conn) startFlap() {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.timersOff || c.flapT != nil {
		return
	}
	c.flapT = time.AfterFunc(c.s.opts.FlapAfter, func() {
		c.timerMu.Lock()
		c.flapT = nil
		c.timerMu.Unlock()
		s := c.s
		s.mu.Lock()
		on := s.flapping
		s.mu.Unlock()
		if on { // switched off meanwhile: the connection stays
			c.closeAsync(protocol.CloseFlapping, "flapping")
		}
	})
}

// jitterPing queues the ping a random 0 to JitterMax from now (the Jitter
// switch); a ping still held when the next is due goes at once.
func (c *conn) jitterPing() {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.timersOff {
		return
	}
	if c.jitterT != nil && c.jitterT.Stop() {
		c.offer(c.s.ping)
	}
	c.jitterT = time.AfterFunc(time.Duration(rand.Int64N(int64(c.s.opts.JitterMax))), func() {
		if !c.s.gate.isFrozen() {
			c.offer(c.s.ping)
		}
	})
}

// stopTimers stops the connection's Flapping and Jitter timers; none is
// armed after.
func (c *conn) stopTimers() {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	c.timersOff = true
	if c.flapT != nil {
		c.flapT.Stop()
	}
	if c.jitterT != nil {
		c.jitterT.Stop()
	}
}

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

func (s *Server) faultsLocked(now time.Time, frozen bool) Faults {
	return Faults{Freeze: frozen, ServiceDown: s.serviceDown, SlowReplies: s.slowReplies,
		Flapping: s.flapping, Restart: now.Before(s.restartUntil), ShortTokens: s.shortTokens, Overload: s.overload,
		Jitter: s.jitter.Load()}
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
