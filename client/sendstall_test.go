package client

import (
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

func (h *harness) buffered(s SocketID, n int) { h.c.Buffered(s, n, h.now); h.drain() }

// Stage 8: queued bytes that do not drain for SendStallTimeout (5 s),
// while pings still arrive, make the client probe; no answer within the
// probe timeout closes the socket with 4409 and reconnects, the request
// caught in it rejecting with ConnectionClosed. Stage 7 never notices.
func TestAStalledSendPathIsProbedThenClosed(t *testing.T) {
	for _, stage := range []int{7, 8} {
		h := newHarness(t, stage)
		h.start()
		s := h.ready()
		id := h.c.RequestWithTimeout("echo", nil, 30*time.Second, h.now)
		h.drain()
		h.buffered(s, 120)
		h.ping(s, 1000) // the server is heard: the request's wait ends (heartbeat.go)
		for range 9 {   // pings keep coming; the bytes stay
			h.advance(500 * time.Millisecond)
			h.ping(s, 1000)
			h.buffered(s, 120)
		}
		if h.count(protocol.TypeProbe, s) != 0 {
			t.Fatalf("stage %d probed before 5 s", stage)
		}
		h.advance(500 * time.Millisecond)
		h.ping(s, 1000)
		if stage == 7 {
			if h.count(protocol.TypeProbe, s) != 0 || h.sockets[s].closed {
				t.Fatal("stage 7 noticed a send stall")
			}
			continue
		}
		if h.count(protocol.TypeProbe, s) != 1 {
			t.Fatal("stage 8: no probe after 5 s of bytes that did not drain")
		}
		h.advance(249 * time.Millisecond) // the probe timeout at 1 s pings: 250 ms
		h.ping(s, 1000)                   // pings prove nothing about sending
		if h.sockets[s].closed {
			t.Fatal("closed before the probe timeout")
		}
		h.advance(time.Millisecond)
		if !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseSendStalled {
			t.Fatalf("not closed with 4409: %+v", h.sockets[s])
		}
		if e := h.settled[id]; !errors.Is(e.Err, ErrConnectionClosed) {
			t.Fatalf("the request settled with %v", e.Err)
		}
		st := h.state()
		if st.LastError.Class != FailSendStalled || h.c.Stats().SendStalls != 1 || len(h.records) != 1 || h.records[0].Outcome != OutcomeReconnect {
			t.Fatalf("state %+v, stats %+v, records %+v", st, h.c.Stats(), h.records)
		}
	}
}

// Bytes that drain, however slowly, are no stall; zero clears the wait;
// the probe's answer proves the send path and the wait starts over.
func TestDrainingBytesAndAnAnsweredProbeKeepTheSocket(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	n := 10000
	for range 40 { // 20 s of a slow drain
		h.buffered(s, n)
		n -= 100
		h.advance(500 * time.Millisecond)
		h.ping(s, 1000)
	}
	h.buffered(s, 0)
	h.keepAlive(s, 10*time.Second)
	if h.count(protocol.TypeProbe, s) != 0 || h.sockets[s].closed {
		t.Fatal("a draining buffer was taken for a stall")
	}
	h.buffered(s, 50)
	h.keepAlive(s, 5*time.Second)
	if h.count(protocol.TypeProbe, s) != 1 {
		t.Fatal("no probe")
	}
	h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: h.lastSent(s).ID})
	h.keepAlive(s, 4900*time.Millisecond)
	if h.sockets[s].closed || h.count(protocol.TypeProbe, s) != 1 {
		t.Fatal("an answered probe did not start the wait over")
	}
	h.keepAlive(s, 100*time.Millisecond)
	if h.count(protocol.TypeProbe, s) != 2 {
		t.Fatal("bytes still queued 5 s after the answer: no second probe")
	}
	// Reports about another socket change nothing.
	h.buffered(s+1, 1)
	h.buffered(0, 1)
}
