//go:build !js

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// presenceOpts are a node's options in these tests: tickets name the
// users (the demo's tickets: the client id is the user).
func presenceOpts(o Options) *Options {
	o.Auth, o.IssueTickets = AuthOptional, true
	if o.PresenceHeartbeat == 0 {
		o.PresenceHeartbeat = 200 * time.Millisecond
	}
	return &o
}

// dialAs opens a connection whose ticket names user.
func (f *fixture) dialAs(t *testing.T, user string) *peer {
	t.Helper()
	tok, _ := f.token(t, user)
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	p.next(protocol.TypeAuthenticated, 2*time.Second)
	return p
}

// join subscribes p to topic (with presence events or not) and waits for
// subscribed.
func (p *peer) join(topic string, events bool) {
	p.t.Helper()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: topic, Presence: events})
	if m := p.next(protocol.TypeSubscribed, 2*time.Second); m.Topic != topic {
		p.t.Fatalf("subscribed %+v", m)
	}
}

// watch subscribes p to topic with its presence events, as user, the
// first of its connections there: it gets its own join just before
// subscribed.
func (p *peer) watch(topic, user string) {
	p.t.Helper()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: topic, Presence: true})
	first := p.next(protocol.TypePresence, 2*time.Second)
	if first.Topic != topic || first.Event != protocol.PresenceJoin || first.User != user {
		p.t.Fatalf("the watcher's own join: %+v", first)
	}
	if m := p.next(protocol.TypeSubscribed, 2*time.Second); m.Topic != topic {
		p.t.Fatalf("subscribed %+v", m)
	}
}

var presenceIDs atomic.Uint64

// presence asks wsready.presence about topic.
func (p *peer) presence(topic string) (protocol.PresenceResult, *protocol.ErrorBody) {
	p.t.Helper()
	id := 1000 + presenceIDs.Add(1)
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: protocol.MethodPresence, Params: []byte(`{"topic":"` + topic + `"}`)})
	m := p.response(id, 2*time.Second)
	var res protocol.PresenceResult
	if m.Error == nil {
		if err := json.Unmarshal(m.Result, &res); err != nil {
			p.t.Fatalf("presence result %s: %v", m.Result, err)
		}
	}
	return res, m.Error
}

// event waits for the next presence frame of topic.
func (p *peer) event(topic string, d time.Duration) (string, string) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m := p.next(protocol.TypePresence, time.Until(deadline))
		if m.Topic == topic {
			return m.Event, m.User
		}
	}
}

// users renders a presence result as "user:conns ...".
func users(r protocol.PresenceResult) string {
	var b strings.Builder
	for i, u := range r.Users {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", u.User, u.Conns)
	}
	return b.String()
}

// waitPresence waits until srv lists want for topic.
func waitPresence(t *testing.T, srv *Server, topic, want string, d time.Duration) {
	t.Helper()
	var got protocol.PresenceResult
	if !poll.Until(d, func() bool { // presence travels over NATS
		var err error
		if got, err = srv.Presence(context.Background(), topic); err != nil {
			t.Fatal(err)
		}
		return users(got) == want
	}) {
		t.Fatalf("presence of %s: %q after %v, want %q", topic, users(got), d, want)
	}
}

