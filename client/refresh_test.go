package client

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// typeRefresh is the refresh frame's type, spelled out so that the first
// test reads the same against a core that predates it.
const typeRefresh = protocol.Type("refresh")

// authedReady brings a client with a token hook to READY and has the
// server say its token expires in life, the refresh's draw being r.
func authedReady(t *testing.T, h *harness, life time.Duration, r float64) SocketID {
	t.Helper()
	h.start()
	h.c.TokenReady("ticket-1", h.now)
	h.drain()
	s := h.ready()
	h.rand.vals = []float64{r}
	h.frame(s, protocol.Message{Type: protocol.TypeAuthenticated, ExpiresAt: h.now.Add(life).UnixMilli()})
	return s
}

// refreshesOn returns the refresh frames sent on socket s.
func refreshesOn(h *harness, s SocketID) []protocol.Message {
	var out []protocol.Message
	for _, m := range h.sockets[s].sent {
		if m.Type == typeRefresh {
			out = append(out, m)
		}
	}
	return out
}

// The client asks its hook for a fresh token at the drawn point late in
// the token's life (75% + r x 15% of it: 49.5 s of 60 s for r = 0.5),
// sends it on the live socket, keeps one refresh in flight, and the
// server's answer arms the next: the socket stays, nothing dials.
func TestInBandRefreshAtTheJitteredPoint(t *testing.T) {
	h := newHarness(t, 8, withAuth)
	s := authedReady(t, h, 60*time.Second, 0.5)
	asked := len(h.tokens)
	h.keepAlive(s, 49*time.Second)
	if len(h.tokens) != asked {
		t.Fatalf("the hook was asked %d times before 75%% + 0.5 x 15%% of the token's life", len(h.tokens)-asked)
	}
	h.keepAlive(s, time.Second)
	if len(h.tokens) != asked+1 || !h.tokens[asked] {
		t.Fatalf("at 50 s of a 60 s token: token asks %v after the first %d, want one forced ask", h.tokens[asked:], asked)
	}
	h.c.TokenReady("ticket-2", h.now)
	h.drain()
	if rs := refreshesOn(h, s); len(rs) != 1 || rs[0].Token != "ticket-2" {
		t.Fatalf("refresh frames on the live socket: %+v", rs)
	}
	// One in flight: while its answer is awaited nothing more is asked or sent.
	h.keepAlive(s, 2*time.Second)
	if len(h.tokens) != asked+1 || len(refreshesOn(h, s)) != 1 {
		t.Fatalf("asks %d, refresh frames %d while one was in flight", len(h.tokens)-asked, len(refreshesOn(h, s)))
	}
	h.rand.vals = []float64{0}
	h.frame(s, protocol.Message{Type: protocol.TypeAuthenticated, ExpiresAt: h.now.Add(60 * time.Second).UnixMilli()})
	// The old expiry (60 s) passes on the same socket; the next refresh
	// comes at 75% of the new token's life.
	h.keepAlive(s, 44*time.Second)
	if len(h.tokens) != asked+1 {
		t.Fatalf("asked again %v before 75%% of the new token's life", h.tokens[asked:])
	}
	h.keepAlive(s, 2*time.Second)
	if len(h.tokens) != asked+2 {
		t.Fatalf("no second refresh at 75%% of the new token's life: asks %v", h.tokens[asked:])
	}
	if len(h.dials) != 1 || !h.state().Ready || h.sockets[s].closed {
		t.Fatalf("dials %v, state %+v: the refresh must keep the one socket", h.dials, h.state())
	}
	if st := h.c.Stats(); st.Refreshes != 1 || st.RefreshFailures != 0 {
		t.Fatalf("stats: refreshes %d, failures %d", st.Refreshes, st.RefreshFailures)
	}
}

