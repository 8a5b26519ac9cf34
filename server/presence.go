//go:build !js

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/wsready/wsready/protocol"
)

// Presence: who is subscribed to a topic, cluster-wide.
//
// Every subscription of a connection that has a user (its Identity's
// User, or the client id of the demo's tickets) counts in the topic's
// presence: one entry per user with its connection count. Anonymous
// connections are not listed and not counted (they have no id to list,
// and counting them per session would list session ids). A subscribe with
// presence: true also makes its connection a watcher of the topic: it gets
// a presence frame when a user's first connection joins the topic anywhere
// in the cluster (0 -> 1) and when its last leaves (1 -> 0). The
// wsready.presence request and Server.Presence read the table.
//
// Each node keeps its own connections' entries (local) and, through NATS
// (presence_nats.go), every other node's; the table the answers and events
// come from is their sum (total). Without NATS the node is alone and the
// table is its own.
//
// Bounds: this node's entries are bounded by its connections times
// MaxSubscriptions; each other node's by maxPeerEntries, and the nodes by
// maxPeers (entries and nodes past them are left out, logged once).

type pkey struct{ topic, user string }

// memberOf is one connection's place in the table.
type memberOf struct {
	user   string          // "" for an anonymous connection: it only watches
	topics map[string]bool // its topics in the table; true: it gets their events
}

type presence struct {
	s    *Server
	node string // this node's id on NATS: 16 random bytes, base64url, drawn at start

	mu       sync.Mutex
	closed   bool
	members  map[*conn]*memberOf
	local    map[pkey]int              // this node's connections per (topic, user)
	total    map[string]map[string]int // every node's, by topic, then user
	watchers map[string]map[*conn]struct{}
	peers    map[string]*peerNode // the other nodes, by id
	dirty    map[pkey]struct{}    // local entries changed since the last delta
	seq      uint64               // the last delta seq this node gave
	reqs     uint64               // the last snapshot request id
	bus      *presenceBus         // nil: this node alone
	loggedAt map[string]bool      // the bound warnings already logged

	kick   chan struct{} // cap 1: dirty has entries
	hbNow  chan struct{} // cap 1: a node started: tell it we are here
	events prometheus.Counter
	syncs  prometheus.Counter
	lost   prometheus.Counter
}

// Bounds on what other nodes can grow here.
const (
	maxPeers       = 1024    // other nodes tracked
	maxPeerEntries = 1 << 18 // (topic, user) entries of one other node
	maxPeerBuffer  = 1024    // deltas held while a node's snapshot comes
	maxUserConns   = 1 << 20 // connections one entry may claim
)

func newPresence(s *Server) *presence {
	p := &presence{s: s, node: newSessionID(), members: map[*conn]*memberOf{}, local: map[pkey]int{},
		total: map[string]map[string]int{}, watchers: map[string]map[*conn]struct{}{}, peers: map[string]*peerNode{},
		dirty: map[pkey]struct{}{}, loggedAt: map[string]bool{}, kick: make(chan struct{}, 1), hbNow: make(chan struct{}, 1)}
	p.events = prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_presence_events_total",
		Help: "Presence join and leave events this node sent to its watchers (one per event, whatever the watchers)."})
	p.syncs = prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_presence_syncs_total",
		Help: "Snapshots of another node's presence asked for: a node met, or deltas missed."})
	p.lost = prometheus.NewCounter(prometheus.CounterOpts{Name: "wsready_presence_nodes_expired_total",
		Help: "Other nodes whose presence was dropped because they went silent for three heartbeats."})
	users := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_presence_entries",
		Help: "(topic, user) entries in this node's presence table, every node's."}, func() float64 {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := 0
		for _, us := range p.total {
			n += len(us)
		}
		return float64(n)
	})
	nodes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wsready_presence_nodes",
		Help: "Other nodes whose presence this node holds."}, func() float64 {
		p.mu.Lock()
		defer p.mu.Unlock()
		return float64(len(p.peers))
	})
	s.metrics.reg.MustRegister(p.events, p.syncs, p.lost, users, nodes)
	return p
}

