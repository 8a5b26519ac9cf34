package client

import (
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// failDials makes n attempts in a row fail the way fail says, advancing
// to each next dial.
func (h *harness) failDials(n int, fail func(s SocketID)) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		if i > 0 {
			h.advanceToDial()
		}
		fail(h.last())
	}
}

func neverOpens(h *harness) func(SocketID) { return func(s SocketID) { h.closed(s) } }

// opensSilent: the socket opens and never pings; the first-ping timeout
// closes it.
func opensSilent(h *harness) func(SocketID) {
	return func(s SocketID) {
		h.open(s)
		for !h.sockets[s].closed {
			h.advance(h.timer.Sub(h.now))
		}
	}
}

// Stage 8: three WebSocket attempts in a row that never reach a first ping
// (never open, or open and stay silent) make the client probe the server
// over HTTP; a good answer makes the next dial an HTTP one, at once.
func TestThreeFailedWebSocketAttemptsFallBackToHTTP(t *testing.T) {
	for name, how := range map[string]func(*harness) func(SocketID){"never open": neverOpens, "open silent": opensSilent} {
		h := newHarness(t, 8)
		h.start()
		if h.via[1] != TransportWebSocket || h.state().Via != TransportWebSocket {
			t.Fatalf("%s: the first dial is %v", name, h.via[1])
		}
		h.failDials(2, how(h))
		if h.probes != 0 {
			t.Fatalf("%s: probed after two failures", name)
		}
		h.advanceToDial()
		how(h)(h.last())
		if h.probes != 1 {
			t.Fatalf("%s: %d HTTP probes after three failures, want 1", name, h.probes)
		}
		dials := len(h.dials)
		h.c.HTTPProbe(true, h.now)
		h.drain()
		if len(h.dials) != dials+1 || h.via[h.last()] != TransportHTTP {
			t.Fatalf("%s: after a good probe: dials %d -> %d, last via %v", name, dials, len(h.dials), h.via[h.last()])
		}
		s := h.ready()
		if st := h.state(); st.Via != TransportHTTP || !st.Ready {
			t.Fatalf("%s: %+v", name, st)
		}
		// A loss on HTTP reconnects over HTTP.
		h.closed(s)
		h.advanceToDial()
		if h.via[h.last()] != TransportHTTP {
			t.Fatalf("%s: the reconnect after an HTTP loss went over %v", name, h.via[h.last()])
		}
	}
}

// A probe answered false keeps WebSocket; the next probe comes after
// three more failures. Before stage 8, or with Transports [ws], there is
// never a probe.
func TestABadProbeOrNoFallbackKeepsWebSocket(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	h.failDials(3, neverOpens(h))
	h.c.HTTPProbe(false, h.now)
	h.drain()
	h.advanceToDial()
	if h.via[h.last()] != TransportWebSocket {
		t.Fatal("a failed probe switched to HTTP")
	}
	h.failDials(2, neverOpens(h)) // the 4th and 5th: no probe yet
	if h.probes != 1 {
		t.Fatalf("%d probes", h.probes)
	}
	h.advanceToDial()
	h.closed(h.last())
	if h.probes != 2 {
		t.Fatalf("no second probe after three more failures: %d", h.probes)
	}
	h.c.HTTPProbe(true, h.now) // answered late, twice: once counts
	h.c.HTTPProbe(true, h.now)
	h.drain()
	if h.via[h.last()] != TransportHTTP || h.c.Stats().HTTPProbes != 2 {
		t.Fatalf("via %v, stats %+v", h.via[h.last()], h.c.Stats())
	}

	for _, tweak := range []func(*Config){func(c *Config) { c.Transports = []Transport{TransportWebSocket} }, nil} {
		stage := 8
		if tweak == nil {
			stage, tweak = 7, func(*Config) {}
		}
		h := newHarness(t, stage, tweak)
		h.start()
		h.failDials(10, neverOpens(h))
		if h.probes != 0 {
			t.Fatalf("stage %d: probed without an HTTP fallback", stage)
		}
	}
}