// A fleet whose tokens were issued together does not refresh together:
// 1,000 clients' refresh points spread uniformly over [75%, 90%] of the
// life, no second of the 9 s holding more than twice its share.
func TestInBandRefreshSpreadsAFleet(t *testing.T) {
	const n, life = 1000, 60 * time.Second
	rng := rand.New(rand.NewPCG(1, 2))
	buckets := map[int]int{}
	for range n {
		h := newHarness(t, 8, withAuth, func(c *Config) { c.Rand = rng.Float64 })
		h.start()
		h.c.TokenReady("t", h.now)
		h.drain()
		s := h.ready()
		h.frame(s, protocol.Message{Type: protocol.TypeAuthenticated, ExpiresAt: h.now.Add(life).UnixMilli()})
		at := h.c.dl[dlRefresh].Sub(h.now)
		if at < life*75/100 || at > life*90/100 {
			t.Fatalf("refresh at %v of a %v token: outside [75%%, 90%%]", at, life)
		}
		buckets[int(at/time.Second)]++
	}
	for sec, k := range buckets {
		if k > 2*n/9 {
			t.Fatalf("%d of %d clients refresh in second %d: %v", k, n, sec, buckets)
		}
	}
	if len(buckets) < 9 {
		t.Fatalf("refreshes fall in %d distinct seconds, want the 9 of [45 s, 54 s]: %v", len(buckets), buckets)
	}
}

// A hook that fails is asked once more, later in the time left; when that
// fails too the client waits for the server's 4001 at expiry and takes
// today's path: a forced token and a dial at once.
func TestInBandRefreshFallsBackTo4001(t *testing.T) {
	h := newHarness(t, 8, withAuth)
	s := authedReady(t, h, 60*time.Second, 0)
	asked := len(h.tokens)
	h.keepAlive(s, 45*time.Second) // 75%: the first try
	if len(h.tokens) != asked+1 {
		t.Fatalf("no refresh at 75%%: asks %v", h.tokens[asked:])
	}
	h.rand.vals = []float64{0}
	h.c.TokenFailed(h.now) // the retry at 75% of the 15 s left: 56.25 s
	h.drain()
	h.keepAlive(s, 11*time.Second)
	if len(h.tokens) != asked+1 {
		t.Fatalf("retried early: asks %v", h.tokens[asked:])
	}
	h.keepAlive(s, 500*time.Millisecond)
	if len(h.tokens) != asked+2 {
		t.Fatalf("no retry at 56.25 s: asks %v", h.tokens[asked:])
	}
	// The second failure: this time the hook does not answer at all.
	h.keepAlive(s, 3*time.Second) // 60 s: the expiry; TokenTimeout (10 s) not yet over
	if len(refreshesOn(h, s)) != 0 {
		t.Fatal("a refresh was sent without a token")
	}
	h.closedWith(s, protocol.CloseTokenExpired, "token expired")
	if len(h.tokens) != asked+3 || !h.tokens[asked+2] {
		t.Fatalf("after 4001: asks %v, want a forced one", h.tokens[asked:])
	}
	h.c.TokenReady("ticket-3", h.now) // taken by the dial, not the dead refresh
	h.drain()
	if len(h.dials) != 2 {
		t.Fatalf("dials %v: want a dial at once after the 4001", h.dials)
	}
	if r := lastRecord(t, h); r.Class != ClassTokenExpired || r.Outcome != OutcomeRefresh || r.Delay != 0 {
		t.Fatalf("record %+v", r)
	}
	if st := h.c.Stats(); st.Refreshes != 0 || st.RefreshFailures != 1 {
		t.Fatalf("stats: refreshes %d, failures %d (the unanswered ask was overtaken by the 4001)", st.Refreshes, st.RefreshFailures)
	}
}

// A server that refuses the refresh (refresh_refused, or an older
// server's unknown_type: an error frame about no request and no topic)
// fails it at once; the retry comes later, and no answer from the server
// within RequestTimeout fails it too. After two tries nothing more is
// asked for that token.
func TestInBandRefreshRefusedOrUnanswered(t *testing.T) {
	h := newHarness(t, 8, withAuth)
	s := authedReady(t, h, 100*time.Second, 0)
	asked := len(h.tokens)
	h.keepAlive(s, 75*time.Second)
	h.c.TokenReady("t2", h.now)
	h.drain()
	h.rand.vals = []float64{0}
	h.frame(s, protocol.Message{Type: protocol.TypeError, Error: &protocol.ErrorBody{Code: "unknown_type", Message: "unknown type \"refresh\""}})
	if st := h.c.Stats(); st.RefreshFailures != 1 {
		t.Fatalf("failures %d after a refusal", st.RefreshFailures)
	}
	h.keepAlive(s, 19*time.Second) // the retry: 75 s + 75% of 25 s = 93.75 s
	if len(h.tokens) != asked+2 {
		t.Fatalf("asks %v: want the retry", h.tokens[asked:])
	}
	h.c.TokenReady("t3", h.now)
	h.drain()
	h.keepAlive(s, 5*time.Second) // RequestTimeout (5 s): no answer
	if st := h.c.Stats(); st.RefreshFailures != 2 || len(refreshesOn(h, s)) != 2 {
		t.Fatalf("failures %d, refresh frames %d", st.RefreshFailures, len(refreshesOn(h, s)))
	}
	h.keepAlive(s, time.Second) // past the expiry
	if len(h.tokens) != asked+2 || len(h.dials) != 1 {
		t.Fatalf("asks %v dials %v: nothing more after the second try", h.tokens[asked:], h.dials)
	}
}

