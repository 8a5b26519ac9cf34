package client

import (
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

func follower(c *Config) { c.Follower = true }

func leaderReady(epoch uint64) State {
	return State{Transport: Up, Protocol: Up, Service: Up, Ready: true, Epoch: epoch, Via: TransportWebSocket}
}

// A follower tab's core never dials and arms no socket deadline; its state
// is the leader's as relayed; its requests are forwarded while the leader
// is READY and settle with the relayed answer, or at their own timeout.
func TestAFollowerNeverDialsAndForwards(t *testing.T) {
	h := newHarness(t, 8, follower)
	h.start()
	if !h.timer.IsZero() {
		t.Fatalf("a follower armed a timer at %v", h.timer)
	}
	h.advance(time.Hour)
	if len(h.dials) != 0 || !h.timer.IsZero() {
		t.Fatalf("a follower dialled %v or armed a timer at %v", h.dials, h.timer)
	}
	if st := h.state(); !st.Follower || st.Ready {
		t.Fatalf("follower state %+v", st)
	}
	if id := h.request(); !errors.Is(h.settled[id].Err, ErrNotReady) {
		t.Fatal("a request while the leader is not READY was not refused")
	}
	h.c.LeaderState(leaderReady(7), h.now)
	h.drain()
	if st := h.state(); !st.Ready || !st.Follower || st.Epoch != 7 {
		t.Fatalf("relayed state %+v", st)
	}
	id := h.request()
	if len(h.forwards) != 1 || h.forwards[0].ID != id {
		t.Fatalf("forwards %+v", h.forwards)
	}
	m, err := protocol.Decode(h.forwards[0].Frame)
	if err != nil || m.Type != protocol.TypeRequest || m.ID != id || m.TimeoutMs != 5000 {
		t.Fatalf("forwarded frame %s: %+v %v", h.forwards[0].Frame, m, err)
	}
	h.c.Relayed(id, []byte(`{"ok":1}`), nil, h.now)
	h.drain()
	if e := h.settled[id]; e.Err != nil || string(e.Result) != `{"ok":1}` {
		t.Fatalf("settled %+v", e)
	}
	h.c.Relayed(id, nil, nil, h.now) // twice: dropped
	h.drain()
	late := h.request()
	h.advance(5 * time.Second)
	if !errors.Is(h.settled[late].Err, ErrRequestTimeout) {
		t.Fatal("a forwarded request did not time out on its own")
	}
	se := &ServerError{ID: 99, Code: "cart.full", Message: "m"}
	id = h.request()
	h.c.Relayed(id, nil, se, h.now)
	h.drain()
	if got := h.settled[id].Err; !errors.As(got, &se) || se.Code != "cart.full" {
		t.Fatalf("relayed error %v", got)
	}
	if h.c.Stats().DroppedResponses != 1 || h.c.Stats().Forwarded != 3 {
		t.Fatalf("stats %+v", h.c.Stats())
	}
}

// Relayed updates are delivered for this tab's topics through its own
// cursors; becoming leader dials at once and resumes from them; a
// forwarded request the old leader never answered rejects with
// ConnectionClosed, a queued one is sent again with its key.
func TestTakingOverResumesFromTheRelayedCursors(t *testing.T) {
	h := newHarness(t, 8, follower)
	h.start()
	h.c.Subscribe("chat", 0, false, h.now)
	h.c.LeaderState(leaderReady(3), h.now)
	for _, u := range []Update{{Topic: "feed", Seq: 41}, {Topic: "feed", Seq: 42}, {Topic: "chat", Seq: 7}, {Topic: "other", Seq: 1}, {Topic: "feed", Seq: 42}} {
		u.Epoch = 3
		h.c.LeaderUpdate(u, h.now)
	}
	h.drain()
	if got := h.seqs("feed"); len(got) != 2 || got[1] != 42 || len(h.seqs("chat")) != 1 || len(h.seqs("other")) != 0 {
		t.Fatalf("delivered %+v", h.updates)
	}
	plain := h.request()
	queued := h.queued(time.Minute)
	key := ""
	if m, _ := protocol.Decode(h.forwards[1].Frame); m.Key != "" {
		key = m.Key
	} else {
		t.Fatalf("the queued request was forwarded without a key: %s", h.forwards[1].Frame)
	}
	h.advance(time.Second)
	h.c.BecameLeader(h.now)
	h.drain()
	if len(h.dials) != 1 {
		t.Fatal("the new leader did not dial at once")
	}
	if e := h.settled[plain]; !errors.Is(e.Err, ErrConnectionClosed) {
		t.Fatalf("the forwarded request settled with %v", e.Err)
	}
	s := h.last()
	h.open(s)
	if m := h.lastSubscribe(s, "feed"); !m.HasSince || m.Since != 42 {
		t.Fatalf("feed resubscribe %+v", m)
	}
	if m := h.lastSubscribe(s, "chat"); !m.HasSince || m.Since != 7 {
		t.Fatalf("chat resubscribe %+v", m)
	}
	h.ping(s, 1000)
	h.subscribedAt(s, "feed", 43, 43, "")
	h.subscribedAt(s, "chat", 8, 7, "")
	reqs := h.sentRequests(s)
	if st := h.state(); !st.Ready || st.Follower || len(reqs) != 1 || reqs[0].ID != queued || reqs[0].Key != key {
		t.Fatalf("state %+v, sent %+v", st, reqs)
	}
}

// A leader that steps down closes its socket (1000) without a reconnect
// and arms nothing of the socket's; what was in flight rejects with
// ConnectionClosed; Online, Visible and Reconnect dial nothing.
func TestSteppingDownClosesWithoutAReconnect(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	id := h.request()
	records := len(h.records)
	h.c.BecameFollower(h.now)
	h.drain()
	if !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseNormal {
		t.Fatal("the socket was not closed with 1000")
	}
	if e := h.settled[id]; !errors.Is(e.Err, ErrConnectionClosed) {
		t.Fatalf("in flight: %v", e.Err)
	}
	if len(h.records) != records {
		t.Fatal("stepping down recorded a reconnect decision")
	}
	h.c.Closed(s, 1000, "", h.now) // its close event: stale
	h.c.Offline(h.now)
	h.c.Online(h.now)
	h.c.Hidden(h.now)
	h.c.Visible(h.now)
	h.c.Reconnect(h.now)
	h.drain()
	h.advance(time.Hour)
	if len(h.dials) != 1 || !h.timer.IsZero() || !h.state().Follower {
		t.Fatalf("after stepping down: dials %v, timer %v, state %+v", h.dials, h.timer, h.state())
	}
	// And back: it leads again.
	h.c.BecameLeader(h.now)
	h.drain()
	if len(h.dials) != 2 {
		t.Fatal("no dial on leading again")
	}
}

// Leadership works before stage 8 too; a new leader that is offline waits
// for the network.
func TestLeadershipAtStage7AndOffline(t *testing.T) {
	h := newHarness(t, 7, follower)
	h.start()
	h.c.Offline(h.now)
	h.c.BecameLeader(h.now)
	h.drain()
	if len(h.dials) != 0 {
		t.Fatal("dialled while offline")
	}
	h.c.Online(h.now)
	h.drain()
	h.advanceToDial()
	if len(h.dials) != 1 {
		t.Fatal("no dial once online")
	}
}
