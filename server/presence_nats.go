//go:build !js

package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/wsready/wsready/protocol"
)

// Presence across nodes, over core NATS (no JetStream), under
// wsready.presence.>:
//
//	wsready.presence.b.d        a node's delta: its new connection count
//	                            for each (topic, user) that changed, with a
//	                            seq (+1 per delta, from 1, per node)
//	wsready.presence.b.h        a node's heartbeat, every PresenceHeartbeat,
//	                            with the last seq it gave
//	wsready.presence.b.hello    a node started: the others heartbeat at once
//	wsready.presence.b.bye      a node is closing: drop its entries now
//	wsready.presence.n.<id>.req ask node <id> for a snapshot
//	wsready.presence.n.<id>.snap a snapshot for node <id>, in parts: every
//	                            entry of the node that sends it, and the seq
//	                            it is at
//
// A node applies another's deltas in seq order. One it has not met, a seq
// it missed (a delta lost while NATS was away: the next delta or heartbeat
// shows the gap) or a snapshot that does not come within two heartbeats
// makes it ask for a snapshot; deltas meanwhile are held (at most
// maxPeerBuffer) and those past the snapshot's seq applied after it. The
// counts are absolute, so a delta applied twice changes nothing. A node
// not heard from for three heartbeats is dropped with its entries (its
// users leave); the check runs every heartbeat, so a dead node's entries go
// within four heartbeats (8s at the default 2s). A node that closes says
// bye: its entries go at once. A node that starts says hello, learns the
// others from their heartbeats and asks each for its snapshot.

const (
	presenceSubjects   = "wsready.presence."
	presenceBroadcast  = presenceSubjects + "b."
	presenceDirect     = presenceSubjects + "n."
	presenceChunk      = 500 // entries per delta or snapshot part: at most about 140 KB
	presenceStaleBeats = 3   // heartbeats of silence after which a node is dropped
)

// presenceMsg is every presence message on NATS.
type presenceMsg struct {
	Node    string          `json:"n"`           // the sender
	Seq     uint64          `json:"s,omitempty"` // a delta's seq; a heartbeat's or snapshot's last seq
	Req     uint64          `json:"r,omitempty"` // a snapshot request's id, and its parts'
	Part    int             `json:"i,omitempty"` // a snapshot part's index, from 0
	Last    bool            `json:"l,omitempty"` // the snapshot's last part
	Entries []presenceEntry `json:"e,omitempty"`
	Revoked []revocation    `json:"v,omitempty"` // a snapshot's: the sender's revocations in force (control.go)
}

type presenceEntry struct {
	Topic string `json:"t"`
	User  string `json:"u"`
	Conns int    `json:"c"` // 0: gone from the sender
}

// peerNode is another node's presence as this one holds it.
type peerNode struct {
	entries map[pkey]int
	seq     uint64    // the last delta applied
	seen    time.Time // the last message from it
	syncing bool      // a snapshot is asked for
	req     uint64    // its request id
	asked   time.Time
	buf     []presenceMsg // deltas that came while syncing
	snap    map[pkey]int  // the snapshot's parts so far
	next    int           // the part expected next
}

type presenceBus struct {
	nc   *nats.Conn
	subs []*nats.Subscription
}

// outMsg is a message to publish once the lock is released.
type outMsg struct {
	subject string
	msg     presenceMsg
}

// startBus joins the other nodes on nc and starts the heartbeat. Called by
// New before any connection.
func (p *presence) startBus(nc *nats.Conn) error {
	b := &presenceBus{nc: nc}
	for subject, fn := range map[string]nats.MsgHandler{
		presenceBroadcast + ">":        p.onBroadcast,
		presenceDirect + p.node + ".>": p.onDirect,
		controlSubject:                 p.s.onControl, // Disconnect and Revoke (control.go)
	} {
		sub, err := nc.Subscribe(subject, fn)
		if err != nil {
			for _, s := range b.subs {
				s.Unsubscribe()
			}
			return fmt.Errorf("failed to subscribe to %s: %w", subject, err)
		}
		b.subs = append(b.subs, sub)
	}
	p.mu.Lock()
	p.bus = b
	p.mu.Unlock()
	p.publish(outMsg{presenceBroadcast + "hello", presenceMsg{Node: p.node}})
	p.s.wg.Add(1) // from New, before Close can run
	go p.run()
	return nil
}

