package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

func (h *harness) queued(timeout time.Duration) uint64 {
	id := h.c.RequestWith("cart.add", []byte(`{}`), RequestOptions{Timeout: timeout, Queue: true}, h.now)
	h.drain()
	return id
}

// sentRequests returns the requests sent on socket s.
func (h *harness) sentRequests(s SocketID) []protocol.Message {
	var out []protocol.Message
	for _, m := range h.sockets[s].sent {
		if m.Type == protocol.TypeRequest || m.Type == protocol.TypePublish {
			out = append(out, m)
		}
	}
	return out
}

// A queued request made while not READY waits, and is sent once READY
// with an idempotency key and what is left of its timeout.
func TestAQueuedRequestWaitsForReady(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.last()
	id := h.queued(10 * time.Second)
	if _, settled := h.settled[id]; settled {
		t.Fatal("a queued request settled at once")
	}
	h.advance(2 * time.Second)
	h.open(s)
	if len(h.sentRequests(s)) != 0 {
		t.Fatal("sent before READY")
	}
	h.ping(s, 1000)
	h.subscribed(s)
	reqs := h.sentRequests(s)
	if len(reqs) != 1 || reqs[0].ID != id || !protocol.ValidKey(reqs[0].Key) || len(reqs[0].Key) != 16 || reqs[0].TimeoutMs != 8000 {
		t.Fatalf("sent %+v", reqs)
	}
	h.frame(s, protocol.Message{Type: protocol.TypeResponse, ID: id, Result: []byte(`{"n":1}`)})
	if e := h.settled[id]; e.Err != nil || string(e.Result) != `{"n":1}` {
		t.Fatalf("settled %+v", e)
	}
}

// One that never becomes sendable settles with NotReady at its timeout.
func TestAQueuedRequestThatNeverSentTimesOutNotReady(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	id := h.queued(3 * time.Second)
	h.advance(3 * time.Second)
	var re *RequestError
	if e := h.settled[id]; !errors.As(e.Err, &re) || !errors.Is(e.Err, ErrNotReady) {
		t.Fatalf("settled %+v", e)
	}
}

// A queued request in flight when the connection is lost waits again and
// is sent again after the reconnect with the same key (the server runs it
// once); a request without the queue rejects with ConnectionClosed, as
// always. One sent once that times out waiting again is RequestTimeout.
func TestAQueuedRequestIsResentWithItsKeyAfterAReconnect(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	id := h.queued(20 * time.Second)
	plain := h.request()
	first := h.sentRequests(s)[0]
	h.closed(s)
	if _, settled := h.settled[id]; settled {
		t.Fatal("the queued request settled on the loss")
	}
	if e := h.settled[plain]; !errors.Is(e.Err, ErrConnectionClosed) {
		t.Fatalf("the plain request settled with %v", e.Err)
	}
	h.advanceToDial()
	s2 := h.ready()
	again := h.sentRequests(s2)
	if len(again) != 1 || again[0].ID != id || again[0].Key != first.Key || again[0].TimeoutMs >= first.TimeoutMs {
		t.Fatalf("resent %+v, first %+v", again, first)
	}
	if h.c.Stats().Resent != 1 {
		t.Fatalf("stats %+v", h.c.Stats())
	}
	// Lost again, and never READY again within its timeout.
	h.closed(s2)
	h.advance(20 * time.Second)
	if e := h.settled[id]; !errors.Is(e.Err, ErrRequestTimeout) {
		t.Fatalf("settled %+v, want RequestTimeout (it was sent: the outcome is unknown)", e)
	}
}