// On one node: the users subscribed to a topic with their connection
// counts, sorted, anonymous connections left out; join and leave events to
// the watchers only, at 0 -> 1 and 1 -> 0 per user.
func TestPresenceOnOneNode(t *testing.T) {
	f := newFixture(t, presenceOpts(Options{}))
	watcher := f.dialAs(t, "alice")
	watcher.watch("room", "alice")
	alice2 := f.dialAs(t, "alice")
	alice2.join("room", false)
	bob := f.dialAs(t, "bob")
	bob.join("room", false)
	if ev, u := watcher.event("room", time.Second); ev != protocol.PresenceJoin || u != "bob" {
		t.Fatalf("bob's join: %s %s", ev, u)
	}
	anon := f.dial()
	anon.join("room", false)
	other := f.dialAs(t, "carol")
	other.join("elsewhere", false)

	res, e := anon.presence("room")
	if e != nil || users(res) != "alice:2 bob:1" || res.Total != 2 || res.Truncated || res.Topic != "room" {
		t.Fatalf("presence %+v %+v", res, e)
	}
	// A subscriber that did not ask gets no events.
	if m, ok := alice2.maybe(protocol.TypePresence, 100*time.Millisecond); ok {
		t.Fatalf("an event to a subscriber that did not ask: %+v", m)
	}
	// Alice's second connection goes: no event, one connection less.
	alice2.ws.CloseNow()
	waitPresence(t, f.srv, "room", "alice:1 bob:1", time.Second)
	bob.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: "room"})
	if ev, u := watcher.event("room", time.Second); ev != protocol.PresenceLeave || u != "bob" {
		t.Fatalf("bob's leave: %s %s", ev, u)
	}
	if res, _ := anon.presence("elsewhere"); users(res) != "carol:1" {
		t.Fatalf("another topic: %q", users(res))
	}
	if res, _ := anon.presence("empty"); res.Total != 0 || res.Users == nil {
		t.Fatalf("an empty topic: %+v", res)
	}
	for _, c := range []struct{ params, code string }{
		{`{"topic":"a..b"}`, protocol.ErrInvalidTopic}, {`{"topic":7}`, protocol.ErrWrongType}, {`[1]`, protocol.ErrWrongType},
	} {
		anon.send(protocol.Message{Type: protocol.TypeRequest, ID: 77, Method: protocol.MethodPresence, Params: []byte(c.params)})
		if m := anon.response(77, time.Second); m.Error == nil || m.Error.Code != c.code {
			t.Errorf("params %s: %+v", c.params, m.Error)
		}
	}
	anon.send(protocol.Message{Type: protocol.TypeRequest, ID: 78, Method: protocol.MethodPresence})
	if m := anon.response(78, time.Second); m.Error == nil || m.Error.Code != protocol.ErrWrongType {
		t.Errorf("no params: %+v", m.Error)
	}
	if _, err := f.srv.Presence(context.Background(), "a b"); !errors.Is(err, protocol.ErrBadTopic) {
		t.Fatalf("Server.Presence of a bad name: %v", err)
	}
}

// MaxPresenceUsers bounds the users listed; total counts them all.
func TestPresenceListsAtMostMaxPresenceUsers(t *testing.T) {
	f := newFixture(t, presenceOpts(Options{MaxPresenceUsers: 2}))
	for _, u := range []string{"dave", "bob", "carol", "alice"} {
		f.dialAs(t, u).join("room", false)
	}
	p := f.dial()
	res, e := p.presence("room")
	if e != nil || users(res) != "alice:1 bob:1" || res.Total != 4 || !res.Truncated {
		t.Fatalf("presence %+v %+v", res, e)
	}
	if _, err := New(&Options{MaxPresenceUsers: 1001}); err == nil || !strings.Contains(err.Error(), "MaxPresenceUsers") {
		t.Fatalf("New with MaxPresenceUsers 1001: %v", err)
	}
}

// Authorize's ActPresence guards the presence request and the events: a
// refusal is a typed error on that one call.
func TestPresenceIsAuthorized(t *testing.T) {
	f := newFixture(t, presenceOpts(Options{Authorize: func(_ context.Context, _ Identity, a Action) error {
		if a.Kind == ActPresence && a.Topic == "secret" {
			return &Error{Code: "members_only", Message: "members only"}
		}
		return nil
	}}))
	p := f.dialAs(t, "alice")
	if _, e := p.presence("secret"); e == nil || e.Code != "members_only" {
		t.Fatalf("presence of secret: %+v", e)
	}
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "secret", Presence: true})
	if m := p.next(protocol.TypeError, time.Second); m.Topic != "secret" || m.Error.Code != "members_only" {
		t.Fatalf("a subscribe with presence to secret: %+v", m)
	}
	p.join("secret", false) // without its events: allowed
	if res, e := p.presence("open"); e != nil || res.Total != 0 {
		t.Fatalf("presence of open: %+v %+v", res, e)
	}
}

// sharedNATS runs a real NATS server for a test, with nc opened on it.
func sharedNATS(t *testing.T) (url string, conn func() *nats.Conn) {
	t.Helper()
	ns, err := natsembed.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL(), func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
}

