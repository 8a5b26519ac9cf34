//go:build !js

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The demo's failure switches, as one table (switches): each entry is read
// by GET and POST /api/faults, by Demo.Set, by Stats.Faults and, through GET
// /api/faults, by the page, which renders its controls from it. Adding a
// switch is adding an entry (and the effect it has). What each switch does
// lives here too: the server-wide part in the entry's set, the
// per-connection part in the timers below.

// startFlap arms the Flapping close: FlapAfter from now, if the switch is
// still on then. One per connection at a time.
func (d *demoFaults) startFlap(c *conn) {
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
		on := d.flapping
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

// switchKind says what a switch takes and how the page shows it.
type switchKind string

const (
	// kindToggle takes true or false; the page shows a checkbox.
	kindToggle switchKind = "toggle"
	// kindAction acts on true (false is ignored); its state is whether it
	// is still at work (Restart refusing). The page shows a button.
	kindAction switchKind = "action"
	// kindClientID takes a client id ("" clears); its state is whether any
	// id is held. The page shows a button that applies it to the page's
	// own client id, and clears it when pressed again.
	kindClientID switchKind = "clientId"
)

// Where the page shows a switch.
const (
	groupServer  = "server"
	groupSession = "session" // the session switches: stage 6 shows the fix
)

// faultSwitch is one demo switch.
type faultSwitch struct {
	name  string // its key in POST /api/faults, Demo.Set and Stats.Faults
	label string // the page's label
	// activeLabel is the page's label while an action is at work, or
	// while the page holds a client-id switch on its own id.
	activeLabel string
	kind        switchKind
	group       string
	// needsAuth: it acts on tickets, so the page disables it while
	// Options.Auth is off.
	needsAuth bool
	describe  func(o *Options) string                 // the page's tooltip
	on        func(d *demoFaults, now time.Time) bool // its state; called with s.mu held
	set       func(d *demoFaults, v switchValue) error
}

// switchValue is what a switch is set to: on for toggles and actions, id
// for client-id switches.
type switchValue struct {
	on bool
	id string
}

// switches are the demo's failure switches, in the page's order.
var switches = []faultSwitch{
	{name: "freeze", label: "Freeze", kind: kindToggle, group: groupServer,
		describe: func(*Options) string {
			return "every connection stays open at the TCP level and carries nothing, both ways, new ones included (a hung server, a dead NAT)"
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.freeze.isFrozen() },
		set: func(d *demoFaults, v switchValue) error { d.setFreeze(v.on); return nil }},
	{name: "serviceDown", label: "Service down", kind: kindToggle, group: groupServer,
		describe: func(*Options) string {
			return "pings go on; subscriptions are dropped with unsubscribed, subscribes, publishes and requests are ignored"
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.serviceDown.Load() },
		set: func(d *demoFaults, v switchValue) error { d.setServiceDown(v.on); return nil }},
	{name: "slowReplies", label: "Slow replies", kind: kindToggle, group: groupServer,
		describe: func(o *Options) string { return "responses arrive " + o.SlowReplyDelay.String() + " late" },
		on:       func(d *demoFaults, _ time.Time) bool { return d.slowReplies.Load() },
		set:      func(d *demoFaults, v switchValue) error { d.setSlowReplies(v.on); return nil }},
	{name: "flapping", label: "Flapping", kind: kindToggle, group: groupServer,
		describe: func(o *Options) string {
			return "every connection, open or new, is closed " + o.FlapAfter.String() + " after it is accepted"
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.flapping },
		set: func(d *demoFaults, v switchValue) error { d.setFlapping(v.on); return nil }},
	{name: "jitter", label: "Jitter", kind: kindToggle, group: groupServer,
		describe: func(o *Options) string {
			return "each ping delayed by a random 0 to " + o.JitterMax.String() + " (a loaded server, not a dead one)"
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.jitter.Load() },
		set: func(d *demoFaults, v switchValue) error { d.setJitter(v.on); return nil }},
	{name: "restart", label: "Restart", activeLabel: "Restarting…", kind: kindAction, group: groupServer,
		describe: func(o *Options) string {
			return "every connection dropped with 1012, new ones refused for " + o.RestartDowntime.String() + ", as a redeploy would"
		},
		on: func(d *demoFaults, now time.Time) bool { return now.Before(d.restartUntil) },
		set: func(d *demoFaults, v switchValue) error {
			if v.on {
				d.restart()
			}
			return nil
		}},
	{name: "shortTokens", label: "Short tokens", kind: kindToggle, group: groupSession, needsAuth: true,
		describe: func(o *Options) string {
			return "tickets live " + o.ShortTicketLife.String() + ", old ones included: connections past it close with 4001"
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.shortTokens.Load() },
		set: func(d *demoFaults, v switchValue) error { d.setShortTokens(v.on); return nil }},
	{name: "overload", label: "Overload", kind: kindToggle, group: groupSession,
		describe: func(o *Options) string {
			return "every connection, open or new, is closed with 1013 and retry-after-ms=" + itoa64(o.OverloadRetryAfter.Milliseconds())
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.overload.Load() },
		set: func(d *demoFaults, v switchValue) error { d.setOverload(v.on); return nil }},
	{name: "revoke", label: "Revoke", activeLabel: "Unrevoke", kind: kindClientID, group: groupSession, needsAuth: true,
		describe: func(*Options) string {
			return "the client id is refused with 4003 for a day, on every node, its open connections closed (Server.Revoke); pressed again, the list is cleared"
		},
		on:  func(d *demoFaults, now time.Time) bool { return d.s.revocations.count(now) > 0 },
		set: func(d *demoFaults, v switchValue) error { return d.demoRevoke(v.id) }},
	{name: "blockWebSocket", label: "Block WebSocket", kind: kindToggle, group: groupServer,
		describe: func(*Options) string {
			return "every WebSocket upgrade refused with 403, as by a proxy that strips upgrades; plain HTTP, the probe and the HTTP transport keep working (stage 8 falls back to it)"
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.blockWS.Load() },
		set: func(d *demoFaults, v switchValue) error { d.setBlockWebSocket(v.on); return nil }},
	{name: "deaf", label: "Deaf", kind: kindToggle, group: groupServer,
		describe: func(*Options) string {
			return "the server stops reading what clients send (WebSocket frames, HTTP transport POSTs wait) while pings go on: the client's sends pile up unsent (stage 8 notices the stall)"
		},
		on:  func(d *demoFaults, _ time.Time) bool { return d.deaf.isFrozen() },
		set: func(d *demoFaults, v switchValue) error { d.setDeaf(v.on); return nil }},
	{name: "endSession", label: "End session", kind: kindAction, group: groupSession,
		describe: func(*Options) string {
			return "every connection closed with 1000: the server ends the sessions for good"
		},
		set: func(d *demoFaults, v switchValue) error {
			if v.on {
				d.endSession()
			}
			return nil
		}},
}

// switchNamed returns the switch called name, or nil.
func switchNamed(name string) *faultSwitch {
	for i := range switches {
		if switches[i].name == name {
			return &switches[i]
		}
	}
	return nil
}

// switchNames lists the switches' names, for error messages.
func switchNames() string {
	names := make([]string, len(switches))
	for i, sw := range switches {
		names[i] = sw.name
	}
	return strings.Join(names, ", ")
}

// faultsLocked is every switch's state by name (Stats.Faults). Called with
// s.mu held.
func (d *demoFaults) faultsLocked(now time.Time) map[string]bool {
	m := make(map[string]bool, len(switches))
	for _, sw := range switches {
		m[sw.name] = sw.on != nil && sw.on(d, now)
	}
	return m
}

// demoFaults is the demo's fault hook (demo_hook.go): the state the
// switches set, and what the server asks of it at the hook's points.
// NewDemo makes it and sets it on the Server; a Server alone has none.
// Freeze and Deaf are gates (demo_freeze.go) that reads and writes wait
// at; Revoke is the server's own list (control.go). The flags read on a connection's or a
// request's path are atomics, so the demo costs those paths no lock;
// flapping and restartUntil are guarded by s.mu, as the connections they
// act on.
type demoFaults struct {
	s *Server

	serviceDown  atomic.Bool
	slowReplies  atomic.Bool
	shortTokens  atomic.Bool
	overload     atomic.Bool
	jitter       atomic.Bool
	blockWS      atomic.Bool // Block WebSocket: upgrades refused with 403
	freeze       gate        // Freeze: connections carry nothing, both ways
	deaf         gate        // Deaf: frozen while clients' frames go unread
	flapping     bool        // under s.mu
	restartUntil time.Time   // Restart refuses until then; under s.mu

	// The feed (demo_feed.go).
	feedOn      atomic.Bool  // this node produces the demo's feed
	feedSeq     atomic.Int64 // the feed's last seq on this node's producer
	feedValue   int64        // runFeed's
	feedFailing bool         // the last feed update failed (runFeed's)
}

// The hook's points (demo_hook.go).

var _ faultHook = (*demoFaults)(nil)

func (d *demoFaults) upgradeBlocked() bool { return d.blockWS.Load() }
func (d *demoFaults) overloaded() bool     { return d.overload.Load() }
func (d *demoFaults) refusingUntilLocked() time.Time {
	return d.restartUntil
}

func (d *demoFaults) acceptedLocked(c *conn) {
	if d.flapping {
		d.startFlap(c)
	}
	if ws, ok := c.tr.(*wsTransport); ok && d.deaf.isFrozen() {
		ws.deafen(true) // under s.mu: setDeaf sees it, or it sees setDeaf
	}
}

func (d *demoFaults) freezeGate() *gate     { return &d.freeze }
func (d *demoFaults) deafGate() *gate       { return &d.deaf }
func (d *demoFaults) dropsService() bool    { return d.serviceDown.Load() }
func (d *demoFaults) delaysReplies() bool   { return d.slowReplies.Load() }
func (d *demoFaults) jittersPings() bool    { return d.jitter.Load() }
func (d *demoFaults) shortensTickets() bool { return d.shortTokens.Load() }
func (d *demoFaults) lastFeedSeq() int64    { return d.feedSeq.Load() }
func (d *demoFaults) ownsTopic(topic string) bool {
	return topic == protocol.DefaultTopic && d.feedOn.Load()
}
func (d *demoFaults) closing() { d.freeze.set(false) }
func (d *demoFaults) statsLocked(st *Stats, now time.Time) {
	st.Faults = d.faultsLocked(now)
	st.FeedSeq = d.feedSeq.Load()
	if now.Before(d.restartUntil) {
		until := d.restartUntil
		st.RestartUntil = &until
	}
}

// parsePatch reads a POST /api/faults body, {"name": value, ...}: every
// name a switch of the table, every value what its kind takes (null: left
// as it is). It checks all of it before anything is set.
func parsePatch(body []byte) ([]patchEntry, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("bad JSON: trailing data")
	}
	var out []patchEntry
	for name := range raw {
		if switchNamed(name) == nil {
			return nil, fmt.Errorf("unknown switch %q; switches are %s", name, switchNames())
		}
	}
	for i := range switches { // in the table's order
		sw := &switches[i]
		v, ok := raw[sw.name]
		if !ok || string(v) == "null" {
			continue
		}
		var val switchValue
		var err error
		if sw.kind == kindClientID {
			err = json.Unmarshal(v, &val.id)
			if err == nil && val.id != "" && !validClientID(val.id) {
				err = errors.New("a client id is 1 to 64 of A-Z a-z 0-9 _ -")
			}
			if err != nil {
				return nil, fmt.Errorf("switch %s takes a client id (or \"\" to clear): %w", sw.name, err)
			}
		} else if err = json.Unmarshal(v, &val.on); err != nil {
			return nil, fmt.Errorf("switch %s takes true or false: %w", sw.name, err)
		}
		out = append(out, patchEntry{sw, val})
	}
	return out, nil
}

