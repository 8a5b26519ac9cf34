//go:build !js

package server

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/wsready/wsready/protocol"
	"github.com/wsready/wsready/server/internal/faults"
)

// The server's side of the demo's failure switches (server/demo): the
// fault hook (faults.Hook) it consults at a few named points, and the
// Control the demo acts through. A Server alone has neither: s.fx is nil
// until the demo attaches (faults.Attach), so each point costs one atomic
// load and takes no lock, waits at no gate, arms no timer.
//
// The points, by what they decide:
//
//	accept      transport_ws.go (UpgradeBlocked, Overloaded), transport_http.go
//	            (Overloaded), admission.go (RefusingUntil), server.go (Flapping;
//	            the Deaf gate)
//	read, write conn.go (the Deaf gate), transport_ws_write.go, sse.go,
//	            sse_raw.go (the Freeze gate, faults_gate.go)
//	replies     requests.go (DropsService, DelaysReplies), topics.go
//	            (DropsService, OwnsTopic)
//	pings       heartbeat.go (the Freeze gate, JittersPings), sweep.go (both gates)
//	tickets     auth_tickets.go, auth_connect.go (ShortensTickets)
//	observation metrics.go (FeedSeq)

// faultState is what the demo's attach sets: its hook, and the two gates
// the server's own I/O paths wait at.
type faultState struct {
	hook   faults.Hook
	set    faults.Settings // the hook's, asked once
	freeze gate            // Freeze: connections carry nothing, both ways
	deaf   gate            // Deaf: what clients send goes unread
}

func init() { faults.Attach = attachFaults }

// attachFaults is faults.Attach: it sets srv's fault hook, once.
func attachFaults(srv any, make func(faults.Control) faults.Hook) faults.Hook {
	s := srv.(*Server)
	s.fxOnce.Do(func() {
		fs := &faultState{}
		fs.hook = make(faultControl{s: s, fs: fs})
		fs.set = fs.hook.Settings()
		s.fx.Store(fs)
	})
	return s.hook()
}

// hook returns the fault hook, nil without the demo.
func (s *Server) hook() faults.Hook {
	if fs := s.fx.Load(); fs != nil {
		return fs.hook
	}
	return nil
}

// faultSettings are the switches' durations; zero without the demo (no
// switch is on then, so none is asked for).
func (s *Server) faultSettings() faults.Settings {
	if fs := s.fx.Load(); fs != nil {
		return fs.set
	}
	return faults.Settings{}
}

// freezeGate is the Freeze gate; nil (never held) without the demo.
func (s *Server) freezeGate() *gate {
	if fs := s.fx.Load(); fs != nil {
		return &fs.freeze
	}
	return nil
}

// deafGate is the Deaf gate; nil (never held) without the demo.
func (s *Server) deafGate() *gate {
	if fs := s.fx.Load(); fs != nil {
		return &fs.deaf
	}
	return nil
}

// acceptedLocked applies the switches to c, just registered: Flapping's
// timer, Deaf's shrunk receive buffer. Called with s.mu held, so a switch
// flipped meanwhile (under s.mu too) sees c, or c sees it.
func (s *Server) acceptedLocked(c *conn, f faults.Hook) {
	if f.Flapping() {
		c.startFlap()
	}
	if ws, ok := c.tr.(*wsTransport); ok && s.deafGate().isFrozen() {
		ws.deafen(true)
	}
}