// Three nodes on one NATS: each lists the users on all, a watcher on one
// sees joins and leaves on the others, a node that closes takes its users
// with it at once, one whose NATS connection dies (no goodbye) within four
// heartbeats, and a node that starts late learns what the others hold.
func TestPresenceAcrossNodes(t *testing.T) {
	_, conn := sharedNATS(t)
	const hb = 200 * time.Millisecond
	node := func(nc *nats.Conn) *fixture {
		return newFixture(t, presenceOpts(Options{NATS: nc, PresenceHeartbeat: hb}))
	}
	a, b, c := node(conn()), node(conn()), node(conn())
	watcher := a.dialAs(t, "alice")
	watcher.watch("room", "alice")
	bob := b.dialAs(t, "bob")
	bob.join("room", false)
	if ev, u := watcher.event("room", 2*time.Second); ev != protocol.PresenceJoin || u != "bob" {
		t.Fatalf("bob's join on node b, seen on a: %s %s", ev, u)
	}
	b.dialAs(t, "alice").join("room", false) // alice's second connection, on another node: no event
	carol := c.dialAs(t, "carol")
	carol.join("room", false)
	if ev, u := watcher.event("room", 2*time.Second); ev != protocol.PresenceJoin || u != "carol" {
		t.Fatalf("carol's join on node c, seen on a: %s %s", ev, u)
	}
	for _, f := range []*fixture{a, b, c} {
		waitPresence(t, f.srv, "room", "alice:2 bob:1 carol:1", 2*time.Second)
	}
	if res, e := bob.presence("room"); e != nil || users(res) != "alice:2 bob:1 carol:1" || res.Total != 3 {
		t.Fatalf("the request on node b: %+v %+v", res, e)
	}

	// A node that starts late learns the others' users.
	d := node(conn())
	waitPresence(t, d.srv, "room", "alice:2 bob:1 carol:1", 2*time.Second)

	// Bob leaves on b: a hears it.
	bob.ws.CloseNow()
	if ev, u := watcher.event("room", 2*time.Second); ev != protocol.PresenceLeave || u != "bob" {
		t.Fatalf("bob's leave: %s %s", ev, u)
	}

	// Node c closes: carol leaves everywhere at once (it says goodbye).
	start := time.Now()
	c.srv.Close()
	if ev, u := watcher.event("room", 2*time.Second); ev != protocol.PresenceLeave || u != "carol" {
		t.Fatalf("carol's leave with her node: %s %s", ev, u)
	}
	if took := time.Since(start); took > hb {
		t.Fatalf("a closing node's users left after %v, within a heartbeat (%v) wanted", took, hb)
	}

	// Node b loses NATS without a word: its alice connection goes within
	// four heartbeats, and alice stays (she is on a too).
	start = time.Now()
	b.srv.opts.NATS.Close()
	waitPresence(t, a.srv, "room", "alice:1", 6*hb)
	if took := time.Since(start); took > 4*hb+100*time.Millisecond {
		t.Fatalf("a dead node's entries went after %v, bound %v", took, 4*hb)
	}
	waitPresence(t, d.srv, "room", "alice:1", time.Second)
	if m, ok := watcher.maybe(protocol.TypePresence, 200*time.Millisecond); ok {
		t.Fatalf("an event for alice, who is still on a: %+v", m)
	}
}

// A JetStream History's NATS connection carries presence without
// Options.NATS: nodes that share topics share presence.
func TestPresenceRidesAJetStreamHistorysConnection(t *testing.T) {
	url, _ := sharedNATS(t)
	node := func() *fixture {
		h, err := ConnectJetStream(context.Background(), url, JetStreamOptions{Retention: Retention{MaxMsgs: 10, MaxBytes: 1 << 20, MaxAge: time.Hour}, MaxTopics: 8})
		if err != nil {
			t.Fatal(err)
		}
		return newFixture(t, presenceOpts(Options{History: h}), DemoOptions{NoFeed: true})
	}
	a, b := node(), node()
	a.dialAs(t, "alice").join("room", false)
	b.dialAs(t, "bob").join("room", false)
	waitPresence(t, a.srv, "room", "alice:1 bob:1", 3*time.Second)
	waitPresence(t, b.srv, "room", "alice:1 bob:1", 3*time.Second)
}

