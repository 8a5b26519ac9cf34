package client

import (
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

func lastRecord(t *testing.T, h *harness) Record {
	t.Helper()
	if len(h.records) == 0 {
		t.Fatal("no record")
	}
	return h.records[len(h.records)-1]
}

// A server's 1000 ends the session: no dial ever again, the state says so.
func TestServer1000EndsTheSession(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	s := h.ready()
	id := h.request()
	h.closedWith(s, 1000, "bye")
	h.advance(10 * time.Minute)
	st := h.state()
	if len(h.dials) != 1 || st.Ended != Ended || st.EndCode != 1000 || !h.timer.IsZero() {
		t.Fatalf("dials %v state %+v timer %v", h.dials, st, h.timer)
	}
	if e := h.settled[id]; e.Err == nil || ErrorName(e.Err) != "ConnectionClosed" {
		t.Fatalf("pending request: %+v", e)
	}
	if r := lastRecord(t, h); r.Class != ClassEnded || r.Outcome != Outcome(Ended) || r.By != ByServer || r.Code != 1000 {
		t.Fatalf("record %+v", r)
	}
	// Requests after the end are NotReady, never sent.
	if e := h.settled[h.request()]; ErrorName(e.Err) != "NotReady" {
		t.Fatalf("request after end: %+v", e)
	}
}

// Stage 5 keeps reconnecting after the same close.
func TestStage5ReconnectsAfter1000And4003(t *testing.T) {
	for _, code := range []int{1000, 4003, 1008, 4001} {
		h := newHarness(t, 5)
		h.start()
		h.closedWith(h.ready(), code, "")
		h.advance(2 * time.Second)
		if len(h.dials) != 2 || h.state().Ended != NotEnded {
			t.Fatalf("stage 5, close %d: dials %v state %+v", code, h.dials, h.state())
		}
	}
}

func TestForbiddenIsTerminal(t *testing.T) {
	for _, code := range []int{4003, 1008} {
		h := newHarness(t, 6)
		h.start()
		h.closedWith(h.ready(), code, "revoked")
		h.advance(10 * time.Minute)
		if st := h.state(); len(h.dials) != 1 || st.Ended != Forbidden || st.EndCode != code {
			t.Fatalf("close %d: dials %v state %+v", code, h.dials, st)
		}
	}
}

func withAuth(c *Config) { c.Auth = true }

// A token is asked for before every dial; 4001 forces a fresh one and dials
// at once, without backoff; the ticket is the socket's first frame.
func TestTokenExpiredRefreshesAndDialsAtOnce(t *testing.T) {
	h := newHarness(t, 6, withAuth)
	h.start()
	if len(h.tokens) != 1 || h.tokens[0] || len(h.dials) != 0 {
		t.Fatalf("start: tokens %v dials %v", h.tokens, h.dials)
	}
	h.c.TokenReady("ticket-1", h.now)
	h.drain()
	s := h.ready()
	if sent := h.sockets[s].sent; len(sent) < 2 || sent[0].Type != protocol.TypeAuth || sent[0].Token != "ticket-1" || sent[1].Type != protocol.TypeSubscribe {
		t.Fatalf("first frames: %+v", sent)
	}
	h.closedWith(s, 4001, "")
	if len(h.tokens) != 2 || !h.tokens[1] {
		t.Fatalf("after 4001: tokens %v", h.tokens)
	}
	h.c.TokenReady("ticket-2", h.now)
	h.drain()
	if len(h.dials) != 2 {
		t.Fatalf("no immediate dial after the refresh: %v", h.dials)
	}
	if r := lastRecord(t, h); r.Class != ClassTokenExpired || r.Outcome != OutcomeRefresh || r.Delay != 0 {
		t.Fatalf("record %+v", r)
	}
	for _, r := range h.records {
		for _, e := range h.events {
			if strings.Contains(e.Detail, "ticket-") {
				t.Fatalf("a trace event carries the token: %+v", e)
			}
		}
		_ = r
	}
}

// A 4001 before the socket opened (an HTTP session refused in its POST,
// its ticket expired while the WebSocket attempts failed) drops the
// refused ticket: the next dial waits for a forced fresh one, and never
// dials with the refused ticket again.
func TestTokenExpiredBeforeOpenAsksForAFreshOne(t *testing.T) {
	h := newHarness(t, 6, withAuth)
	h.start()
	h.c.TokenReady("ticket-1", h.now)
	h.drain()
	s := h.last()
	h.closedWith(s, 4001, "") // refused before it opened: the core still held ticket-1
	if len(h.tokens) != 2 || !h.tokens[1] || len(h.dials) != 1 {
		t.Fatalf("after a 4001 before open: tokens %v (want a second, forced), dials %v (want none until it comes)", h.tokens, h.dials)
	}
	h.c.TokenReady("ticket-2", h.now)
	h.drain()
	s = h.last()
	h.open(s)
	if sent := h.sockets[s].sent; len(sent) == 0 || sent[0].Type != protocol.TypeAuth || sent[0].Token != "ticket-2" {
		t.Fatalf("the new socket's first frames: %+v, want the fresh ticket", sent)
	}
}

// Two refreshes that never reach READY are allowed; the third 4001 is
// terminal. Reaching READY starts the count over.
func TestRefreshesAreBounded(t *testing.T) {
	h := newHarness(t, 6, withAuth)
	h.start()
	h.c.TokenReady("t", h.now)
	h.drain()
	s := h.ready()
	h.closedWith(s, 4001, "") // READY was reached before: refresh 1
	for i := range 2 {
		h.c.TokenReady("t", h.now)
		h.drain()
		s = h.last()
		h.open(s)
		if i == 1 {
			break
		}
		h.closedWith(s, 4001, "") // refresh 2, no READY in between
	}
	h.closedWith(s, 4001, "") // the third without READY
	if st := h.state(); st.Ended != RefreshExhausted {
		t.Fatalf("state %+v tokens %v", st, h.tokens)
	}
	if h.c.Stats().TokenRefreshes != 2 {
		t.Fatalf("refreshes %d", h.c.Stats().TokenRefreshes)
	}
}

// 1013 with a retry-after of 20 s: the next dial is at or after +20 s,
// whatever the backoff draws; a longer draw wins.
func TestRetryAfterIsAFloor(t *testing.T) {
	h := newHarness(t, 6)
	h.rand.vals = []float64{0.99}
	h.start()
	s := h.ready()
	h.rand.vals = []float64{0.99}
	lostAt := h.now
	h.closedWith(s, 1013, "overloaded retry-after-ms=20000")
	h.advance(19999 * time.Millisecond)
	if len(h.dials) != 1 {
		t.Fatalf("dialled before the retry-after: %v", h.dials)
	}
	h.advance(250 * time.Millisecond) // plus a jitter of at most 5% and 250 ms
	if len(h.dials) != 2 || h.now.Sub(lostAt) > 20250*time.Millisecond {
		t.Fatalf("dials %v at %v", h.dials, h.now.Sub(lostAt))
	}
	if r := lastRecord(t, h); r.Class != ClassRetryAfter || r.RetryAfter != 20*time.Second || r.Delay < 20*time.Second || r.Delay > 20250*time.Millisecond {
		t.Fatalf("record %+v", r)
	}
	// A retry-after on another code counts too, and a draw above it wins.
	h2 := newHarness(t, 6)
	h2.start()
	for range 5 { // grow the backoff: attempt 5 draws from [0, 30 s)
		h2.closed(h2.last())
		h2.advanceToDial()
	}
	h2.rand.vals = []float64{0.9} // 0.9 * 30 s = 27 s > 1 s
	h2.closedWith(h2.last(), 1012, "retry-after-ms=1000")
	if r := lastRecord(t, h2); r.Class != ClassRetryAfter || r.Delay < 27*time.Second {
		t.Fatalf("record %+v", r)
	}
}

// A malformed or missing retry-after is ignored: a 1013 without one waits
// from the larger base (5 s, jittered to 10 s), longer than a plain drop's
// backoff (TestOverloadWithoutARetryAfterStartsFromALargerBase).
func TestMalformedRetryAfterFallsBackToBackoff(t *testing.T) {
	for _, reason := range []string{"retry-after-ms=soon", "retry-after-ms=-4", ""} {
		h := newHarness(t, 6)
		h.start()
		s := h.ready()
		h.rand.vals = []float64{0.5}
		h.closedWith(s, 1013, reason)
		r := lastRecord(t, h)
		if r.Class != ClassRetryAfter || r.RetryAfter != 0 || r.Delay != overloadDefault+overloadDefault/2 {
			t.Fatalf("%q: record %+v", reason, r)
		}
	}
}

// Budget 3: exactly 3 reconnect dials, then gave_up, whatever opens in
// between (an open does not renew the budget).
func TestBudgetGivesUp(t *testing.T) {
	h := newHarness(t, 6, func(c *Config) { c.Budget = 3 })
	h.start()
	s := h.ready()
	h.closed(s)
	for range 10 {
		h.advance(time.Minute)
		if h.state().Ended != NotEnded {
			break
		}
		s = h.last()
		h.open(s) // opens, but never READY for the cooldown
		h.closed(s)
	}
	if st := h.state(); st.Ended != GaveUp || len(h.dials) != 1+3 {
		t.Fatalf("state %+v dials %v", st, h.dials)
	}
	if r := lastRecord(t, h); r.Outcome != Outcome(GaveUp) || r.BudgetLeft != -1 && r.BudgetLeft != 0 {
		t.Fatalf("record %+v", r)
	}
	// A Reconnect starts a fresh session with a fresh budget.
	h.c.Reconnect(h.now)
	h.drain()
	if st := h.state(); st.Ended != NotEnded || len(h.dials) != 5 {
		t.Fatalf("after Reconnect: %+v dials %v", st, h.dials)
	}
	h.closed(h.last())
	for range 3 {
		h.advance(time.Minute)
		h.closed(h.last())
	}
	if len(h.dials) != 5+3 || h.state().Ended != GaveUp {
		t.Fatalf("second session: dials %v state %+v", h.dials, h.state())
	}
}

// A window of 5 s under a Freeze: terminal by 5 s after the first failure,
// although the watchdog and the connect timeout would run past it.
func TestWindowEndsARunOfFailuresOnTime(t *testing.T) {
	h := newHarness(t, 6, func(c *Config) { c.Window = 5 * time.Second })
	h.start()
	s := h.ready()
	h.advance(1500 * time.Millisecond) // the frozen server sends no ping: the watchdog fires at 2 s
	h.advance(time.Second)
	failedAt := h.now.Add(-500 * time.Millisecond)
	for h.state().Ended == NotEnded && h.now.Sub(failedAt) < time.Minute {
		h.advance(100 * time.Millisecond)
		if st := h.state(); st.Transport == Pending && h.last() != s {
			s = h.last()
			h.open(s) // the frozen server completes handshakes, then says nothing
		}
	}
	if st := h.state(); st.Ended != GaveUp {
		t.Fatalf("state %+v", st)
	}
	if took := h.now.Sub(failedAt); took > 5*time.Second+100*time.Millisecond {
		t.Fatalf("gave up %v after the first failure, window 5 s", took)
	}
	if !h.timer.IsZero() {
		t.Fatal("a timer is armed after the end")
	}
}

// The cooldown (5 s of READY) ends a run of failures: the budget and the
// window start over.
func TestStableReadyRenewsTheBudget(t *testing.T) {
	h := newHarness(t, 6, func(c *Config) { c.Budget = 2 })
	h.start()
	s := h.ready()
	for range 5 {
		h.closed(s)
		h.advanceToDial()
		s = h.ready()
		h.keepAlive(s, 6*time.Second)
	}
	if h.state().Ended != NotEnded || len(h.dials) != 6 {
		t.Fatalf("state %+v dials %v", h.state(), h.dials)
	}
}

// A failing token hook is a failed attempt, counted against the budget.
func TestAFailingTokenHookIsAFailedAttempt(t *testing.T) {
	h := newHarness(t, 6, withAuth, func(c *Config) { c.Budget = 2 })
	h.start()
	for range 5 {
		h.c.TokenFailed(h.now)
		h.drain()
		h.advance(time.Minute)
	}
	if st := h.state(); st.Ended != GaveUp || len(h.tokens) != 3 || len(h.dials) != 0 {
		t.Fatalf("state %+v tokens %v dials %v", st, h.tokens, h.dials)
	}
	// A hook that never answers times out the same way.
	h2 := newHarness(t, 6, withAuth)
	h2.start()
	h2.advance(10 * time.Second)
	if h2.c.Stats().TokenFailures != 1 || len(h2.tokens) != 1 {
		t.Fatalf("stats %+v tokens %v", h2.c.Stats(), h2.tokens)
	}
	h2.advance(2 * time.Second)
	if len(h2.tokens) != 2 {
		t.Fatalf("no new token ask after the timeout's backoff: %v", h2.tokens)
	}
}

// While the page is hidden no reconnect is scheduled; visible again, the
// backoff is back at attempt 0 and the client reconnects soon.
func TestHiddenPageWaitsVisibleReconnects(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	s := h.ready()
	h.c.Hidden(h.now)
	h.drain()
	h.closed(s)
	h.advance(10 * time.Minute)
	if len(h.dials) != 1 {
		t.Fatalf("dialled while hidden: %v", h.dials)
	}
	if r := lastRecord(t, h); r.Outcome != OutcomeWaitVisible {
		t.Fatalf("record %+v", r)
	}
	h.c.Visible(h.now)
	h.drain()
	h.advance(500 * time.Millisecond)
	if len(h.dials) != 2 || h.state().Attempt != 0 {
		t.Fatalf("after visible: dials %v state %+v", h.dials, h.state())
	}
}

// After two minutes of failure the cap grows past 30 s.
func TestCapGrowsUnderSustainedFailure(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	h.closed(h.last())
	var most time.Duration
	for i := range 200 {
		h.rand.vals = []float64{0.999}
		h.advance(5 * time.Minute)
		h.closed(h.last())
		r := lastRecord(t, h)
		if i < 2 && r.Delay > 30*time.Second {
			t.Fatalf("delay %v within the first two minutes", r.Delay)
		}
		most = max(most, r.Delay)
	}
	if most < 4*time.Minute || most > 5*time.Minute {
		t.Fatalf("longest delay %v, want just under 5 min after 30 min of failure", most)
	}
}

// Records carry no peer text: a canary in the close reason appears in no
// record and no trace event.
func TestRecordsCarryNoPeerText(t *testing.T) {
	const canary = "CANARY-7f3a"
	h := newHarness(t, 6)
	h.start()
	s := h.ready()
	h.c.Received(s, []byte(`{"type":"error","code":"`+canary+`","message":"`+canary+`"}`), h.now)
	h.c.Received(s, []byte(`{"type":"unsubscribed","topic":"feed","reason":"`+canary+`"}`), h.now)
	h.drain()
	h.closedWith(s, 1013, canary+" retry-after-ms=1000")
	h.advance(time.Minute)
	h.closedWith(h.last(), 4003, canary)
	if len(h.records) < 2 {
		t.Fatalf("records %+v", h.records)
	}
	for _, e := range h.events {
		if strings.Contains(e.Detail+e.Kind, canary) {
			t.Fatalf("trace event carries peer text: %+v", e)
		}
	}
}

// The core measures how long it was without READY between two READYs.
func TestRecoveryTimesAreMeasured(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	s := h.ready()
	for i, gap := range []time.Duration{time.Second, 3 * time.Second, 2 * time.Second} {
		h.rand.vals = []float64{0}
		h.closed(s)
		h.advance(gap)
		s = h.last()
		h.open(s)
		h.ping(s, 1000)
		h.subscribed(s)
		_ = i
	}
	st := h.c.Stats()
	if st.Recoveries != 3 || st.ReadyCount != 4 || st.RecoveryP50 != 2*time.Second || st.RecoveryP99 != 2*time.Second {
		t.Fatalf("stats %+v", st)
	}
	h.closedWith(s, 1013, "retry-after-ms=500")
	if h.c.Stats().RetryAftersHonoured != 1 {
		t.Fatalf("retry-afters %d", h.c.Stats().RetryAftersHonoured)
	}
}

// Over HTTP the ticket rides in the session POST, so each dial names the
// ticket the core holds for it (Effect.Token) and the driver keeps no copy
// of its own: one refused with 1013 before it opened dials again with the
// same ticket (tickets are good until they expire), and an in-band
// refresh's answer that a dial took (the socket was lost while the hook
// ran) is that dial's ticket. A driver that kept only dial answers made
// that session with no ticket, and a server with required auth closed it
// with 4003: the session ended forbidden.
func TestAnHTTPDialNamesTheTicketTheCoreHolds(t *testing.T) {
	h := newHarness(t, 8, withAuth, func(c *Config) { c.Transports = []Transport{TransportHTTP} })
	h.start()
	h.c.TokenReady("ticket-1", h.now)
	h.drain()
	s := h.last()
	if h.via[s] != TransportHTTP || h.ticket[s] != "ticket-1" {
		t.Fatalf("the first dial: via %v, ticket %q", h.via[s], h.ticket[s])
	}
	h.closedWith(s, protocol.CloseTryAgainLater, protocol.RetryAfterReason(time.Second)) // the POST's 429
	asks := len(h.tokens)
	h.advanceToDial()
	s = h.last()
	if len(h.tokens) != asks || h.ticket[s] != "ticket-1" {
		t.Fatalf("after a 1013 before open: token asks %d -> %d, the dial's ticket %q (want the kept one)", asks, len(h.tokens), h.ticket[s])
	}
	h.open(s)
	h.ping(s, 1000)
	h.subscribed(s)
	h.rand.vals = []float64{0}
	h.frame(s, protocol.Message{Type: protocol.TypeAuthenticated, ExpiresAt: h.now.Add(60 * time.Second).UnixMilli()})
	asks = len(h.tokens)
	h.keepAlive(s, 46*time.Second) // the refresh at 75% of 60 s
	if len(h.tokens) != asks+1 {
		t.Fatalf("no in-band refresh asked: asks %v", h.tokens[asks:])
	}
	h.closed(s) // lost while the hook runs for the refresh
	for len(h.tokens) == asks+1 {
		h.advanceToDial()
	}
	dials := len(h.dials)
	h.c.TokenReady("ticket-r", h.now) // the refresh's answer comes first: the dial takes it
	h.drain()
	if len(h.dials) != dials+1 || h.ticket[h.last()] != "ticket-r" {
		t.Fatalf("the refresh's answer taken for the dial: dials %d -> %d, ticket %q", dials, len(h.dials), h.ticket[h.last()])
	}
	h.c.TokenReady("ticket-d", h.now) // the dial's own, late: nothing more dials
	h.drain()
	if len(h.dials) != dials+1 {
		t.Fatalf("a late answer dialled again: %v", h.dials)
	}
}
