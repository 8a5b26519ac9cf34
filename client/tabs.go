package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// Many tabs, one connection (stage 8). Tabs of one origin elect a leader
// (the browser driver does it with Web Locks and a BroadcastChannel); only
// the leader's core holds a connection. The core's part is pure events:
//
//   - BecameFollower: another tab leads. A follower core never dials and
//     arms no socket deadline; a leader that steps down closes its socket
//     (1000) without a reconnect (its Reconnector waits for leadership:
//     wait_leader). Its requests in flight are rejected with
//     ConnectionClosed, queued ones wait again (queue.go).
//   - LeaderState and LeaderUpdate: the driver relays the leader's state
//     and updates. The follower's State is the leader's (State.Follower
//     set); an update is delivered if this tab's app subscribed to its
//     topic, through the same cursor as its own (a duplicate is dropped
//     with Resume), so the cursors a follower holds are where the leader
//     stood.
//   - Requests and publishes made in a follower tab are registered here,
//     with their own timeouts, and handed to the driver as EffForward (the
//     frame, with this core's id) while the leader is READY; the leader's
//     driver sends them through its own core (RequestWith/PublishWith with
//     the frame's timeoutMs and key, Queue when it has a key) and relays
//     the answer back, which settles it through Relayed.
//   - BecameLeader: this tab leads now. The core dials at once (unless it
//     waits for the network or a visible page), subscribing with since =
//     the cursors it holds, so a takeover resumes where the leader
//     stopped; forwarded requests the old leader never answered are
//     rejected with ConnectionClosed (queued ones are sent again with
//     their keys).
//
// A core starts as the leader (a native client, one tab) unless
// Config.Follower says otherwise.

// BecameFollower reports that another tab holds the connection now.
func (c *Core) BecameFollower(now time.Time) {
	if c.ended != NotEnded || c.follower {
		return
	}
	c.follower = true
	c.rc.BecameFollower()
	c.trace("follower", c.current, "another tab holds the connection")
	c.reconnects = nil
	c.tokenWait, c.token = false, ""
	lost := c.current
	if lost != 0 && c.transport != Down {
		c.emitClose(lost, protocol.CloseNormal, "another tab leads")
	}
	c.transport, c.current, c.probing = Down, 0, false
	c.clearScope(scopeSocket)
	if d := c.draining; d != 0 {
		c.emitClose(d, protocol.CloseNormal, "another tab leads")
		c.draining = 0
		c.rejectOn(d, "another tab leads", false)
	}
	c.dropSockets(false)
	if lost != 0 {
		c.rejectOn(lost, "another tab leads", false)
	}
	for _, d := range []deadline{dlToken, dlWindow, dlCooldown, dlReprobe, dlDegraded, dlOffline} {
		c.dl[d] = time.Time{}
	}
	// Until the driver relays the leader's state: not READY, the epoch
	// where this tab left it.
	c.leaderState = State{Epoch: uint64(c.nextSocket), Via: c.rc.NextTransport()}
	c.after(now)
}

// BecameLeader reports that this tab holds the connection now: the core
// dials at once (after a token, with a token hook), unless it waits for
// the network or a visible page.
func (c *Core) BecameLeader(now time.Time) {
	if c.ended != NotEnded || !c.follower {
		return
	}
	c.follower = false
	may := c.rc.BecameLeader()
	c.trace("leader", 0, "this tab holds the connection now")
	// What the old leader never answered: its connection is gone.
	c.rejectOn(0, "the leader tab went away", false)
	ls := c.leaderState
	c.leaderState = State{}
	// The epoch the app saw never drops: this tab's sockets count on from
	// the leader's.
	c.nextSocket = max(c.nextSocket, SocketID(ls.Epoch))
	c.lastState = State{}
	c.lostReadyAt = now
	if c.started {
		if !ls.Ready && !ls.NotReadySince.IsZero() && c.cfg.on.WhereUsersAre {
			// The app has been without READY since the leader lost it.
			c.notReadySince, c.degraded, c.offline = ls.NotReadySince, ls.Degraded, ls.Offline
			c.armNotReady(now)
		} else {
			c.notReady(now)
		}
		if may {
			c.dial(now)
		}
	}
	c.after(now)
}

// LeaderState relays the leader tab's state to a follower's core; its
// State is the leader's from now (State.Follower set). Requests waiting in
// the queue are forwarded once the leader is READY.
func (c *Core) LeaderState(st State, now time.Time) {
	if c.ended != NotEnded || !c.follower {
		return
	}
	st.Follower = false
	if st.Via == 0 {
		st.Via = c.rc.NextTransport()
	}
	c.leaderState = st
	c.after(now)
}

// LeaderUpdate relays an update the leader tab received to a follower's
// core: delivered (EffUpdate) if this tab's app subscribed to its topic,
// through the topic's cursor as if it came on a socket of this core's.
func (c *Core) LeaderUpdate(u Update, now time.Time) {
	if c.ended != NotEnded || !c.follower || !protocol.ValidTopic(u.Topic) {
		return
	}
	c.onUpdate(SocketID(u.Epoch), protocol.Message{Type: protocol.TypeUpdate, Topic: u.Topic, Seq: u.Seq, Data: u.Data})
	c.after(now)
}

// Relayed settles a request this (follower) core forwarded (EffForward),
// with the answer the leader tab relayed: result (raw JSON) when err is
// nil, else err as the leader's core settled it (a *ServerError or a
// *RequestError). An answer to no request in flight is dropped.
func (c *Core) Relayed(id uint64, result []byte, err error, now time.Time) {
	p, ok := c.pending[id]
	if !ok || !p.sent || p.epoch != 0 {
		c.stats.DroppedResponses++
		c.after(now)
		return
	}
	p.done, p.msg = true, protocol.Message{}
	delete(c.pending, id)
	if err != nil {
		c.settleErr(id, err)
	} else {
		c.emit(Effect{Kind: EffSettle, ID: id, Result: result})
	}
	c.after(now)
}