// Config.QueueWhileNotReady queues every request and publish, in order;
// the app's own key is used; a bad key is refused; Stop settles what
// waits with NotReady; stage 0 (no registry) ignores the queue.
func TestTheQueueOptionsAndKeys(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.QueueWhileNotReady = true })
	h.start()
	a := h.request()
	b := h.c.PublishWith("chat", []byte(`1`), RequestOptions{Key: "my-key_1"}, h.now)
	bad := h.c.RequestWith("x", nil, RequestOptions{Key: "no spaces"}, h.now)
	h.drain()
	if e := h.settled[bad]; !errors.Is(e.Err, ErrInvalidRequest) {
		t.Fatalf("a bad key settled with %v", e.Err)
	}
	s := h.ready()
	reqs := h.sentRequests(s)
	if len(reqs) != 2 || reqs[0].ID != a || reqs[1].ID != b || reqs[1].Key != "my-key_1" || reqs[1].Type != protocol.TypePublish {
		t.Fatalf("sent %+v", reqs)
	}
	c := h.queued(time.Minute)
	h.closed(s)
	h.c.Stop(h.now)
	h.drain()
	for _, id := range []uint64{a, b, c} {
		if e := h.settled[id]; e.Err == nil {
			t.Fatalf("request %d not settled by Stop", id)
		}
	}

	h = newHarness(t, 0)
	h.start()
	if id := h.queued(time.Second); !errors.Is(h.settled[id].Err, ErrNotReady) {
		t.Fatal("stage 0 queued a request")
	}
}

// Keys are drawn from Config.Rand: the same draws give the same key.
func TestKeysComeFromTheConfigsRandomSource(t *testing.T) {
	h := newHarness(t, 8)
	h.rand.vals = []float64{0, 1.0 / 64, 63.0 / 64}
	h.start()
	h.queued(time.Second)
	// Three scripted draws, then the source's 0.5 ('g', the 33rd char).
	s := h.ready()
	if k := h.sentRequests(s)[0].Key; k != "AB_"+strings.Repeat("g", 13) {
		t.Fatalf("key %q", k)
	}
}

// A queued request in flight on a socket a move left behind is sent again
// at once on the new socket when the old one closes before answering: the
// client is READY, nothing waits for a transition.
func TestAQueuedRequestOnTheDrainingSocketGoesToTheNewOne(t *testing.T) {
	h, old := onHTTP(t, func(c *Config) { c.ReprobeInterval = time.Minute })
	h.keepAlive(old, time.Minute)
	cand := h.last()
	h.open(cand)
	id := h.queued(time.Minute) // on the HTTP socket
	h.ping(cand, 1000)
	h.subscribedAt(cand, "feed", 1, 0, "A")
	h.closed(old)
	reqs := h.sentRequests(cand)
	if len(reqs) != 1 || reqs[0].ID != id || reqs[0].Key != h.sentRequests(old)[0].Key {
		t.Fatalf("sent on the new socket: %+v", reqs)
	}
}

// The requeued requests merge into those already waiting in id order
// (rejectOn keeps the waiting queue in id order without a sort).
func TestMergeByIDKeepsIDOrder(t *testing.T) {
	req := func(ids ...uint64) []*pendingRequest {
		var out []*pendingRequest
		for _, id := range ids {
			out = append(out, &pendingRequest{id: id})
		}
		return out
	}
	for _, c := range []struct{ a, b, want []uint64 }{
		{[]uint64{1, 4, 9}, []uint64{2, 3, 10}, []uint64{1, 2, 3, 4, 9, 10}},
		{nil, []uint64{5, 6}, []uint64{5, 6}},
		{[]uint64{7}, nil, []uint64{7}},
		{[]uint64{8, 9}, []uint64{1, 2}, []uint64{1, 2, 8, 9}},
	} {
		got := mergeByID(req(c.a...), req(c.b...))
		if len(got) != len(c.want) {
			t.Fatalf("merge %v %v: %d requests, want %v", c.a, c.b, len(got), c.want)
		}
		for i, p := range got {
			if p.id != c.want[i] {
				t.Fatalf("merge %v %v: id %d at %d, want %v", c.a, c.b, p.id, i, c.want)
			}
		}
	}
}
