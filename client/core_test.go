package client

import (
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

func TestAConfigWithoutRandIsRefused(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("a config without Rand was accepted")
	}
}

func TestReadinessIsAllThreeLayersAndEpochCountsSockets(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	if st := h.state(); st.Transport != Pending || st.Ready || st.Epoch != 1 {
		t.Fatalf("after start: %+v", st)
	}
	h.open(1)
	if st := h.state(); st.Transport != Up || st.Protocol != Pending || st.Service != Pending || st.Ready {
		t.Fatalf("after open: %+v", st)
	}
	if got := h.sentTypes(1); len(got) != 1 || got[0] != protocol.TypeSubscribe {
		t.Fatalf("sent after open: %v", got)
	}
	h.ping(1, 1000)
	if st := h.state(); st.Protocol != Up || st.Ready {
		t.Fatalf("after ping: %+v", st)
	}
	h.subscribed(1)
	if st := h.state(); !st.Ready {
		t.Fatalf("after subscribed: %+v", st)
	}
	h.closed(1)
	if st := h.state(); st.Transport != Down || st.Protocol != Down || st.Service != Down || st.Ready {
		t.Fatalf("losing transport must reset the layers above: %+v", st)
	}
	h.advance(time.Second)
	if st := h.state(); st.Epoch != 2 || st.Transport != Pending {
		t.Fatalf("after reconnect: %+v", st)
	}
}

func TestUntrackedLayersAreOffAndDoNotBlockReady(t *testing.T) {
	h := newHarness(t, 0)
	h.start()
	h.open(1)
	if st := h.state(); !st.Ready || st.Protocol != Off || st.Service != Off {
		t.Fatalf("stage 0 after open: %+v", st)
	}
}

func TestNaiveReconnectIsExactlyOneSecondAfterClose(t *testing.T) {
	h := newHarness(t, 0)
	h.start()
	h.open(1)
	h.closed(1)
	h.advance(999 * time.Millisecond)
	if len(h.dials) != 1 {
		t.Fatalf("reconnected after %v", 999*time.Millisecond)
	}
	h.advance(time.Millisecond)
	if len(h.dials) != 2 {
		t.Fatal("no reconnect exactly 1s after close")
	}
	// And again, without growing: the naive client would hammer forever.
	h.closed(2)
	h.advance(time.Second)
	if len(h.dials) != 3 {
		t.Fatal("second reconnect was not 1s after close")
	}
}

func TestWatchdogFiresAtExactlyTwoIntervalsAndNotBefore(t *testing.T) {
	h := newHarness(t, 3)
	h.start()
	h.open(1)
	h.ping(1, 700) // the interval is the server's, not a constant
	h.advance(1400*time.Millisecond - time.Nanosecond)
	if h.sockets[1].closed || h.state().Protocol != Up {
		t.Fatal("watchdog fired before two intervals")
	}
	h.advance(time.Nanosecond)
	if !h.sockets[1].closed || h.sockets[1].closeCode != protocol.CloseHeartbeatTimeout {
		t.Fatalf("watchdog did not close the socket at two intervals: %+v", h.sockets[1])
	}
	if !h.hasEvent("watchdog") {
		t.Fatal("no watchdog event")
	}
}

func TestWatchdogReconnectsAtOnceWithoutWaitingForTheCloseEvent(t *testing.T) {
	h := newHarness(t, 2)
	h.start()
	h.open(1)
	h.ping(1, 1000)
	h.advance(2 * time.Second)
	if len(h.dials) != 2 || h.last() != 2 {
		t.Fatalf("dials after watchdog: %v", h.dials)
	}
	if st := h.state(); st.Transport != Pending || st.Epoch != 2 {
		t.Fatalf("state after watchdog: %+v", st)
	}
}