// user is whom a connection counts as in presence and Disconnect: its
// Identity's user or, for the demo's tickets (which carry a client id and
// no identity), that client id; "" for an anonymous one. Both are set
// before the connection is served, by its reader: a later read on the
// reader, or after a lock the reader took, sees them.
func (c *conn) user() string {
	if c.identity.User != "" {
		return c.identity.User
	}
	return c.clientID
}

// join counts c's subscription to topic (once however often it
// subscribes again); events says whether c gets the topic's presence frames.
// Called when the subscription is recorded.
func (p *presence) join(c *conn, topic string, events bool) {
	user := c.user()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || c.ctx.Err() != nil {
		return // a connection that ended: forget has run or will find nothing
	}
	m := p.members[c]
	if m == nil {
		if user == "" && !events {
			return // nothing to count, nothing to send
		}
		m = &memberOf{user: user, topics: map[string]bool{}}
		p.members[c] = m
	}
	had, in := m.topics[topic]
	m.topics[topic] = events
	switch {
	case events && !had:
		ws := p.watchers[topic]
		if ws == nil {
			ws = map[*conn]struct{}{}
			p.watchers[topic] = ws
		}
		ws[c] = struct{}{}
	case !events && had:
		p.unwatchLocked(c, topic)
	}
	if !in && m.user != "" {
		p.addLocalLocked(pkey{topic, m.user}, 1)
	}
	if m.user == "" && !events {
		p.dropLocked(c, m, topic)
	}
}

// leave removes c's subscription to topic from the table.
func (p *presence) leave(c *conn, topic string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.members[c]; m != nil {
		p.leaveLocked(c, m, topic)
	}
}

// forget removes every subscription of c, a connection that ended.
func (p *presence) forget(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.members[c]; m != nil {
		for topic := range m.topics {
			p.leaveLocked(c, m, topic)
		}
	}
}

func (p *presence) leaveLocked(c *conn, m *memberOf, topic string) {
	events, in := m.topics[topic]
	if !in {
		return
	}
	if events {
		p.unwatchLocked(c, topic)
	}
	if m.user != "" {
		p.addLocalLocked(pkey{topic, m.user}, -1)
	}
	p.dropLocked(c, m, topic)
}

func (p *presence) dropLocked(c *conn, m *memberOf, topic string) {
	delete(m.topics, topic)
	if len(m.topics) == 0 {
		delete(p.members, c)
	}
}

func (p *presence) unwatchLocked(c *conn, topic string) {
	if ws := p.watchers[topic]; ws != nil {
		delete(ws, c)
		if len(ws) == 0 {
			delete(p.watchers, topic)
		}
	}
}

// addLocalLocked moves this node's count for k by d, and tells the other
// nodes (the next delta).
func (p *presence) addLocalLocked(k pkey, d int) {
	n := p.local[k] + d
	if n <= 0 {
		delete(p.local, k)
	} else {
		p.local[k] = n
	}
	if p.bus != nil {
		p.dirty[k] = struct{}{}
		signal(p.kick)
	}
	p.addTotalLocked(k, d)
}

// addTotalLocked moves the cluster's count for k by d and sends the event
// when the user's first connection came (0 -> 1) or its last went.
func (p *presence) addTotalLocked(k pkey, d int) {
	if d == 0 {
		return
	}
	users := p.total[k.topic]
	was := users[k.user]
	n := was + d
	if n > 0 {
		if users == nil {
			users = map[string]int{}
			p.total[k.topic] = users
		}
		users[k.user] = n
	} else if users != nil {
		delete(users, k.user)
		if len(users) == 0 {
			delete(p.total, k.topic)
		}
	}
	switch {
	case was <= 0 && n > 0:
		p.emitLocked(k, protocol.PresenceJoin)
	case was > 0 && n <= 0:
		p.emitLocked(k, protocol.PresenceLeave)
	}
}