// A socket lost while the hook works drops its refresh: the answer goes
// to the next dial, never on a dead socket; and with NoInBandRefresh the
// hook is asked only before dials.
func TestInBandRefreshLostSocketAndOff(t *testing.T) {
	h := newHarness(t, 8, withAuth)
	s := authedReady(t, h, 60*time.Second, 0)
	h.keepAlive(s, 45*time.Second)
	h.closedWith(s, 1006, "")
	h.advanceToDial()
	h.c.TokenReady("fresh", h.now)
	h.drain()
	if len(refreshesOn(h, s)) != 0 || len(h.dials) != 2 {
		t.Fatalf("refreshes on the dead socket %d, dials %v", len(refreshesOn(h, s)), h.dials)
	}
	h.open(h.last())
	if sent := h.sockets[h.last()].sent; len(sent) == 0 || sent[0].Type != protocol.TypeAuth || sent[0].Token != "fresh" {
		t.Fatalf("the next socket's first frames: %+v", sent)
	}

	off := newHarness(t, 8, withAuth, func(c *Config) { c.NoInBandRefresh = true })
	s = authedReady(t, off, 60*time.Second, 0.5)
	asked := len(off.tokens)
	off.keepAlive(s, 59*time.Second)
	if len(off.tokens) != asked || len(refreshesOn(off, s)) != 0 {
		t.Fatalf("NoInBandRefresh: asks %v", off.tokens[asked:])
	}
}

// An in-band refresh's ask outlives its socket: the socket is lost while
// the hook runs, the next dial's own ask is answered and its HTTP session
// is on its way, then the refresh's ask fails late. That failure is not
// the dial's (nothing waits for a ticket) and not a refresh failure of the
// socket being made: the dial goes on, nothing is counted or re-armed.
func TestALateRefreshFailureAfterItsSocketIsGone(t *testing.T) {
	h := newHarness(t, 8, withAuth, func(c *Config) { c.Transports = []Transport{TransportHTTP} })
	s := authedReady(t, h, 60*time.Second, 0)
	asks := len(h.tokens)
	h.keepAlive(s, 46*time.Second)
	if len(h.tokens) != asks+1 {
		t.Fatalf("no refresh asked: %v", h.tokens[asks:])
	}
	h.closed(s)
	for len(h.tokens) == asks+1 {
		h.advanceToDial()
	}
	h.c.TokenReady("ticket-d", h.now) // the dial's ask answered first
	h.drain()
	s2 := h.last()
	if s2 == s || h.ticket[s2] != "ticket-d" {
		t.Fatalf("no dial with the dial's ticket: %v", h.dials)
	}
	before := h.c.Stats()
	h.c.TokenFailed(h.now) // the refresh's ask, late
	h.drain()
	st := h.c.Stats()
	if st.RefreshFailures != before.RefreshFailures || st.TokenFailures != before.TokenFailures || h.sockets[s2].closed || h.last() != s2 {
		t.Fatalf("a gone socket's refresh failure: refresh failures %d -> %d, token failures %d -> %d, dials %v",
			before.RefreshFailures, st.RefreshFailures, before.TokenFailures, st.TokenFailures, h.dials)
	}
	h.open(s2)
	h.ping(s2, 1000)
	if h.sockets[s2].closed || h.state().Transport != Up {
		t.Fatalf("the new session did not survive: %+v", h.state())
	}
}