func TestFirstPingTimeout(t *testing.T) {
	h := newHarness(t, 3)
	h.start()
	h.open(1)
	h.advance(3*time.Second - time.Millisecond)
	if h.sockets[1].closed {
		t.Fatal("closed before the first-ping timeout")
	}
	h.advance(time.Millisecond)
	if !h.sockets[1].closed {
		t.Fatal("no ping within 3s, but the socket was kept")
	}
}

func TestOneLatePingDoesNotDisconnect(t *testing.T) {
	h := newHarness(t, 3)
	h.start()
	h.open(1)
	h.ping(1, 1000)
	h.advance(1900 * time.Millisecond) // one ping missed, the next is 900ms late
	h.ping(1, 1000)
	h.advance(1000 * time.Millisecond)
	h.ping(1, 1000)
	if h.sockets[1].closed || len(h.dials) != 1 || !h.state().Ready {
		t.Fatalf("a late ping killed the connection: %+v", h.state())
	}
}

func TestRequestTimesOutWithRequestTimeout(t *testing.T) {
	h := newHarness(t, 1)
	h.start()
	h.open(1)
	id := h.request()
	h.advance(5*time.Second - time.Millisecond)
	if _, ok := h.settled[id]; ok {
		t.Fatal("settled before the timeout")
	}
	h.advance(time.Millisecond)
	e, ok := h.settled[id]
	if !ok || !errors.Is(e.Err, ErrRequestTimeout) {
		t.Fatalf("after 5s: %+v", e)
	}
	var re *RequestError
	if !errors.As(e.Err, &re) || re.ID != id || re.Epoch != 1 || ErrorName(e.Err) != "RequestTimeout" {
		t.Fatalf("error %#v", e.Err)
	}
	// The late response is dropped and counted.
	h.frame(1, protocol.Message{Type: protocol.TypeResponse, ID: id, Result: []byte(`1`)})
	if h.c.Stats().DroppedResponses != 1 {
		t.Fatalf("late response not dropped: %+v", h.c.Stats())
	}
}

func TestRequestsAreRejectedOnCloseWithConnectionClosed(t *testing.T) {
	h := newHarness(t, 1)
	h.start()
	h.open(1)
	a, b := h.request(), h.request()
	h.closed(1)
	for _, id := range []uint64{a, b} {
		if e := h.settled[id]; !errors.Is(e.Err, ErrConnectionClosed) || ErrorName(e.Err) != "ConnectionClosed" {
			t.Fatalf("request %d: %+v", id, e)
		}
	}
	if h.c.Pending() != 0 || !h.timer.After(h.now) {
		t.Fatalf("pending %d, timer %v", h.c.Pending(), h.timer)
	}
}

func TestNotReadyRequestIsNeverSent(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	h.open(1)
	h.ping(1, 1000) // transport and protocol up, service pending
	id := h.request()
	if e := h.settled[id]; !errors.Is(e.Err, ErrNotReady) || ErrorName(e.Err) != "NotReady" {
		t.Fatalf("%+v", e)
	}
	if h.count(protocol.TypeRequest, 1) != 0 {
		t.Fatal("a not-ready request went on the wire")
	}
}

func TestResponseSettlesWithResultOrServerError(t *testing.T) {
	h := newHarness(t, 1)
	h.start()
	h.open(1)
	a, b := h.request(), h.request()
	h.frame(1, protocol.Message{Type: protocol.TypeResponse, ID: a, Result: []byte(`{"ok":true}`)})
	h.frame(1, protocol.Message{Type: protocol.TypeResponse, ID: b, Error: &protocol.ErrorBody{Code: "unknown_method", Message: "no"}})
	if string(h.settled[a].Result) != `{"ok":true}` || h.settled[a].Err != nil {
		t.Fatalf("a: %+v", h.settled[a])
	}
	var se *ServerError
	if !errors.As(h.settled[b].Err, &se) || se.Code != "unknown_method" || ErrorName(se) != "ServerError" {
		t.Fatalf("b: %+v", h.settled[b])
	}
}

