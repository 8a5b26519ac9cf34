//go:build !js

package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wsready/wsready/protocol"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/internal/faults"
)

// The demo's failure switches, as one table (switches): each entry is read
// by GET and POST /api/faults, by Demo.Set, by Stats.Faults and, through GET
// /api/faults, by the page, which renders its controls from it. Adding a
// switch is adding an entry (and the effect it has). What each switch does
// lives here too: the server-wide part in the entry's set, the
// per-connection part in the timers below.

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
	describe  func(o *Options) string            // the page's tooltip
	on        func(d *state, now time.Time) bool // its state
	set       func(d *state, v switchValue) error
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
		on:  func(d *state, _ time.Time) bool { return d.ctl.Frozen() },
		set: func(d *state, v switchValue) error { d.setFreeze(v.on); return nil }},
	{name: "serviceDown", label: "Service down", kind: kindToggle, group: groupServer,
		describe: func(*Options) string {
			return "pings go on; subscriptions are dropped with unsubscribed, subscribes, publishes and requests are ignored"
		},
		on:  func(d *state, _ time.Time) bool { return d.serviceDown.Load() },
		set: func(d *state, v switchValue) error { d.setServiceDown(v.on); return nil }},
	{name: "slowReplies", label: "Slow replies", kind: kindToggle, group: groupServer,
		describe: func(o *Options) string { return "responses arrive " + o.SlowReplyDelay.String() + " late" },
		on:       func(d *state, _ time.Time) bool { return d.slowReplies.Load() },
		set:      func(d *state, v switchValue) error { d.setSlowReplies(v.on); return nil }},
	{name: "flapping", label: "Flapping", kind: kindToggle, group: groupServer,
		describe: func(o *Options) string {
			return "every connection, open or new, is closed " + o.FlapAfter.String() + " after it is accepted"
		},
		on:  func(d *state, _ time.Time) bool { return d.flapping.Load() },
		set: func(d *state, v switchValue) error { d.setFlapping(v.on); return nil }},
	{name: "jitter", label: "Jitter", kind: kindToggle, group: groupServer,
		describe: func(o *Options) string {
			return "each ping delayed by a random 0 to " + o.JitterMax.String() + " (a loaded server, not a dead one)"
		},
		on:  func(d *state, _ time.Time) bool { return d.jitter.Load() },
		set: func(d *state, v switchValue) error { d.setJitter(v.on); return nil }},
	{name: "restart", label: "Restart", activeLabel: "Restarting…", kind: kindAction, group: groupServer,
		describe: func(o *Options) string {
			return "every connection dropped with 1012, new ones refused for " + o.RestartDowntime.String() + ", as a redeploy would"
		},
		on: func(d *state, now time.Time) bool { return now.Before(d.RefusingUntil()) },
		set: func(d *state, v switchValue) error {
			if v.on {
				d.restart()
			}
			return nil
		}},
	{name: "shortTokens", label: "Short tokens", kind: kindToggle, group: groupSession, needsAuth: true,
		describe: func(o *Options) string {
			return "tickets live " + o.ShortTicketLife.String() + ", old ones included: connections past it close with 4001"
		},
		on:  func(d *state, _ time.Time) bool { return d.shortTokens.Load() },
		set: func(d *state, v switchValue) error { d.setShortTokens(v.on); return nil }},
	{name: "overload", label: "Overload", kind: kindToggle, group: groupSession,
		describe: func(o *Options) string {
			return "every connection, open or new, is closed with 1013 and retry-after-ms=" + itoa64(o.OverloadRetryAfter.Milliseconds())
		},
		on:  func(d *state, _ time.Time) bool { return d.overload.Load() },
		set: func(d *state, v switchValue) error { d.setOverload(v.on); return nil }},
	{name: "revoke", label: "Revoke", activeLabel: "Unrevoke", kind: kindClientID, group: groupSession, needsAuth: true,
		describe: func(*Options) string {
			return "the client id is refused with 4003 for a day, on every node, its open connections closed (Server.Revoke); pressed again, the list is cleared"
		},
		on:  func(d *state, now time.Time) bool { return d.ctl.Revoked(now) > 0 },
		set: func(d *state, v switchValue) error { return d.demoRevoke(v.id) }},
	{name: "blockWebSocket", label: "Block WebSocket", kind: kindToggle, group: groupServer,
		describe: func(*Options) string {
			return "every WebSocket upgrade refused with 403, as by a proxy that strips upgrades; plain HTTP, the probe and the HTTP transport keep working (stage 8 falls back to it)"
		},
		on:  func(d *state, _ time.Time) bool { return d.blockWS.Load() },
		set: func(d *state, v switchValue) error { d.setBlockWebSocket(v.on); return nil }},
	{name: "deaf", label: "Deaf", kind: kindToggle, group: groupServer,
		describe: func(*Options) string {
			return "the server stops reading what clients send (WebSocket frames, HTTP transport POSTs wait) while pings go on: the client's sends pile up unsent (stage 8 notices the stall)"
		},
		on:  func(d *state, _ time.Time) bool { return d.ctl.Deaf() },
		set: func(d *state, v switchValue) error { d.setDeaf(v.on); return nil }},
	{name: "endSession", label: "End session", kind: kindAction, group: groupSession,
		describe: func(*Options) string {
			return "every connection closed with 1000: the server ends the sessions for good"
		},
		set: func(d *state, v switchValue) error {
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

// switchStates is every switch's state by name (Stats.Faults).
func (d *state) switchStates(now time.Time) map[string]bool {
	m := make(map[string]bool, len(switches))
	for _, sw := range switches {
		m[sw.name] = sw.on != nil && sw.on(d, now)
	}
	return m
}

// state is the demo's fault hook (faults.Hook, whose points
// server/faults.go names): the state the switches set, read by the server
// on its connections' and requests' paths. Every field the server reads is
// an atomic, so the demo costs those paths no lock. Freeze and Deaf are the
// server's gates (Control.SetFrozen, SetDeaf); Revoke is the server's own
// list (Server.Revoke).
type state struct {
	ctl  faults.Control
	opts *server.Options // the server's, in effect, defaults filled in
	do   Options         // the demo's, defaults filled in
	log  *slog.Logger

	serviceDown  atomic.Bool
	slowReplies  atomic.Bool
	shortTokens  atomic.Bool
	overload     atomic.Bool
	jitter       atomic.Bool
	blockWS      atomic.Bool  // Block WebSocket: upgrades refused with 403
	flapping     atomic.Bool  // Flapping: connections closed FlapAfter after they open
	restartUntil atomic.Int64 // Restart refuses until then, Unix ns; 0: it does not

	// The feed (feed.go).
	feedOn      atomic.Bool  // this node produces the demo's feed
	feedSeq     atomic.Int64 // the feed's last seq on this node's producer
	feedValue   int64        // runFeed's
	feedFailing bool         // the last feed update failed (runFeed's)
}

func newState(ctl faults.Control, do Options) *state {
	o := ctl.Options().(*server.Options)
	return &state{ctl: ctl, opts: o, do: do, log: logger(o)}
}

// The hook's points (server/faults.go).

var _ faults.Hook = (*state)(nil)

func (d *state) UpgradeBlocked() bool  { return d.blockWS.Load() }
func (d *state) Overloaded() bool      { return d.overload.Load() }
func (d *state) Flapping() bool        { return d.flapping.Load() }
func (d *state) DropsService() bool    { return d.serviceDown.Load() }
func (d *state) DelaysReplies() bool   { return d.slowReplies.Load() }
func (d *state) JittersPings() bool    { return d.jitter.Load() }
func (d *state) ShortensTickets() bool { return d.shortTokens.Load() }
func (d *state) OwnsTopic(topic string) bool {
	return topic == protocol.DefaultTopic && d.feedOn.Load()
}

func (d *state) RefusingUntil() time.Time {
	if ns := d.restartUntil.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (d *state) FeedSeq() int64            { return d.feedSeq.Load() }
func (d *state) Settings() faults.Settings { return d.do.settings() }

// parsePatch reads a POST /api/faults body, {"name": value, ...}: every
// name a switch of the table, every value what its kind takes (null: left
// as it is). It checks all of it before anything is set.
func (d *state) parsePatch(body []byte) ([]patchEntry, error) {
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
			if err == nil && val.id != "" && !d.ctl.ValidClientID(val.id) {
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
func (d *state) apply(p []patchEntry) error {
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
	p, err := d.f.parsePatch(b)
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

func (d *state) faultsView() faultsView {
	o := d.opts
	state := d.switchStates(o.Now())
	v := faultsView{Demo: o.Demo, Auth: o.Auth != server.AuthOff, Switches: make([]switchView, len(switches))}
	for i, sw := range switches {
		v.Switches[i] = switchView{Name: sw.name, Label: sw.label, ActiveLabel: sw.activeLabel, Description: sw.describe(&d.do),
			Kind: sw.kind, Group: sw.group, NeedsAuth: sw.needsAuth, On: state[sw.name]}
	}
	return v
}

// serveFaults is GET /api/faults.
func (d *Demo) serveFaults(w http.ResponseWriter, r *http.Request) {
	d.f.ctl.WriteJSON(w, http.StatusOK, d.f.faultsView())
}

// setFaults is POST /api/faults: {"name": value, ...}, absent switches
// keep their state. 400 with {"error"} for bad JSON, an unknown switch or
// a value its kind does not take (nothing is set then), or a set that
// fails (a full revoked list); else 200 with GET's answer.
func (d *Demo) setFaults(w http.ResponseWriter, r *http.Request) {
	ctl := d.f.ctl
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSwitchBody+1))
	if err == nil && len(body) > maxSwitchBody {
		err = errors.New("the body is over " + strconv.Itoa(maxSwitchBody) + " bytes")
	}
	if err != nil {
		ctl.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "failed to read the body: " + err.Error()})
		return
	}
	p, err := d.f.parsePatch(body)
	if err == nil {
		err = d.f.apply(p)
	}
	if err != nil {
		ctl.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	ctl.WriteJSON(w, http.StatusOK, d.f.faultsView())
}

// maxSwitchBody bounds a POST /api/faults body, in bytes.
const maxSwitchBody = 4096

// What each switch does to the server.

func (d *state) setFreeze(on bool) {
	d.ctl.SetFrozen(on)
	d.log.Info("switch", "freeze", on)
}

// setServiceDown on drops every subscription with an unsubscribed frame;
// off, the service works again for clients that subscribe again.
func (d *state) setServiceDown(on bool) {
	if d.serviceDown.Swap(on) == on {
		return
	}
	if on {
		// After the flag: a subscribe served meanwhile is dropped here, one
		// after it is ignored.
		d.ctl.DropSubscriptions("service_unavailable")
	}
	d.log.Info("switch", "serviceDown", on)
}

func (d *state) setSlowReplies(on bool) {
	d.slowReplies.Store(on)
	d.log.Info("switch", "slowReplies", on)
}

// setFlapping on closes every connection, open or new, FlapAfter after it
// is accepted (or after the switch, for those already open).
func (d *state) setFlapping(on bool) {
	d.flapping.Store(on)
	if on {
		d.ctl.StartFlaps()
	}
	d.log.Info("switch", "flapping", on)
}

// setJitter on sends each ping a random 0 to JitterMax after its tick, so
// pings arrive unevenly, as from a loaded server; nothing else changes. A
// client must not take it for a dead server.
func (d *state) setJitter(on bool) {
	d.jitter.Store(on)
	d.log.Info("switch", "jitter", on)
}

// restart drops every connection with 1012 and refuses new ones for
// RestartDowntime, as a redeploy would.
func (d *state) restart() {
	until := d.opts.Now().Add(d.do.RestartDowntime)
	d.restartUntil.Store(until.UnixNano()) // before the closes: their reconnects are refused
	d.ctl.Restart(until)
	d.log.Info("switch", "restart", true, "downtime", d.do.RestartDowntime)
}

// setShortTokens on makes new tickets live ShortTicketLife, and every
// ticket, old ones included, good for at most that long after it was
// issued; connections past it close with 4001.
func (d *state) setShortTokens(on bool) {
	d.shortTokens.Store(on)
	d.ctl.RearmExpiries()
	d.log.Info("switch", "shortTokens", on)
}

// demoRevokeFor is how long the Revoke switch refuses a client id.
const demoRevokeFor = 24 * time.Hour

// demoTimeout bounds a switch's message to the other nodes.
const demoTimeout = 5 * time.Second

// demoRevoke is the Revoke switch, through the application's path
// (Server.Revoke, on every node): client id refused with 4003 for
// demoRevokeFor and its open connections closed; "" lifts every
// revocation. It fails when the set is full (or NATS does not take it).
func (d *state) demoRevoke(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	var err error
	if id == "" {
		err = d.ctl.ClearRevocations(ctx)
	} else {
		err = d.ctl.Revoke(ctx, id, demoRevokeFor)
	}
	d.log.Info("switch", "revoke", id != "")
	return err
}

// endSession closes every connection with 1000: the server ends the
// sessions for good.
func (d *state) endSession() {
	d.ctl.CloseAll(protocol.CloseNormal, "session ended")
	d.log.Info("switch", "endSession", true)
}

// setOverload on closes every connection, open or new, with 1013 and
// "retry-after-ms=N".
func (d *state) setOverload(on bool) {
	d.overload.Store(on)
	if on {
		d.ctl.CloseAll(protocol.CloseTryAgainLater, protocol.RetryAfterReason(d.do.OverloadRetryAfter))
	}
	d.log.Info("switch", "overload", on)
}

// setBlockWebSocket on refuses every WebSocket upgrade with 403 (the
// connections open stay), as a proxy that strips upgrades would: stage 8
// falls back to the HTTP transport, which keeps working.
func (d *state) setBlockWebSocket(on bool) {
	d.blockWS.Store(on)
	d.log.Info("switch", "blockWebSocket", on)
}

// setDeaf on stops reading clients' frames: each connection's reader
// waits before handling its next frame, so a WebSocket's socket is not
// read (the client's bufferedAmount grows once the TCP buffers are full)
// and an HTTP transport POST waits before its body is read. Pings and
// everything else the server sends go on. Off: the frames held are
// handled, in order.
func (d *state) setDeaf(on bool) {
	d.ctl.SetDeaf(on)
	d.log.Info("switch", "deaf", on)
}