// Never fall back on a classified refusal: the server is steering.
func TestARefusalStartsTheCountOver(t *testing.T) {
	for _, refusal := range []struct {
		code   int
		reason string
	}{{1013, "retry-after-ms=1000"}, {1006, "retry-after-ms=1000"}, {4001, "token expired"}} {
		h := newHarness(t, 8)
		h.start()
		h.failDials(2, neverOpens(h))
		h.advanceToDial()
		refused := h.last()
		h.closedWith(refused, refusal.code, refusal.reason)
		if h.last() == refused { // a 4001 dials at once
			h.advanceToDial()
		}
		h.failDials(2, neverOpens(h))
		if h.probes != 0 {
			t.Fatalf("%d %q: probed across a refusal", refusal.code, refusal.reason)
		}
		h.advanceToDial()
		h.closed(h.last())
		if h.probes != 1 {
			t.Fatalf("%d: no probe after three failures following the refusal", refusal.code)
		}
	}
	// A connection that saw its first ping starts the count over too.
	h := newHarness(t, 8)
	h.start()
	h.failDials(2, neverOpens(h))
	h.advanceToDial()
	s := h.ready()
	h.closed(s)
	h.advanceToDial()
	h.failDials(2, neverOpens(h))
	if h.probes != 0 {
		t.Fatal("a proven connection did not start the count over")
	}
}

// Config.Transports orders and restricts: HTTP alone dials HTTP; HTTP
// preferred falls back to WebSocket without a probe; bad lists are refused.
func TestTransportsOrderAndRestrict(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.Transports = []Transport{TransportHTTP} })
	h.start()
	if h.via[1] != TransportHTTP {
		t.Fatalf("HTTP only dialled %v", h.via[1])
	}
	h = newHarness(t, 8, func(c *Config) { c.Transports = []Transport{TransportHTTP, TransportWebSocket} })
	h.start()
	h.failDials(3, neverOpens(h))
	h.advanceToDial()
	if h.probes != 0 || h.via[h.last()] != TransportWebSocket {
		t.Fatalf("HTTP first: probes %d, then %v", h.probes, h.via[h.last()])
	}
	for _, bad := range [][]Transport{{}, {TransportHTTP, TransportHTTP}, {TransportWebSocket, 9}, {1, 2, 1}} {
		cfg := Config{Rand: func() float64 { return 0 }, Transports: bad}
		if _, err := New(cfg); err == nil {
			t.Fatalf("transports %v accepted", bad)
		}
	}
	if _, ok := ParseTransport("sse"); ok {
		t.Fatal("sse parsed")
	}
}

// onHTTP brings a stage 8 harness to READY over HTTP.
func onHTTP(t *testing.T, tweak ...func(*Config)) (*harness, SocketID) {
	t.Helper()
	h := newHarness(t, 8, tweak...)
	h.start()
	h.failDials(3, neverOpens(h))
	h.c.HTTPProbe(true, h.now)
	h.drain()
	s := h.last()
	h.open(s)
	h.ping(s, 1000)
	h.subscribedAt(s, "feed", 1, 0, "A")
	if !h.state().Ready || h.via[s] != TransportHTTP {
		t.Fatalf("not READY over HTTP: %+v", h.state())
	}
	return h, s
}