func TestIDsNeverResetAcrossReconnects(t *testing.T) {
	h := newHarness(t, 1)
	h.start()
	h.open(1)
	first := h.request()
	h.closed(1)
	h.advance(time.Second)
	h.open(2)
	second := h.request()
	if second <= first {
		t.Fatalf("id %d after reconnect, earlier %d", second, first)
	}
	// A late answer to the first request, arriving on the new socket,
	// matches nothing and settles nothing.
	h.frame(2, protocol.Message{Type: protocol.TypeResponse, ID: first, Result: []byte(`1`)})
	if _, ok := h.settled[second]; ok || h.c.Stats().DroppedResponses != 1 {
		t.Fatalf("late response misrouted: %+v", h.c.Stats())
	}
	if got := h.sockets[2].sent; got[len(got)-1].ID != second {
		t.Fatalf("wire id %d, want %d", got[len(got)-1].ID, second)
	}
}

func TestStage0RequestsWaitForever(t *testing.T) {
	h := newHarness(t, 0)
	h.start()
	h.open(1)
	id := h.request()
	h.advance(time.Minute)
	h.closed(1)
	h.advance(time.Minute)
	if _, ok := h.settled[id]; ok {
		t.Fatal("stage 0 settled a request: it has no registry")
	}
	h.c.Stop(h.now) // only stopping the client releases it
	h.drain()
	if e := h.settled[id]; !errors.Is(e.Err, ErrConnectionClosed) {
		t.Fatalf("stop: %+v", e)
	}
}

// The stage 2 bug: the late close of a socket the watchdog replaced is taken
// as the close of the current one, which is then forgotten (but left open)
// while yet another socket is dialled.
func TestStage2IsFooledByTheLateCloseOfAReplacedSocket(t *testing.T) {
	h := newHarness(t, 2)
	h.start()
	h.ready()
	h.advance(2 * time.Second) // watchdog: socket 1 closed, socket 2 dialled
	h.ready()
	h.closed(1) // the close handshake of socket 1 finally completes
	if st := h.state(); st.Transport != Down || st.Ready {
		t.Fatalf("stage 2 should believe it lost the connection: %+v", st)
	}
	if h.sockets[2].closed {
		t.Fatal("stage 2 is not supposed to close socket 2 (it leaks it)")
	}
	h.advance(time.Second)
	if len(h.dials) != 3 {
		t.Fatalf("stage 2 should have scheduled a reconnect: dials %v", h.dials)
	}
	if h.c.Stats().ForeignEvents == 0 {
		t.Fatal("foreign event not counted")
	}
}

// Without the filter every stale close schedules a reconnect of its own, as
// a naive onclose handler would: two late closes, two more sockets, and the
// live one leaked. That is how later failures multiply the attempts.
func TestStage2StaleClosesMultiplyTheSockets(t *testing.T) {
	h := newHarness(t, 2)
	h.start()
	h.ready()
	h.advance(2 * time.Second) // watchdog: 1 replaced by 2
	h.open(2)
	h.advance(3 * time.Second) // no first ping: 2 replaced by 3
	s3 := h.ready()
	h.closed(1)
	h.closed(2)
	h.advance(time.Second)
	if len(h.dials) != 5 {
		t.Fatalf("dials %v, want two more after two stale closes", h.dials)
	}
	if h.sockets[s3].closed {
		t.Fatal("socket 3 was closed; stage 2 leaks it")
	}
}