type patchEntry struct {
	sw *faultSwitch
	v  switchValue
}

// apply sets each switch of a parsed patch, in the table's order.
func (d *demoFaults) apply(p []patchEntry) error {
	for _, e := range p {
		if err := e.sw.set(d, e.v); err != nil {
			return fmt.Errorf("failed to set switch %s: %w", e.sw.name, err)
		}
	}
	return nil
}

// Set flips the demo switch called name, as one entry of POST /api/faults
// would: value is true or false for a toggle (freeze, serviceDown,
// slowReplies, flapping, jitter, blockWebSocket, deaf, shortTokens,
// overload), true to act for an action (restart, endSession), a client id for revoke ("" clears the
// list). GET /api/faults lists the switches. It works whatever
// Options.Demo says: that guards the HTTP API, not the program.
func (d *Demo) Set(name string, value any) error {
	b, err := json.Marshal(map[string]any{name: value})
	if err != nil {
		return fmt.Errorf("failed to set switch %s: %w", name, err)
	}
	p, err := parsePatch(b)
	if err != nil {
		return fmt.Errorf("failed to set switch %s: %w", name, err)
	}
	return d.f.apply(p)
}

// switchView is one switch as GET /api/faults shows it.
type switchView struct {
	Name        string     `json:"name"`
	Label       string     `json:"label"`
	ActiveLabel string     `json:"activeLabel,omitempty"`
	Description string     `json:"description"`
	Kind        switchKind `json:"kind"`
	Group       string     `json:"group"`
	NeedsAuth   bool       `json:"needsAuth"`
	On          bool       `json:"on"`
}