// While on HTTP the client tries WebSocket again every ReprobeInterval,
// beside the live HTTP socket. When the WebSocket has opened and pinged it
// becomes current: the topics are subscribed on it with since = the
// cursor, READY does not flicker, the old socket's updates still count
// while the new one is not serving (duplicates dropped), its response
// settles the request sent on it, and then it is closed.
func TestTheReprobeMovesBackToWebSocketWithNoGap(t *testing.T) {
	h, old := onHTTP(t, func(c *Config) { c.ReprobeInterval = time.Minute })
	h.update(old, "feed", 1)
	h.update(old, "feed", 2)
	h.keepAlive(old, time.Minute-time.Second)
	if len(h.dials) != 4 {
		t.Fatalf("dialled before the re-probe interval: %v", h.dials)
	}
	h.keepAlive(old, time.Second)
	cand := h.last()
	if len(h.dials) != 5 || h.via[cand] != TransportWebSocket || h.sockets[old].closed {
		t.Fatalf("re-probe: dials %v, via %v, old closed %v", h.dials, h.via[cand], h.sockets[old].closed)
	}
	h.open(cand)
	if n := len(h.sockets[cand].sent); n != 0 {
		t.Fatalf("the candidate was sent %d frames before its first ping", n)
	}
	id := h.request() // on the HTTP socket, still current
	if h.lastSent(old).Type != protocol.TypeRequest {
		t.Fatal("the request did not go on the HTTP socket")
	}
	readyFlips := 0
	for _, st := range h.states {
		if !st.Ready {
			readyFlips++
		}
	}
	h.ping(cand, 1000)
	if st := h.state(); st.Via != TransportWebSocket || !st.Ready {
		t.Fatalf("after the move: %+v", st)
	}
	if m := h.lastSubscribe(cand, "feed"); !m.HasSince || m.Since != 2 || m.Stream != "A" {
		t.Fatalf("the move's subscribe %+v", m)
	}
	h.update(old, "feed", 3) // the old socket is still subscribed: counted
	h.subscribedAt(cand, "feed", 3, 4, "A")
	h.update(cand, "feed", 3) // a duplicate at the seam: dropped
	h.update(cand, "feed", 4)
	h.update(old, "feed", 4) // after the move: ignored
	if got := h.seqs("feed"); len(got) != 4 || got[0] != 1 || got[3] != 4 {
		t.Fatalf("delivered %v, want 1..4 once each", got)
	}
	if h.sockets[old].closed {
		t.Fatal("the old socket closed with a request still waiting on it")
	}
	h.frame(old, protocol.Message{Type: protocol.TypeResponse, ID: id, Result: []byte(`1`)})
	if e, ok := h.settled[id]; !ok || e.Err != nil {
		t.Fatalf("the old socket's response did not settle its request: %+v", e)
	}
	if !h.sockets[old].closed || h.sockets[old].closeCode != protocol.CloseNormal {
		t.Fatal("the old socket was not closed once drained")
	}
	for _, st := range h.states {
		if !st.Ready {
			readyFlips--
		}
	}
	if readyFlips != 0 {
		t.Fatal("READY flickered during the move")
	}
	if st := h.c.Stats(); st.Moves != 1 {
		t.Fatalf("stats %+v", st)
	}
	// WebSocket from now on.
	h.closed(cand)
	h.advanceToDial()
	if h.via[h.last()] != TransportWebSocket {
		t.Fatal("the reconnect after the move is not WebSocket")
	}
}

// A candidate that does not open and ping in time, or closes, is dropped
// and tried again an interval later; the HTTP socket is untouched. Losing
// the HTTP socket drops the candidate. A request in flight on the draining
// socket when it closes rejects with ConnectionClosed.
func TestAFailedReprobeKeepsHTTP(t *testing.T) {
	h, s := onHTTP(t, func(c *Config) { c.ReprobeInterval = time.Minute })
	h.keepAlive(s, time.Minute)
	cand := h.last()
	closes := h.c.Stats().Closes
	h.closed(cand) // refused
	if h.sockets[s].closed || !h.state().Ready || h.c.Stats().Closes != closes+1 {
		t.Fatalf("a failed candidate touched the live socket: %+v", h.state())
	}
	h.keepAlive(s, time.Minute)
	cand2 := h.last()
	if cand2 == cand {
		t.Fatal("no second re-probe an interval later")
	}
	h.open(cand2) // open, but no ping within connect + first-ping timeouts
	h.keepAlive(s, 13*time.Second)
	if !h.sockets[cand2].closed || h.sockets[s].closed {
		t.Fatal("the silent candidate was not dropped, or the live socket was")
	}
	h.keepAlive(s, time.Minute)
	cand3 := h.last()
	h.closed(s) // the live HTTP socket goes: the candidate with it
	if !h.sockets[cand3].closed {
		t.Fatal("the candidate outlived the socket it was to replace")
	}
	h.advanceToDial()
	if h.via[h.last()] != TransportHTTP {
		t.Fatal("the reconnect left HTTP")
	}

	// A request on the draining socket, which then closes.
	h, s = onHTTP(t, func(c *Config) { c.ReprobeInterval = time.Minute })
	h.keepAlive(s, time.Minute)
	id := h.request()
	cand = h.last()
	h.open(cand)
	h.ping(cand, 1000)
	h.subscribedAt(cand, "feed", 1, 0, "A")
	h.closed(s)
	var re *RequestError
	if e := h.settled[id]; !errors.As(e.Err, &re) || !errors.Is(e.Err, ErrConnectionClosed) || re.Epoch != uint64(s) {
		t.Fatalf("the draining socket's request settled with %+v", e)
	}
	if !h.state().Ready {
		t.Fatal("the draining socket's close touched the current one")
	}
}