func TestStage3IgnoresTheLateCloseOfAReplacedSocket(t *testing.T) {
	h := newHarness(t, 3)
	h.start()
	h.ready()
	h.advance(2 * time.Second)
	s2 := h.ready()
	h.closed(1)
	h.frame(1, protocol.Message{Type: protocol.TypeUpdate, Topic: "feed", Seq: 9, Data: []byte(`1`)})
	if st := h.state(); !st.Ready || st.Epoch != uint64(s2) {
		t.Fatalf("stage 3 let a stale event change state: %+v", st)
	}
	h.advance(10 * time.Second / 10)
	if len(h.dials) != 2 || len(h.updates) != 0 || h.c.Stats().StaleEvents != 2 || !h.hasEvent("stale") {
		t.Fatalf("dials %v updates %v stats %+v", h.dials, h.updates, h.c.Stats())
	}
}

func TestSubscribeIsResentAfterTheSubscribeTimeout(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	h.open(1)
	h.ping(1, 1000)
	h.advance(time.Second)
	h.ping(1, 1000)
	h.advance(999 * time.Millisecond)
	if n := h.count(protocol.TypeSubscribe, 1); n != 1 {
		t.Fatalf("%d subscribes before the timeout", n)
	}
	h.advance(time.Millisecond)
	if n := h.count(protocol.TypeSubscribe, 1); n != 2 {
		t.Fatalf("%d subscribes after 2s, want a resend", n)
	}
	if h.sockets[1].closed || len(h.dials) != 1 {
		t.Fatal("resubscribing must not touch the socket")
	}
}

func TestUnsubscribedLeadsToResubscribeAndLeavesTransportAndProtocolUp(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	s := h.ready()
	h.frame(s, protocol.Message{Type: protocol.TypeUnsubscribed, Topic: "feed", Reason: "service_unavailable"})
	st := h.state()
	if st.Ready || st.Service != Pending || st.Transport != Up || st.Protocol != Up {
		t.Fatalf("after unsubscribed: %+v", st)
	}
	if n := h.count(protocol.TypeSubscribe, s); n != 2 {
		t.Fatalf("subscribes: %d", n)
	}
	// The service stays down for a while: pings continue, the socket stays.
	for range 10 {
		h.advance(time.Second)
		h.ping(s, 1000)
	}
	if h.sockets[s].closed || len(h.dials) != 1 || h.state().Protocol != Up {
		t.Fatal("a service outage tore down a healthy socket")
	}
	if n := h.count(protocol.TypeSubscribe, s); n != 7 { // one resend every 2s
		t.Fatalf("subscribes during outage: %d", n)
	}
	h.subscribed(s)
	if !h.state().Ready {
		t.Fatal("not ready after the service came back")
	}
}

func TestStage3NeverNoticesTheServiceGoingAway(t *testing.T) {
	h := newHarness(t, 3)
	h.start()
	s := h.ready()
	h.frame(s, protocol.Message{Type: protocol.TypeUnsubscribed, Topic: "feed"})
	if !h.state().Ready || h.count(protocol.TypeSubscribe, s) != 1 {
		t.Fatalf("stage 3 reacted to unsubscribed: %+v", h.state())
	}
}

func TestBackoffGrowsAndResetsOnlyAfterTheCooldown(t *testing.T) {
	h := newHarness(t, 5)
	h.rand.vals = []float64{0.999, 0.999, 0.999, 0.999}
	h.start()
	var delays []time.Duration
	for i := range 3 {
		s := h.last()
		h.open(s)
		h.closed(s) // flapping: opens, never READY
		before := h.now
		n := len(h.dials)
		for len(h.dials) == n {
			h.advance(time.Millisecond)
		}
		delays = append(delays, h.now.Sub(before))
		_ = i
	}
	// attempt n waits just under min(30s, 2^n s) with r = 0.999
	for i, d := range delays {
		limit := time.Duration(1<<i) * time.Second
		if d > limit || d < limit*99/100 {
			t.Fatalf("delay %d = %v, want just under %v (all %v)", i, d, limit, delays)
		}
	}
	if h.state().Attempt != 3 {
		t.Fatalf("attempt %d: opening must not reset the backoff at stage 5", h.state().Attempt)
	}
	s := h.ready()
	h.keepAlive(s, 5*time.Second-time.Millisecond)
	if h.state().Attempt != 3 {
		t.Fatal("reset before the cooldown")
	}
	h.keepAlive(s, time.Millisecond)
	if h.state().Attempt != 0 || !h.hasEvent("backoff-reset") {
		t.Fatalf("no reset after 5s of READY: %+v", h.state())
	}
}

