package client

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// An empty method or bad params never reach the wire and settle at once
// with ErrInvalidRequest, READY or not.
func TestInvalidRequestsSettleAtOnce(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.ready()
	before := len(h.sockets[s].sent)
	a := h.c.Request("", nil, h.now)
	b := h.c.Request("echo", []byte(`{bad`), h.now)
	h.drain()
	for _, id := range []uint64{a, b} {
		e, ok := h.settled[id]
		if !ok || !errors.Is(e.Err, ErrInvalidRequest) || ErrorName(e.Err) != "InvalidRequest" {
			t.Fatalf("request %d: %+v", id, e)
		}
	}
	if len(h.sockets[s].sent) != before {
		t.Fatal("an invalid request was sent")
	}
}

// A request or publish whose frame would exceed protocol.MaxFrameBytes is
// never sent (the server would close the connection with 1009, failing
// every request on it): it settles at once with ErrInvalidRequest, queued
// or not, and the connection is untouched. One that fits to the byte is
// sent. (Found by a walkthrough: a 70 KB request closed the connection.)
func TestAnOversizedRequestIsNeverSent(t *testing.T) {
	if tooLarge == nil {
		t.Skip("GOOS=js: wsready.js refuses it before the wasm (e2e TestHandleAfterCloseAndBadRequests)")
	}
	h := newHarness(t, 7)
	h.start()
	s := h.ready()
	before := len(h.sockets[s].sent)
	big := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
	a := h.c.Request("echo", big(protocol.MaxFrameBytes), h.now)
	b := h.c.PublishWith("chat", big(protocol.MaxFrameBytes-20), RequestOptions{Queue: true}, h.now)
	h.drain()
	for _, id := range []uint64{a, b} {
		e, ok := h.settled[id]
		if !ok || !errors.Is(e.Err, ErrInvalidRequest) || !strings.Contains(e.Err.Error(), "too large") {
			t.Fatalf("request %d: %+v", id, e)
		}
	}
	// A method of 11,000 '<' is 66,000 bytes in the frame (\u003c each).
	d := h.c.Request(strings.Repeat("<", 11000), []byte(`{}`), h.now)
	h.drain()
	if e, ok := h.settled[d]; !ok || !errors.Is(e.Err, ErrInvalidRequest) {
		t.Fatalf("a method that escapes past the bound: %+v", e)
	}
	if len(h.sockets[s].sent) != before || !h.state().Ready {
		t.Fatalf("an oversized request was sent, or READY went: %+v", h.state())
	}
	// The largest params that fit: the frame at MaxFrameBytes exactly.
	probe := protocol.Encode(protocol.Message{Type: protocol.TypeRequest, ID: h.c.nextID + 1, Method: "echo", Params: []byte(`""`), TimeoutMs: protocol.MaxTimeoutMs})
	fits := big(protocol.MaxFrameBytes - len(probe) + 2)
	c := h.c.Request("echo", fits, h.now)
	h.drain()
	if _, settled := h.settled[c]; settled || len(h.sockets[s].sent) != before+1 {
		t.Fatalf("a request of %d bytes of params was not sent", len(fits))
	}
	// One byte more does not fit.
	over := h.c.Request("echo", big(len(fits)+1), h.now)
	h.drain()
	if e, ok := h.settled[over]; !ok || !errors.Is(e.Err, ErrInvalidRequest) || len(h.sockets[s].sent) != before+1 {
		t.Fatalf("a request one byte past the bound: %+v", e)
	}
	if n := len(protocol.Encode(h.sockets[s].sent[before])); n > protocol.MaxFrameBytes {
		t.Fatalf("sent a frame of %d bytes", n)
	}
}