// faultsView is GET /api/faults: whether the switches can be flipped
// (Options.Demo), whether tickets are on, and every switch with its state.
type faultsView struct {
	Demo     bool         `json:"demo"`
	Auth     bool         `json:"auth"`
	Switches []switchView `json:"switches"`
}

func (d *demoFaults) faultsView() faultsView {
	s := d.s
	now := s.opts.Now()
	s.mu.Lock()
	state := d.faultsLocked(now)
	s.mu.Unlock()
	v := faultsView{Demo: s.opts.Demo, Auth: s.opts.Auth != AuthOff, Switches: make([]switchView, len(switches))}
	for i, sw := range switches {
		v.Switches[i] = switchView{Name: sw.name, Label: sw.label, ActiveLabel: sw.activeLabel, Description: sw.describe(s.opts),
			Kind: sw.kind, Group: sw.group, NeedsAuth: sw.needsAuth, On: state[sw.name]}
	}
	return v
}

// serveFaults is GET /api/faults.
func (d *Demo) serveFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, d.f.faultsView())
}

// setFaults is POST /api/faults: {"name": value, ...}, absent switches
// keep their state. 400 with {"error"} for bad JSON, an unknown switch or
// a value its kind does not take (nothing is set then), or a set that
// fails (a full revoked list); else 200 with GET's answer.
func (d *Demo) setFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSwitchBody+1))
	if err == nil && len(body) > maxSwitchBody {
		err = errors.New("the body is over " + strconv.Itoa(maxSwitchBody) + " bytes")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "failed to read the body: " + err.Error()})
		return
	}
	p, err := parsePatch(body)
	if err == nil {
		err = d.f.apply(p)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, d.f.faultsView())
}