// run flushes deltas as they come and, every heartbeat, says this node is
// alive, drops the nodes that went silent and asks again for snapshots
// that did not come.
func (p *presence) run() {
	defer p.s.wg.Done()
	hb := p.s.opts.PresenceHeartbeat
	t := time.NewTicker(hb)
	defer t.Stop()
	for {
		select {
		case <-p.s.ctx.Done():
			return
		case <-p.kick:
			p.flush()
		case <-p.hbNow:
			p.flush()
			p.heartbeat()
		case <-t.C:
			p.flush()
			p.heartbeat()
			p.sweep(presenceNow(), hb)
		}
	}
}

// flush sends the local entries changed since the last delta, with their
// counts now. Only run sends deltas and heartbeats, in seq order.
func (p *presence) flush() {
	p.mu.Lock()
	if len(p.dirty) == 0 || p.bus == nil {
		p.mu.Unlock()
		return
	}
	var out []outMsg
	entries := make([]presenceEntry, 0, min(len(p.dirty), presenceChunk))
	for k := range p.dirty {
		entries = append(entries, presenceEntry{Topic: k.topic, User: k.user, Conns: p.local[k]})
		if len(entries) == presenceChunk {
			p.seq++
			out = append(out, outMsg{presenceBroadcast + "d", presenceMsg{Node: p.node, Seq: p.seq, Entries: entries}})
			entries = make([]presenceEntry, 0, presenceChunk)
		}
	}
	if len(entries) > 0 {
		p.seq++
		out = append(out, outMsg{presenceBroadcast + "d", presenceMsg{Node: p.node, Seq: p.seq, Entries: entries}})
	}
	clear(p.dirty)
	p.mu.Unlock()
	p.publish(out...)
}

func (p *presence) heartbeat() {
	p.mu.Lock()
	m := presenceMsg{Node: p.node, Seq: p.seq}
	p.mu.Unlock()
	p.publish(outMsg{presenceBroadcast + "h", m})
}

// sweep drops the nodes not heard from for presenceStaleBeats heartbeats
// and asks again for the snapshots that did not come within two.
func (p *presence) sweep(now time.Time, hb time.Duration) {
	var out []outMsg
	p.mu.Lock()
	for id, peer := range p.peers {
		switch {
		case now.Sub(peer.seen) > presenceStaleBeats*hb:
			p.dropPeerLocked(id)
			p.lost.Inc()
			p.s.log.Info("presence: a node went silent; its users left", "nodes", len(p.peers))
		case peer.syncing && now.Sub(peer.asked) > 2*hb:
			out = append(out, p.resyncLocked(id, peer, now))
		}
	}
	p.mu.Unlock()
	p.publish(out...)
}

// publish sends messages, in order; a failure (NATS away) is left to the
// seqs: the others see the gap and ask for a snapshot.
func (p *presence) publish(out ...outMsg) {
	p.mu.Lock()
	b := p.bus
	p.mu.Unlock()
	if b == nil {
		return
	}
	for _, o := range out {
		data, err := json.Marshal(o.msg)
		if err != nil {
			continue // plain values: not reached
		}
		if err := b.nc.Publish(o.subject, data); err != nil {
			p.s.logs.Debug("presence: a message was not sent", "cause", err.Error())
		}
	}
}

// validNode reports whether id can be a node's id (a subject token).
func validNode(id string) bool { return protocol.ValidKey(id) }

