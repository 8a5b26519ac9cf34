package client

import (
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

func (h *harness) probesSent(s SocketID) []protocol.Message {
	var out []protocol.Message
	for _, m := range h.sockets[s].sent {
		if m.Type == protocol.TypeProbe {
			out = append(out, m)
		}
	}
	return out
}

// A program that knows the network changed says so, and a connection
// that looks fine is probed at once: one that answers is kept; one that
// does not is closed within the probe's timeout (at 1 s pings, 250 ms),
// not 1.25 intervals and a timeout later, and redialled after the small
// delay that follows online (at most 500 ms), not the backoff's draw.
func TestNetworkChangedProbesAtOnce(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	s := h.ready()
	h.advance(300 * time.Millisecond)
	h.c.NetworkChanged(h.now)
	h.drain()
	p := h.probesSent(s)
	if len(p) != 1 {
		t.Fatalf("probes sent at once: %d", len(p))
	}
	h.advance(20 * time.Millisecond)
	h.frame(s, protocol.Message{Type: protocol.TypeProbeAck, ID: p[0].ID})
	h.advance(200 * time.Millisecond)
	if !h.state().Ready || h.sockets[s].closed {
		t.Fatalf("an answered probe: %+v", h.state())
	}

	// Again, and now the old network is gone: no answer.
	h.ping(s, 1000)
	h.advance(100 * time.Millisecond)
	changed := h.now
	h.c.NetworkChanged(h.now)
	h.drain()
	if len(h.probesSent(s)) != 2 {
		t.Fatal("no probe at the second change")
	}
	for i := 0; !h.sockets[s].closed && i < 200; i++ {
		h.advance(10 * time.Millisecond)
	}
	if took := h.now.Sub(changed); !h.sockets[s].closed || took > 250*time.Millisecond {
		t.Fatalf("the dead socket closed %v after the change (closed %v), want within the probe's 250ms", took, h.sockets[s].closed)
	}
	if d := h.lastDelay(); d > 500*time.Millisecond {
		t.Fatalf("redial after %v, want the online delay's at most 500ms", d)
	}
}

// A client down and backing off (a dial 20 s away) dials within the
// online delay once told the network changed: the failures it backed off
// from were the old network's. Nothing happens while offline, or after
// the end.
func TestNetworkChangedPullsTheNextDialIn(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.Policy = Fixed{D: 20 * time.Second} })
	h.start()
	s := h.ready()
	h.closed(s)
	h.advance(time.Second)
	dials := len(h.dials)
	h.c.NetworkChanged(h.now)
	h.drain()
	h.advance(500 * time.Millisecond)
	if len(h.dials) != dials+1 {
		t.Fatalf("dials %d after the change, want %d within 500ms", len(h.dials), dials+1)
	}

	off := newHarness(t, 8)
	off.start()
	off.c.Offline(off.now)
	off.drain()
	off.c.NetworkChanged(off.now)
	off.drain()
	off.advance(time.Minute)
	if len(off.dials) != 1 {
		t.Fatalf("offline: dials %v", off.dials)
	}
	off.c.Stop(off.now)
	off.drain()
	off.c.NetworkChanged(off.now)
	off.drain()
	if !off.timer.IsZero() || len(off.dials) != 1 {
		t.Fatal("a stopped client acted on a network change")
	}
}