// startFlap arms the Flapping close: FlapAfter from now, if the switch is
// still on then. One per connection at a time.
func (c *conn) startFlap() {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.timersOff || c.flapT != nil {
		return
	}
	c.flapT = time.AfterFunc(c.s.faultSettings().FlapAfter, func() {
		c.timerMu.Lock()
		c.flapT = nil
		c.timerMu.Unlock()
		if f := c.s.hook(); f != nil && f.Flapping() { // switched off meanwhile: the connection stays
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
	c.jitterT = time.AfterFunc(time.Duration(rand.Int64N(int64(max(c.s.faultSettings().JitterMax, 1)))), func() {
		if !c.s.freezeGate().isFrozen() {
			c.offer(c.s.ping)
		}
	})
}

// stopTimers stops the connection's Flapping, Jitter and auth-wait
// timers; none is armed after.
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
	if c.authT != nil {
		c.authT.Stop()
	}
}

// faultControl is the server as the demo acts on it (faults.Control).
type faultControl struct {
	s  *Server
	fs *faultState
}

var _ faults.Control = faultControl{}

func (fc faultControl) Options() any {
	o := *fc.s.opts
	return &o
}

func (fc faultControl) SetFrozen(on bool) { fc.fs.freeze.set(on) }
func (fc faultControl) Frozen() bool      { return fc.fs.freeze.isFrozen() }
func (fc faultControl) Deaf() bool        { return fc.fs.deaf.isFrozen() }

// SetDeaf sets the Deaf gate and each WebSocket's receive buffer, under
// s.mu: a connection accepted meanwhile sees it (acceptedLocked).
func (fc faultControl) SetDeaf(on bool) {
	s := fc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	fc.fs.deaf.set(on)
	for _, c := range s.conns {
		if t, ok := c.tr.(*wsTransport); ok {
			t.deafen(on)
		}
	}
}

func (fc faultControl) DropSubscriptions(reason string) {
	s := fc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.dropSubscriptions(reason)
	}
}

func (fc faultControl) StartFlaps() {
	s := fc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.startFlap()
	}
}

func (fc faultControl) Restart(until time.Time) {
	s := fc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	// Started under s.mu: each connection's handler is still counted in
	// s.wg, so closeAsync's Add never races Close's Wait. Each carries its
	// reconnect slot, spread under the admission rate after the downtime.
	now := s.opts.Now()
	for _, c := range s.conns {
		c.closeAsync(protocol.CloseServiceRestart, slotText(s.slotAfter(now, until)))
	}
}

func (fc faultControl) CloseAll(code int, reason string) {
	s := fc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.closeAsync(code, reason)
	}
}

func (fc faultControl) RearmExpiries() {
	s := fc.s
	s.mu.Lock()
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
}

func (fc faultControl) ResetCounters() {
	s := fc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters.handshakesWindow = 0
	s.counters.refused = 0
	s.counters.resetAt = s.opts.Now()
	s.auth.forgetRejections() // a demo that looped on Revoke starts clean
}

// Revoke and ClearRevocations end with ctx or with the server (Close).
func (fc faultControl) Revoke(ctx context.Context, user string, d time.Duration) error {
	ctx, cancel := fc.serverBound(ctx)
	defer cancel()
	return fc.s.Revoke(ctx, user, d)
}

func (fc faultControl) ClearRevocations(ctx context.Context) error {
	ctx, cancel := fc.serverBound(ctx)
	defer cancel()
	return fc.s.clearRevocations(ctx)
}

// serverBound is ctx, also ended when the server's context is (Close).
func (fc faultControl) serverBound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(fc.s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}
func (fc faultControl) Revoked(now time.Time) int    { return fc.s.revocations.count(now) }
func (fc faultControl) ValidClientID(id string) bool { return validClientID(id) }

func (fc faultControl) CreateTopic(ctx context.Context, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, fc.s.opts.HistoryTimeout)
	defer cancel()
	return fc.s.hub.h.Create(ctx, topic)
}

func (fc faultControl) Append(ctx context.Context, topic string, data []byte) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, fc.s.opts.HistoryTimeout)
	defer cancel()
	return fc.s.hub.h.Append(ctx, topic, data, true)
}

func (fc faultControl) AddMethod(name string, fn func(ctx context.Context, params json.RawMessage) (any, error)) {
	fc.s.methods.addMissing(map[string]Method{name: func(ctx context.Context, call *Call) (any, error) {
		return fn(ctx, call.Params)
	}})
}

func (fc faultControl) Go(fn func(ctx context.Context)) bool {
	s := fc.s
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.wg.Add(1) // under s.mu with closed false: Close's Wait follows it
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		fn(s.ctx)
	}()
	return true
}

func (fc faultControl) Guard(h http.Handler, methods ...string) http.Handler {
	return fc.s.httpGuard(h, methods...)
}
func (fc faultControl) HostGuard(h http.Handler) http.Handler            { return fc.s.hostGuard(h) }
func (fc faultControl) Drain() http.HandlerFunc                          { return fc.s.serveDrain }
func (fc faultControl) WriteJSON(w http.ResponseWriter, code int, v any) { writeJSON(w, code, v) }