// The protocol between nodes, driven by hand: a node met by its delta is
// asked for a snapshot and takes it with the deltas after it; a seq gap
// makes it ask again; entries no node sends (a bad topic, no user) are
// left out; a bye drops the node at once.
func TestPresenceAsksForASnapshotOnANewNodeAndOnAGap(t *testing.T) {
	_, conn := sharedNATS(t)
	f := newFixture(t, presenceOpts(Options{NATS: conn(), PresenceHeartbeat: time.Hour}))
	bus := conn()
	reqs := make(chan presenceMsg, 8)
	sub, err := bus.Subscribe(presenceDirect+"fake.req", func(m *nats.Msg) {
		var r presenceMsg
		json.Unmarshal(m.Data, &r)
		reqs <- r
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Flush()
	send := func(subject string, m presenceMsg) {
		t.Helper()
		b, _ := json.Marshal(m)
		if err := bus.Publish(subject, b); err != nil {
			t.Fatal(err)
		}
		bus.Flush()
	}
	node := f.srv.presence.node
	// Met by its delta 5: asked for a snapshot, the delta held.
	send(presenceBroadcast+"d", presenceMsg{Node: "fake", Seq: 5, Entries: []presenceEntry{{Topic: "room", User: "dan", Conns: 1}}})
	var req presenceMsg
	select {
	case req = <-reqs:
	case <-time.After(2 * time.Second):
		t.Fatal("no snapshot asked of a node met by its delta")
	}
	if req.Node != node || req.Req == 0 {
		t.Fatalf("request %+v", req)
	}
	// The snapshot, in two parts, at seq 4: then delta 5 applies.
	to := presenceDirect + node + ".snap"
	send(to, presenceMsg{Node: "fake", Seq: 4, Req: req.Req, Part: 0, Entries: []presenceEntry{{Topic: "room", User: "erin", Conns: 2}}})
	send(to, presenceMsg{Node: "fake", Seq: 4, Req: req.Req, Part: 1, Last: true, Entries: []presenceEntry{
		{Topic: "room", User: "frank", Conns: 1}, {Topic: "a..b", User: "x", Conns: 1}, {Topic: "room", User: "", Conns: 1}}})
	waitPresence(t, f.srv, "room", "dan:1 erin:2 frank:1", 2*time.Second)
	// Delta 6 in order, then 8: a gap, so a snapshot is asked again.
	send(presenceBroadcast+"d", presenceMsg{Node: "fake", Seq: 6, Entries: []presenceEntry{{Topic: "room", User: "erin", Conns: 0}}})
	waitPresence(t, f.srv, "room", "dan:1 frank:1", 2*time.Second)
	send(presenceBroadcast+"d", presenceMsg{Node: "fake", Seq: 8, Entries: []presenceEntry{{Topic: "room", User: "gus", Conns: 1}}})
	select {
	case again := <-reqs:
		if again.Req <= req.Req {
			t.Fatalf("the second request %+v", again)
		}
		send(to, presenceMsg{Node: "fake", Seq: 7, Req: again.Req, Last: true, Entries: []presenceEntry{{Topic: "room", User: "frank", Conns: 3}}})
	case <-time.After(2 * time.Second):
		t.Fatal("no snapshot asked after a gap")
	}
	waitPresence(t, f.srv, "room", "frank:3 gus:1", 2*time.Second)
	// A heartbeat at the seq it holds asks nothing; one past it does.
	send(presenceBroadcast+"h", presenceMsg{Node: "fake", Seq: 8})
	send(presenceBroadcast+"h", presenceMsg{Node: "fake", Seq: 9})
	select {
	case again := <-reqs:
		if again.Node != node {
			t.Fatalf("request %+v", again)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no snapshot asked after a heartbeat past the last delta")
	}
	if len(reqs) != 0 {
		t.Fatal("a heartbeat at the seq held asked for a snapshot")
	}
	send(presenceBroadcast+"bye", presenceMsg{Node: "fake"})
	waitPresence(t, f.srv, "room", "", 2*time.Second)
}