// onBroadcast takes another node's delta, heartbeat, hello or bye.
func (p *presence) onBroadcast(msg *nats.Msg) {
	kind := strings.TrimPrefix(msg.Subject, presenceBroadcast)
	var m presenceMsg
	if json.Unmarshal(msg.Data, &m) != nil || m.Node == p.node || !validNode(m.Node) {
		return
	}
	now := presenceNow()
	var out []outMsg
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	switch kind {
	case "d", "h":
		peer, req := p.peerLocked(m.Node, now)
		if req != nil {
			out = append(out, *req)
		}
		if peer == nil {
			break
		}
		peer.seen = now
		if kind == "h" {
			if !peer.syncing && m.Seq != peer.seq {
				out = append(out, p.resyncLocked(m.Node, peer, now)) // deltas missed
			}
			break
		}
		if r := p.deltaLocked(m.Node, peer, m, now); r != nil {
			out = append(out, *r)
		}
	case "hello":
		signal(p.hbNow)
	case "bye":
		p.dropPeerLocked(m.Node)
	}
	p.mu.Unlock()
	p.publish(out...)
}

// peerLocked returns the node called id, meeting it (and asking for its
// snapshot) if it is new; nil past maxPeers.
func (p *presence) peerLocked(id string, now time.Time) (*peerNode, *outMsg) {
	if peer := p.peers[id]; peer != nil {
		return peer, nil
	}
	if len(p.peers) >= maxPeers {
		p.warnOnceLocked("peers", "presence: more nodes than this one tracks; the others' users are not listed", "max", maxPeers)
		return nil, nil
	}
	peer := &peerNode{entries: map[pkey]int{}, seen: now}
	p.peers[id] = peer
	req := p.resyncLocked(id, peer, now)
	return peer, &req
}

// resyncLocked asks id for a snapshot, holding its deltas meanwhile.
func (p *presence) resyncLocked(id string, peer *peerNode, now time.Time) outMsg {
	p.reqs++
	peer.syncing, peer.req, peer.asked, peer.snap, peer.next = true, p.reqs, now, nil, 0
	p.syncs.Inc()
	return outMsg{presenceDirect + id + ".req", presenceMsg{Node: p.node, Req: p.reqs}}
}

// deltaLocked applies a delta from peer in seq order, or holds it.
func (p *presence) deltaLocked(id string, peer *peerNode, m presenceMsg, now time.Time) *outMsg {
	switch {
	case peer.syncing:
		if len(peer.buf) >= maxPeerBuffer {
			peer.buf = nil // the snapshot asked for next covers them
			r := p.resyncLocked(id, peer, now)
			return &r
		}
		peer.buf = append(peer.buf, m)
	case m.Seq <= peer.seq:
		// applied already
	case m.Seq == peer.seq+1:
		p.applyLocked(peer, m.Entries)
		peer.seq = m.Seq
	default: // a gap: deltas were lost
		peer.buf = append(peer.buf[:0], m)
		r := p.resyncLocked(id, peer, now)
		return &r
	}
	return nil
}

// applyLocked sets peer's entries as a delta or a snapshot gives them.
func (p *presence) applyLocked(peer *peerNode, es []presenceEntry) {
	for _, e := range es {
		if !protocol.ValidTopic(e.Topic) || e.User == "" || len(e.User) > protocol.MaxIDBytes || e.Conns < 0 || e.Conns > maxUserConns {
			continue // not something a node sends
		}
		p.setPeerLocked(peer, pkey{e.Topic, e.User}, e.Conns)
	}
}

func (p *presence) setPeerLocked(peer *peerNode, k pkey, n int) {
	was, had := peer.entries[k]
	switch {
	case n == 0:
		delete(peer.entries, k)
	case !had && len(peer.entries) >= maxPeerEntries:
		p.warnOnceLocked("entries", "presence: a node holds more entries than this one tracks for it; the others are not listed", "max", maxPeerEntries)
		return
	default:
		peer.entries[k] = n
	}
	p.addTotalLocked(k, n-was)
}

// dropPeerLocked forgets node id and its entries: its users leave.
func (p *presence) dropPeerLocked(id string) {
	peer := p.peers[id]
	if peer == nil {
		return
	}
	delete(p.peers, id)
	for k, n := range peer.entries {
		p.addTotalLocked(k, -n)
	}
}

