package client

import (
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// A socket that opened and heard nothing (no ping, no welcome) from a
// client that sent no token is "silent", which points at the token hook:
// a server that requires auth waits for a token in silence. A welcome
// without pings, or a client that sent a token, is the heartbeat's.
func TestASilentServerIsNotAStoppedOne(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	h.open(h.last())
	h.advance(3 * time.Second) // FirstPingTimeout
	if f := h.state().LastError; f.Class != FailSilent || !strings.Contains(f.Message(), "token hook") {
		t.Fatalf("nothing heard after open: %+v %q", f, f.Message())
	}
	h.advanceToDial()
	s := h.last()
	h.open(s)
	h.welcome(s)
	h.advance(3 * time.Second)
	if f := h.state().LastError; f.Class != FailHeartbeat {
		t.Fatalf("a welcome, then no ping: %+v", f)
	}

	h = newHarness(t, 7, func(c *Config) { c.Auth = true })
	h.start()
	h.c.TokenReady("t1", h.now)
	h.drain()
	h.open(h.last())
	h.advance(3 * time.Second)
	if f := h.state().LastError; f.Class != FailHeartbeat {
		t.Fatalf("a token sent, then nothing: %+v", f)
	}
}

// The server's close reason comes with a terminal state (bounded to a
// close frame's 123 bytes); Reconnect clears it.
func TestTheEndCarriesTheServersReason(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.last()
	h.open(s)
	h.closedWith(s, protocol.CloseForbidden, "bad token")
	if st := h.state(); st.Ended != Forbidden || st.EndCode != protocol.CloseForbidden || st.EndReason != "bad token" {
		t.Fatalf("after 4003 bad token: %+v", st)
	}
	h.c.Reconnect(h.now)
	h.drain()
	if st := h.state(); st.EndReason != "" || st.Ended != NotEnded {
		t.Fatalf("after Reconnect: %+v", st)
	}
	h.open(h.last())
	h.closedWith(h.last(), protocol.CloseForbidden, strings.Repeat("x", 200))
	if n := len(h.state().EndReason); n != 123 {
		t.Fatalf("a reason of 200 bytes kept as %d", n)
	}
}

// The trace tells the truth: a failed HTTP probe is not "answered".
func TestTheTraceSaysTheProbeFailed(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	h.failDials(3, neverOpens(h))
	h.c.HTTPProbe(false, h.now)
	h.drain()
	var said []string
	for _, e := range h.events {
		if e.Kind == "transport" && strings.Contains(e.Detail, "HTTP probe") {
			said = append(said, e.Detail)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "failed") || strings.Contains(said[0], "answered") {
		t.Fatalf("the trace of a failed probe: %q", said)
	}
}

// The reconnect trace names the cap the delay was drawn with: after two
// minutes of failure it is 60 s, not the configured 30 s.
func TestTheReconnectTraceNamesTheGrownCap(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	h.closed(h.last())
	var last string
	for range 8 {
		h.rand.vals = []float64{0.5}
		h.advance(time.Minute)
		h.closed(h.last())
		for _, e := range h.events {
			if e.Kind == "reconnect" {
				last = e.Detail
			}
		}
	}
	if !strings.Contains(last, "cap 1m0s") || strings.Contains(last, "cap 30s") {
		t.Fatalf("the reconnect trace after 8 minutes of failure: %q; want cap 1m0s", last)
	}
}