func TestBackoffCooldownRestartsWhenReadinessIsLost(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.ready()
	h.c.rc.attempt = 4
	h.keepAlive(s, 4*time.Second)
	h.frame(s, protocol.Message{Type: protocol.TypeUnsubscribed, Topic: "feed"})
	h.keepAlive(s, 2*time.Second)
	if h.state().Attempt != 4 {
		t.Fatal("cooldown did not require continuous READY")
	}
	h.subscribed(s)
	h.keepAlive(s, 5*time.Second)
	if h.state().Attempt != 0 {
		t.Fatal("no reset after 5s of READY")
	}
}

func TestBackoffResetsOnOpenBeforeStage5(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	h.open(1)
	h.closed(1)
	h.advance(time.Second)
	if h.state().Attempt != 1 {
		t.Fatalf("attempt %d", h.state().Attempt)
	}
	h.open(2)
	if h.state().Attempt != 0 {
		t.Fatal("before stage 5 the backoff resets on open")
	}
}

func TestFullJitterDelaysStayInRange(t *testing.T) {
	p := FullJitter{Base: time.Second, Cap: 30 * time.Second}
	for n := 0; n < 70; n++ {
		limit := min(30*time.Second, time.Duration(1)<<min(n, 10)*time.Second)
		for _, r := range []float64{0, 0.25, 0.5, 0.999999} {
			d := p.Delay(n, 0, r)
			if d < 0 || d >= limit {
				t.Fatalf("attempt %d r %v: %v not in [0, %v)", n, r, d, limit)
			}
		}
	}
	if got := (Exponential{Base: time.Second, Cap: 30 * time.Second}).Delay(4, 0, 0); got != 16*time.Second {
		t.Fatalf("exponential(4) = %v", got)
	}
	if got := (Exponential{Base: time.Second, Cap: 30 * time.Second}).Delay(200, 0, 0); got != 30*time.Second {
		t.Fatalf("exponential(200) = %v", got)
	}
	b, err := NewReconnector(Config{Disable: stageFixes(5), Policy: RandomStartLinear{Step: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for _, r := range []float64{0.25, 0.9, 0.1} {
		got = append(got, b.AfterFailure(t0, Cause{By: ByNetwork, Code: 1006}, func() float64 { return r }).Delay)
	}
	want := []time.Duration{250 * time.Millisecond, 1250 * time.Millisecond, 2250 * time.Millisecond}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("random-start linear: %v, want %v", got, want)
		}
	}
}

func TestOfflineCancelsAScheduledReconnectAndOnlineReconnects(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	h.ready()
	h.closed(1)
	if h.timer.IsZero() {
		t.Fatal("no reconnect scheduled")
	}
	h.c.Offline(h.now)
	h.drain()
	h.advance(time.Minute)
	if len(h.dials) != 1 || !h.hasEvent("reconnect-cancelled") {
		t.Fatalf("dialled while offline: %v", h.dials)
	}
	h.c.rc.attempt = 6
	h.rand.vals = []float64{0.5}
	h.c.Online(h.now)
	h.drain()
	if h.state().Attempt != 0 {
		t.Fatal("online did not reset the backoff")
	}
	h.advance(249 * time.Millisecond)
	if len(h.dials) != 1 {
		t.Fatal("reconnected before the random online delay")
	}
	h.advance(time.Millisecond)
	if len(h.dials) != 2 {
		t.Fatal("no reconnect within the online delay")
	}
}

func TestWatchdogWhileOfflineWaitsForOnline(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	h.ready()
	h.c.Offline(h.now)
	h.drain()
	h.advance(10 * time.Second)
	if !h.sockets[1].closed || len(h.dials) != 1 {
		t.Fatalf("offline: closed %v dials %v", h.sockets[1].closed, h.dials)
	}
}

func TestStagesBelow5IgnoreOfflineOnline(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	h.open(1)
	h.closed(1)
	h.c.Offline(h.now)
	h.drain()
	h.advance(time.Second)
	if len(h.dials) != 2 || h.state().Online {
		t.Fatalf("dials %v state %+v", h.dials, h.state())
	}
}

func TestConnectTimeoutCountsAsAFailedAttempt(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	h.advance(10 * time.Second)
	if !h.sockets[1].closed || h.state().Attempt != 1 {
		t.Fatalf("socket %+v state %+v", h.sockets[1], h.state())
	}
}

func TestStopLeavesNoArmedTimer(t *testing.T) {
	h := newHarness(t, 5)
	h.start()
	s := h.ready()
	id := h.request()
	h.c.Stop(h.now)
	h.drain()
	if !h.timer.IsZero() {
		t.Fatalf("timer still armed at %v", h.timer)
	}
	if !h.sockets[s].closed || h.sockets[s].closeCode != protocol.CloseNormal {
		t.Fatalf("socket not closed with 1000: %+v", h.sockets[s])
	}
	if e := h.settled[id]; !errors.Is(e.Err, ErrConnectionClosed) {
		t.Fatalf("request: %+v", e)
	}
	if st := h.state(); st.Ended != Stopped || st.Ready {
		t.Fatalf("%+v", st)
	}
	// Events after stop are ignored; requests are refused.
	h.closed(s)
	h.advance(time.Hour)
	id = h.request()
	if len(h.dials) != 1 || !errors.Is(h.settled[id].Err, ErrNotReady) {
		t.Fatalf("after stop: dials %v settle %+v", h.dials, h.settled[id])
	}
}

func TestUpdatesAreTaggedWithTheEpochAndGapsCounted(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	s := h.ready()
	for _, n := range []int64{5, 6, 8} {
		h.frame(s, protocol.Message{Type: protocol.TypeUpdate, Topic: "feed", Seq: n, Data: []byte(`{}`)})
	}
	if len(h.updates) != 3 || h.updates[2].Epoch != uint64(s) || h.c.Stats().SeqGaps != 1 {
		t.Fatalf("updates %+v stats %+v", h.updates, h.c.Stats())
	}
}

func TestBadFramesAreCountedNotFatal(t *testing.T) {
	h := newHarness(t, 4)
	h.start()
	s := h.ready()
	h.c.Received(s, []byte("garbage"), h.now)
	h.c.Received(s, []byte(`{"type":"subscribe","topic":"x"}`), h.now)
	h.drain()
	if h.c.Stats().BadFrames != 2 || !h.state().Ready {
		t.Fatalf("%+v %+v", h.c.Stats(), h.state())
	}
}

func BenchmarkCoreMessage(b *testing.B) {
	r := &seq{}
	cfg := stageConfig(5, r.next)
	c, _ := New(cfg)
	now := t0
	c.Start(now)
	c.Effects()
	c.Opened(1, now)
	ping := protocol.Encode(protocol.Message{Type: protocol.TypePing, IntervalMs: 1000})
	c.Received(1, ping, now)
	c.Received(1, protocol.Encode(protocol.Message{Type: protocol.TypeSubscribed, Topic: "feed"}), now)
	c.Effects()
	frames := [][]byte{ping}
	for i := range 9 {
		frames = append(frames, protocol.Encode(protocol.Message{Type: protocol.TypeUpdate, Topic: "feed", Seq: int64(i + 1), Data: []byte(`{"ts":1700000000000,"value":57}`)}))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Millisecond)
		c.Received(1, frames[i%len(frames)], now)
		c.Effects()
	}
}