// maxSwitchBody bounds a POST /api/faults body, in bytes.
const maxSwitchBody = 4096

// What each switch does to the server.

func (d *demoFaults) setFreeze(on bool) {
	s := d.s
	d.freeze.set(on)
	s.log.Info("switch", "freeze", on)
}

// setServiceDown on drops every subscription with an unsubscribed frame;
// off, the service works again for clients that subscribe again.
func (d *demoFaults) setServiceDown(on bool) {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.serviceDown.Load() == on {
		return
	}
	d.serviceDown.Store(on)
	if on {
		for _, c := range s.conns {
			c.dropSubscriptions("service_unavailable")
		}
	}
	s.log.Info("switch", "serviceDown", on)
}

func (d *demoFaults) setSlowReplies(on bool) {
	s := d.s
	s.mu.Lock()
	d.slowReplies.Store(on)
	s.mu.Unlock()
	s.log.Info("switch", "slowReplies", on)
}

// setFlapping on closes every connection, open or new, FlapAfter after it
// is accepted (or after the switch, for those already open).
func (d *demoFaults) setFlapping(on bool) {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	d.flapping = on
	if on {
		for _, c := range s.conns {
			d.startFlap(c)
		}
	}
	s.log.Info("switch", "flapping", on)
}

// setJitter on sends each ping a random 0 to JitterMax after its tick, so
// pings arrive unevenly, as from a loaded server; nothing else changes. A
// client must not take it for a dead server.
func (d *demoFaults) setJitter(on bool) {
	s := d.s
	d.jitter.Store(on)
	s.log.Info("switch", "jitter", on)
}