// An error frame that names a pending request settles it at once with the
// server's error, instead of leaving it to its timeout.
func TestAnErrorFrameWithAnIDSettlesThatRequest(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.ready()
	id := h.request()
	h.frame(s, protocol.Message{Type: protocol.TypeError, ID: id, Error: &protocol.ErrorBody{Code: protocol.ErrWrongType, Message: "x"}})
	e, ok := h.settled[id]
	var se *ServerError
	if !ok || !errors.As(e.Err, &se) || se.Code != protocol.ErrWrongType {
		t.Fatalf("settle: %+v", e)
	}
	if h.c.Pending() != 0 {
		t.Fatal("still pending")
	}
	// An error frame for no pending request is counted and harmless.
	h.frame(s, protocol.Message{Type: protocol.TypeError, ID: 999, Error: &protocol.ErrorBody{Code: "x"}})
	if st := h.c.Stats(); st.DroppedResponses != 1 || st.ServerErrors != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// The epoch in the state counts sockets and never drops back to 0 between
// them.
func TestEpochNeverDropsBetweenSockets(t *testing.T) {
	h := newHarness(t, 3)
	h.start()
	for range 3 {
		s := h.ready()
		h.closed(s)
		h.advance(time.Second)
	}
	var prev uint64
	for _, st := range h.states {
		if st.Epoch < prev || (prev > 0 && st.Epoch == 0) {
			t.Fatalf("epoch went %d -> %d in %+v", prev, st.Epoch, h.states)
		}
		prev = st.Epoch
	}
	if prev != 4 {
		t.Fatalf("last epoch %d, want 4", prev)
	}
}

// Pending requests are rejected in id order when the connection closes,
// every run alike.
func TestPendingRequestsAreRejectedInIDOrder(t *testing.T) {
	for run := range 20 {
		h := newHarness(t, 5)
		h.start()
		s := h.ready()
		var ids []uint64
		for range 30 {
			ids = append(ids, h.request())
		}
		h.order = nil
		h.closed(s)
		if !slices.Equal(h.order, ids) {
			t.Fatalf("run %d: settled in order %v, want %v", run, h.order, ids)
		}
	}
}

// Updates lost across a reconnect are counted, not only gaps on one socket.
func TestSeqGapsAcrossSocketsAreCounted(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.ready()
	upd := func(s SocketID, n int64) {
		h.frame(s, protocol.Message{Type: protocol.TypeUpdate, Topic: "feed", Seq: n, Data: []byte(`{}`)})
	}
	upd(s, 1)
	upd(s, 2)
	h.closed(s)
	h.advance(2 * time.Second)
	s = h.ready()
	upd(s, 6)
	upd(s, 7)
	if st := h.c.Stats(); st.SeqGaps != 1 || st.MissedUpdates != 3 {
		t.Fatalf("stats %+v: want 1 gap of 3 updates", st)
	}
}

// A ping with an interval the protocol refuses is a bad frame, never a
// watchdog armed in the past or the far future.
func TestAHugePingIntervalIsRefused(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.ready()
	h.c.Received(s, []byte(`{"type":"ping","intervalMs":9000000000000000}`), h.now)
	h.drain()
	if st := h.c.Stats(); st.BadFrames != 1 || !h.state().Ready {
		t.Fatalf("stats %+v state %+v", st, h.state())
	}
	h.keepAlive(s, 3*time.Second) // the watchdog still runs on the announced 1 s interval
	if !h.state().Ready {
		t.Fatal("left READY")
	}
}

// A request's own timeout: a short one times out first even when sent
// after a longer one.
func TestRequestsHaveTimeoutsOfTheirOwn(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	h.ready()
	long := h.c.RequestWithTimeout("echo", nil, 4*time.Second, h.now)
	short := h.c.RequestWithTimeout("echo", nil, time.Second, h.now)
	def := h.c.Request("echo", nil, h.now)
	bad := h.c.RequestWithTimeout("echo", nil, -time.Second, h.now)
	h.drain()
	if !errors.Is(h.settled[bad].Err, ErrInvalidRequest) {
		t.Fatalf("negative timeout: %+v", h.settled[bad])
	}
	h.keepAlive(h.last(), 1100*time.Millisecond)
	if _, ok := h.settled[short]; !ok || len(h.settled) != 2 {
		t.Fatalf("after 1.1 s: settled %v", h.order)
	}
	h.keepAlive(h.last(), 3*time.Second)
	if _, ok := h.settled[long]; !ok {
		t.Fatalf("after 4.1 s: settled %v", h.order)
	}
	h.keepAlive(h.last(), time.Second)
	if !errors.Is(h.settled[def].Err, ErrRequestTimeout) || !slices.Equal(h.order, []uint64{bad, short, long, def}) {
		t.Fatalf("order %v", h.order)
	}
}