// emitLocked queues one presence frame, encoded once, to every watcher of
// the topic on this node (without waiting: a watcher whose queue is full
// is closed with 4429, as for updates).
func (p *presence) emitLocked(k pkey, event string) {
	ws := p.watchers[k.topic]
	if len(ws) == 0 {
		return
	}
	frame, err := json.Marshal(protocol.PresenceFrame{Type: protocol.TypePresence, Topic: k.topic, Event: event, User: k.user})
	if err != nil {
		return // plain strings: not reached
	}
	p.events.Inc()
	for c := range ws {
		c.offer(frame)
	}
}

// list is topic's presence: at most most users, sorted by id, each with
// its connections on every node; total counts every user.
func (p *presence) list(topic string, most int) protocol.PresenceResult {
	p.mu.Lock()
	us := make([]protocol.PresenceUser, 0, len(p.total[topic]))
	for u, n := range p.total[topic] {
		us = append(us, protocol.PresenceUser{User: u, Conns: n})
	}
	p.mu.Unlock()
	slices.SortFunc(us, func(a, b protocol.PresenceUser) int { return strings.Compare(a.User, b.User) })
	res := protocol.PresenceResult{Topic: topic, Users: us, Total: len(us)}
	if len(us) > most {
		res.Users, res.Truncated = us[:most], true
	}
	return res
}

// encodePresence is res as a response's result, within maxResultBytes: a
// list that would not fit (long user ids that need escaping) is cut
// further, and says so.
func encodePresence(res protocol.PresenceResult) json.RawMessage {
	for {
		b, err := json.Marshal(res)
		if err == nil && len(b) <= maxResultBytes {
			return b
		}
		res.Users, res.Truncated = res.Users[:len(res.Users)/2], true
	}
}

// presenceRequest answers the wsready.presence request: params
// {"topic": T}, Authorize's ActSubscribe and then ActPresence for T, then
// the table. Who may not join a topic may not see who is in it: a hook
// written for subscribes keeps a private topic's members private too.
func (c *conn) presenceRequest(params json.RawMessage) (json.RawMessage, *protocol.ErrorBody) {
	var q protocol.PresenceParams
	if params == nil || json.Unmarshal(params, &q) != nil {
		return nil, &protocol.ErrorBody{Code: protocol.ErrWrongType, Message: `params must be {"topic": T}`}
	}
	if !protocol.ValidTopic(q.Topic) {
		return nil, &protocol.ErrorBody{Code: protocol.ErrInvalidTopic, Message: protocol.TopicRule}
	}
	if e := c.authorize(c.ctx, Action{Kind: ActSubscribe, Topic: q.Topic}); e != nil {
		return nil, e
	}
	if e := c.authorize(c.ctx, Action{Kind: ActPresence, Topic: q.Topic}); e != nil {
		return nil, e
	}
	return encodePresence(c.s.presence.list(q.Topic, c.s.opts.MaxPresenceUsers)), nil
}

// Presence is who is subscribed to topic across the cluster (every node
// that shares this server's NATS; this node alone without one): at most
// Options.MaxPresenceUsers users, sorted by id, each with its connection
// count, Total every user, Truncated whether some were left out. Anonymous
// connections are not counted. Another node's changes arrive within a
// round trip on NATS; a node that died leaves within four
// PresenceHeartbeats. It fails only for a name protocol.ValidTopic refuses
// or a ctx that has ended.
func (s *Server) Presence(ctx context.Context, topic string) (protocol.PresenceResult, error) {
	if !protocol.ValidTopic(topic) {
		return protocol.PresenceResult{}, fmt.Errorf("failed to read presence: %w", protocol.ErrBadTopic)
	}
	if err := ctx.Err(); err != nil {
		return protocol.PresenceResult{}, fmt.Errorf("failed to read presence: %w", err)
	}
	return s.presence.list(topic, s.opts.MaxPresenceUsers), nil
}

// warnOnce logs msg once per key (a bound reached), without peer text.
func (p *presence) warnOnceLocked(key, msg string, args ...any) {
	if p.loggedAt[key] || len(p.loggedAt) > 64 {
		return
	}
	p.loggedAt[key] = true
	p.s.log.Warn(msg, args...)
}

// now is the presence clock: heartbeats and expiry are wall-clock
// intervals, whatever Options.Now says.
func presenceNow() time.Time { return time.Now() }