// restart drops every connection with 1012 and refuses new ones for
// RestartDowntime, as a redeploy would.
func (d *demoFaults) restart() {
	s := d.s
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	d.restartUntil = s.opts.Now().Add(s.opts.RestartDowntime)
	// Started under s.mu: each connection's handler is still counted in
	// s.wg, so closeAsync's Add never races Close's Wait. Each carries its
	// reconnect slot, spread under the admission rate after the downtime.
	now := s.opts.Now()
	for _, c := range s.conns {
		c.closeAsync(protocol.CloseServiceRestart, slotText(s.slotAfter(now, d.restartUntil)))
	}
	s.mu.Unlock()
	s.log.Info("switch", "restart", true, "downtime", s.opts.RestartDowntime)
}

// setShortTokens on makes new tickets live ShortTicketLife, and every
// ticket, old ones included, good for at most that long after it was
// issued; connections past it close with 4001.
func (d *demoFaults) setShortTokens(on bool) {
	s := d.s
	s.mu.Lock()
	d.shortTokens.Store(on)
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

// demoRevokeFor is how long the Revoke switch refuses a client id.
const demoRevokeFor = 24 * time.Hour

// demoTimeout bounds a switch's message to the other nodes.
const demoTimeout = 5 * time.Second

// demoRevoke is the Revoke switch, through the application's path
// (Server.Revoke, on every node): client id refused with 4003 for
// demoRevokeFor and its open connections closed; "" lifts every
// revocation. It fails when the set is full (or NATS does not take it).
func (d *demoFaults) demoRevoke(id string) error {
	s := d.s
	ctx, cancel := context.WithTimeout(s.ctx, demoTimeout)
	defer cancel()
	var err error
	if id == "" {
		err = s.clearRevocations(ctx)
	} else {
		err = s.Revoke(ctx, id, demoRevokeFor)
	}
	s.log.Info("switch", "revoke", id != "")
	return err
}

// endSession closes every connection with 1000: the server ends the
// sessions for good.
func (d *demoFaults) endSession() {
	s := d.s
	s.mu.Lock()
	for _, c := range s.conns {
		c.closeAsync(protocol.CloseNormal, "session ended")
	}
	s.mu.Unlock()
	s.log.Info("switch", "endSession", true)
}

// setOverload on closes every connection, open or new, with 1013 and
// "retry-after-ms=N".
func (d *demoFaults) setOverload(on bool) {
	s := d.s
	s.mu.Lock()
	d.overload.Store(on)
	if on {
		reason := protocol.RetryAfterReason(s.opts.OverloadRetryAfter)
		for _, c := range s.conns {
			c.closeAsync(protocol.CloseTryAgainLater, reason)
		}
	}
	s.mu.Unlock()
	s.log.Info("switch", "overload", on)
}

// setBlockWebSocket on refuses every WebSocket upgrade with 403 (the
// connections open stay), as a proxy that strips upgrades would: stage 8
// falls back to the HTTP transport, which keeps working.
func (d *demoFaults) setBlockWebSocket(on bool) {
	s := d.s
	d.blockWS.Store(on)
	s.log.Info("switch", "blockWebSocket", on)
}

// setDeaf on stops reading clients' frames: each connection's reader
// waits before handling its next frame, so a WebSocket's socket is not
// read (the client's bufferedAmount grows once the TCP buffers are full)
// and an HTTP transport POST waits before its body is read. Pings and
// everything else the server sends go on. Off: the frames held are
// handled, in order.
func (d *demoFaults) setDeaf(on bool) {
	s := d.s
	s.mu.Lock()
	d.deaf.set(on)
	for _, c := range s.conns {
		if t, ok := c.tr.(*wsTransport); ok {
			t.deafen(on)
		}
	}
	s.mu.Unlock()
	s.log.Info("switch", "deaf", on)
}