// With a token hook the re-probe's socket gets a ticket of its own, sent
// as its first frame; a failed hook drops the re-probe, not the session.
func TestTheReprobeAsksForItsOwnTicket(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.Auth, c.ReprobeInterval = true, time.Minute })
	h.start()
	h.c.TokenReady("t", h.now) // never opened, so kept for the next dials
	h.drain()
	h.failDials(3, neverOpens(h))
	h.c.HTTPProbe(true, h.now)
	h.drain()
	s := h.last()
	if h.via[s] != TransportHTTP {
		t.Fatalf("via %v", h.via[s])
	}
	h.ready()
	asks := len(h.tokens)
	h.keepAlive(s, time.Minute)
	if len(h.tokens) != asks+1 || len(h.dials) != 4 {
		t.Fatalf("the re-probe did not ask for a ticket first: tokens %d -> %d, dials %v", asks, len(h.tokens), h.dials)
	}
	h.c.TokenFailed(h.now)
	h.drain()
	if !h.state().Ready || len(h.dials) != 4 {
		t.Fatal("a failed ticket for the re-probe touched the session")
	}
	h.keepAlive(s, time.Minute)
	h.c.TokenReady("ticket-2", h.now)
	h.drain()
	cand := h.last()
	h.open(cand)
	if m := h.lastSent(cand); m.Type != protocol.TypeAuth || m.Token != "ticket-2" {
		t.Fatalf("the candidate's first frame %+v", m)
	}
	h.ping(cand, 1000)
	if h.state().Via != TransportWebSocket {
		t.Fatal("no move")
	}
}

// A re-probe's socket refused with 4001 had an expired ticket: the next
// re-probe asks the hook for a fresh one (Force), as a dial after a 4001
// does, rather than a hook's cached ticket the server just refused; one
// refused with 4003 is dropped like any failed candidate. Neither touches
// the live HTTP socket or counts as a refresh of it.
func TestARefusedReprobeAsksForAFreshTicket(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.Auth, c.ReprobeInterval = true, time.Minute })
	h.start()
	h.c.TokenReady("t", h.now)
	h.drain()
	h.failDials(3, neverOpens(h))
	h.c.HTTPProbe(true, h.now)
	h.drain()
	s := h.ready()
	if h.via[s] != TransportHTTP {
		t.Fatalf("via %v", h.via[s])
	}
	for i, code := range []int{protocol.CloseTokenExpired, protocol.CloseForbidden} {
		asks := len(h.tokens)
		h.keepAlive(s, time.Minute)
		if len(h.tokens) != asks+1 {
			t.Fatalf("re-probe %d: no ticket asked", i+1)
		}
		h.c.TokenReady("cached", h.now)
		h.drain()
		cand := h.last()
		h.open(cand)
		h.closedWith(cand, code, "")
		if h.sockets[s].closed || !h.state().Ready || h.state().Via != TransportHTTP || len(h.dials) != 5+i {
			t.Fatalf("a candidate's %d touched the live socket: state %+v, stats %+v", code, h.state(), h.c.Stats())
		}
	}
	// The first re-probe asked as usual; the second followed a 4001; the
	// third a 4003 (a forbidden ticket is not an expired one).
	asks := len(h.tokens)
	h.keepAlive(s, time.Minute)
	if got := h.tokens[asks-2:]; len(h.tokens) != asks+1 || got[0] || !got[1] || h.tokens[asks] {
		t.Fatalf("the re-probes' asks by Force %v, want [false true false] at the end", h.tokens)
	}
	if n := h.c.Stats().TokenRefreshes; n != 1 {
		t.Fatalf("%d forced token asks counted, want the re-probe's one", n)
	}
}