// onDirect takes a snapshot request for this node, or a part of a
// snapshot it asked for.
func (p *presence) onDirect(msg *nats.Msg) {
	kind := strings.TrimPrefix(msg.Subject, presenceDirect+p.node+".")
	var m presenceMsg
	if json.Unmarshal(msg.Data, &m) != nil || m.Node == p.node || !validNode(m.Node) {
		return
	}
	switch kind {
	case "req":
		p.publish(p.snapshot(m.Node, m.Req)...)
	case "snap":
		now := presenceNow()
		var out []outMsg
		p.mu.Lock()
		if !p.closed {
			if r := p.partLocked(m, now); r != nil {
				out = append(out, *r)
			}
		}
		p.mu.Unlock()
		p.publish(out...)
	}
}

// snapshot is this node's entries and revocations for node to, in
// parts, at the seq of the last delta given: the deltas after it carry
// what changes next.
func (p *presence) snapshot(to string, req uint64) []outMsg {
	subject := presenceDirect + to + ".snap"
	revoked := p.s.revocations.list(p.s.opts.Now())
	p.mu.Lock()
	seq := p.seq
	entries := make([]presenceEntry, 0, len(p.local))
	for k, n := range p.local {
		entries = append(entries, presenceEntry{Topic: k.topic, User: k.user, Conns: n})
	}
	p.mu.Unlock()
	var out []outMsg
	for i := 0; ; i++ {
		part := entries[:min(len(entries), presenceChunk)]
		entries = entries[len(part):]
		rv := revoked[:min(len(revoked), presenceChunk)]
		revoked = revoked[len(rv):]
		m := presenceMsg{Node: p.node, Seq: seq, Req: req, Part: i, Entries: part, Revoked: rv}
		m.Last = len(entries) == 0 && len(revoked) == 0
		out = append(out, outMsg{subject, m})
		if m.Last {
			return out
		}
	}
}

// partLocked takes a part of a snapshot this node asked for; the last one
// replaces the node's entries, then the deltas held that follow it apply.
func (p *presence) partLocked(m presenceMsg, now time.Time) *outMsg {
	peer := p.peers[m.Node]
	if peer == nil || !peer.syncing || m.Req != peer.req {
		return nil // not asked, or an older request's
	}
	peer.seen = now
	if m.Part != peer.next {
		r := p.resyncLocked(m.Node, peer, now) // a part lost
		return &r
	}
	if m.Part == 0 {
		peer.snap = map[pkey]int{}
	}
	peer.next++
	for _, e := range m.Entries {
		if len(peer.snap) >= maxPeerEntries {
			break
		}
		if protocol.ValidTopic(e.Topic) && e.User != "" && len(e.User) <= protocol.MaxIDBytes && e.Conns > 0 && e.Conns <= maxUserConns {
			peer.snap[pkey{e.Topic, e.User}] = e.Conns
		}
	}
	p.s.revocations.merge(m.Revoked, p.s.opts.Now())
	if !m.Last {
		return nil
	}
	for k := range peer.entries {
		if _, ok := peer.snap[k]; !ok {
			p.setPeerLocked(peer, k, 0)
		}
	}
	for k, n := range peer.snap {
		p.setPeerLocked(peer, k, n)
	}
	peer.seq, peer.syncing, peer.snap = m.Seq, false, nil
	held := peer.buf
	peer.buf = nil
	for _, d := range held {
		if r := p.deltaLocked(m.Node, peer, d, now); r != nil {
			return r // a gap after the snapshot: ask again
		}
	}
	return nil
}

// close tells the other nodes this one is going (they drop its users at
// once) and leaves NATS. Called by Close after the connections ended.
func (p *presence) close() {
	p.mu.Lock()
	p.closed = true
	b := p.bus
	p.mu.Unlock()
	if b == nil {
		return
	}
	p.publish(outMsg{presenceBroadcast + "bye", presenceMsg{Node: p.node}})
	for _, s := range b.subs {
		s.Unsubscribe()
	}
	if err := b.nc.FlushTimeout(time.Second); err != nil {
		p.s.log.Debug("presence: bye not flushed", "cause", err.Error())
	}
}
