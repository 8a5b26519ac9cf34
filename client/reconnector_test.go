package client

import (
	"testing"
	"time"
	"unsafe"

	"github.com/wsready/wsready/protocol"
)

// The simulator keeps one Reconnector per simulated client: a million fit
// in 56 MB because the rules are shared and the state is small (its one
// instant is a time.Time, 24 bytes, as every instant in the package).
func TestAReconnectorIs56Bytes(t *testing.T) {
	if n := unsafe.Sizeof(Reconnector{}); n > 56 {
		t.Fatalf("a Reconnector is %d bytes, at most 56 keeps the simulator's memory", n)
	}
}

// ti is the instant d after t0: the Reconnector's instants in these tests.
func ti(d time.Duration) time.Time { return t0.Add(d) }

// Copies share the rules and keep their own state.
func TestReconnectorCopiesKeepTheirOwnState(t *testing.T) {
	rc, err := NewReconnector(Config{Disable: stageFixes(6), Budget: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := rc, rc
	lost := Cause{By: ByNetwork, Code: 1006}
	half := func() float64 { return 0.5 }
	a.AfterFailure(ti(0), lost, half)
	a.AfterFailure(ti(time.Second), lost, half)
	if d := a.AfterFailure(ti(2*time.Second), lost, half); d.Outcome.Terminal() != GaveUp {
		t.Fatalf("a: %+v", d)
	}
	if d := b.AfterFailure(ti(0), lost, half); d.Outcome.Terminal() != NotEnded || b.BackoffAttempt() != 1 {
		t.Fatalf("b: %+v attempt %d", d, b.BackoffAttempt())
	}
	if budget, window := b.Remaining(ti(0)); budget != 1 || window != -1 {
		t.Fatalf("b: left %d %v, want 1 attempt and no window", budget, window)
	}
}

// The constructor refuses what the Core refuses, and needs no Rand.
func TestNewReconnectorTakesTheConfigsDefaults(t *testing.T) {
	if _, err := NewReconnector(Config{Budget: -1}); err == nil {
		t.Fatal("a negative budget was accepted")
	}
	rc, err := NewReconnector(Config{Disable: stageFixes(6)})
	if err != nil {
		t.Fatal(err)
	}
	if got := rc.String(); got != "full-jitter(base 1s, cap 30s), reset after 5s ready, attempt 0" {
		t.Fatalf("defaults: %s", got)
	}
	// Two refreshes without READY (Config.MaxRefreshes' default), then terminal.
	expired := Cause{By: ByServer, Code: 4001}
	zero := func() float64 { return 0 }
	for i := range 2 {
		if d := rc.AfterFailure(ti(0), expired, zero); d.Outcome != OutcomeRefresh {
			t.Fatalf("refresh %d: %+v", i, d)
		}
	}
	if d := rc.AfterFailure(ti(0), expired, zero); d.Outcome.Terminal() != RefreshExhausted {
		t.Fatalf("third 4001: %+v", d)
	}
	// Without Backoff: NaiveDelay every time, reset on open.
	naive, _ := NewReconnector(Config{Disable: Fixes{Backoff: true}, NaiveDelay: 700 * time.Millisecond})
	if d := naive.AfterFailure(ti(0), Cause{By: ByNetwork, Code: 1006}, zero); d.Delay != 700*time.Millisecond {
		t.Fatalf("naive: %+v", d)
	}
	if naive.SocketOpened(); naive.BackoffAttempt() != 0 {
		t.Fatal("naive: no reset on open")
	}
}

// The cooldown rule is one step: READY for the cooldown resets the backoff
// and ends the run; shorter does not; without a cooldown the open resets.
func TestTheCooldownRuleIsTheValuesOwnStep(t *testing.T) {
	for _, resetOnOpen := range []bool{false, true} {
		off := stageFixes(5)
		off.Cooldown = resetOnOpen
		rc, _ := NewReconnector(Config{Disable: off, Cooldown: 5 * time.Second})
		lost := Cause{By: ByNetwork, Code: 1006}
		half := func() float64 { return 0.5 }
		rc.AfterFailure(ti(0), lost, half)
		rc.AfterFailure(ti(0), lost, half)
		rc.SocketOpened()
		if resetOnOpen {
			if rc.BackoffAttempt() != 0 {
				t.Fatal("reset on open: the open did not reset")
			}
			if _, ok := rc.ReadySince(ti(0), ti(0)); ok {
				t.Fatal("reset on open: Ready asks to be called again")
			}
			continue
		}
		if rc.BackoffAttempt() != 2 {
			t.Fatal("an open reset the backoff with a cooldown")
		}
		if due, ok := rc.ReadySince(ti(time.Second), ti(time.Second)); !ok || !due.Equal(ti(6*time.Second)) {
			t.Fatalf("Ready at READY: %v %v", due, ok)
		}
		if _, ok := rc.ReadySince(ti(time.Second), ti(6*time.Second-1)); !ok || rc.BackoffAttempt() != 2 {
			t.Fatal("reset before the cooldown")
		}
		if _, ok := rc.ReadySince(ti(time.Second), ti(6*time.Second)); ok || rc.BackoffAttempt() != 0 {
			t.Fatal("no reset after the cooldown")
		}
	}
}

// The waits are the value's decisions: a failure while offline (stage 5)
// or hidden (stage 6) waits, spending and drawing nothing; a terminal close
// is terminal while waiting too; online or visible start the backoff over.
func TestTheWaitsAreTheValuesDecisions(t *testing.T) {
	lost := Cause{By: ByNetwork, Code: 1006}
	never := func() float64 { t.Fatal("a wait drew a random number"); return 0 }
	stage := func(n int) Reconnector {
		rc, err := NewReconnector(Config{Disable: stageFixes(n), Budget: 3})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	rc := stage(6)
	rc.AfterFailure(ti(0), lost, func() float64 { return 0.5 })
	if rc.WentOffline() != true || rc.IsOnline() {
		t.Fatal("offline at stage 6 does not cancel")
	}
	if d := rc.AfterFailure(ti(time.Second), lost, never); d.Outcome != OutcomeWaitOnline || rc.BackoffAttempt() != 1 {
		t.Fatalf("offline: %+v attempt %d", d, rc.BackoffAttempt())
	}
	rc.WentHidden()
	if d := rc.AfterFailure(ti(time.Second), lost, never); d.Outcome != OutcomeWaitOnline {
		t.Fatalf("offline and hidden: the network comes first: %+v", d)
	}
	if rc.CameOnline() {
		t.Fatal("online while hidden asks for a reconnect")
	}
	if d := rc.AfterFailure(ti(time.Second), lost, never); d.Outcome != OutcomeWaitVisible || rc.BackoffAttempt() != 0 {
		t.Fatalf("hidden: %+v attempt %d", d, rc.BackoffAttempt())
	}
	if d := rc.AfterFailure(ti(time.Second), Cause{By: ByServer, Code: 4003}, never); d.Outcome.Terminal() != Forbidden {
		t.Fatalf("4003 while hidden: %+v", d)
	}
	if !rc.BecameVisible() {
		t.Fatal("visible and online: no reconnect")
	}
	// Stage 4 ignores both and reconnects at once after the watchdog.
	rc = stage(4)
	if rc.WentOffline() || rc.WentHidden() {
		t.Fatal("stage 4 cancels on offline or hidden")
	}
	half := func() float64 { return 0.5 }
	if d := rc.AfterFailure(ti(0), Cause{By: ByClient, Code: protocol.CloseHeartbeatTimeout, Fail: FailHeartbeat}, half); d.Outcome != OutcomeReconnect || d.Delay != 0 {
		t.Fatalf("stage 4 watchdog: %+v", d)
	}
	if d := rc.AfterFailure(ti(0), lost, half); d.Delay != time.Second {
		t.Fatalf("stage 4 close: %+v", d)
	}
	// Stage 5 waits for the network but not for a visible page, and backs
	// off after the watchdog like after any failure.
	rc = stage(5)
	rc.WentHidden()
	if d := rc.AfterFailure(ti(0), Cause{By: ByClient, Code: protocol.CloseHeartbeatTimeout, Fail: FailHeartbeat}, half); d.Outcome != OutcomeReconnect || d.Delay != 500*time.Millisecond {
		t.Fatalf("stage 5 watchdog while hidden: %+v", d)
	}
}

// Stage 8's decisions are the value's too: the transport the next dial
// uses and when to probe the fallback, the wait for leadership, and a
// window that does not charge a clock jump.
func TestStage8DecisionsAreTheValuesToo(t *testing.T) {
	rc, err := NewReconnector(Config{Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	half := func() float64 { return 0.5 }
	silent := Cause{By: ByNetwork, Code: 1006, Via: TransportWebSocket}
	for i := range 3 {
		if rc.NextTransport() != TransportWebSocket || rc.ProbeWanted() {
			t.Fatalf("attempt %d: via %v or an early probe", i, rc.NextTransport())
		}
		rc.AfterFailure(ti(time.Duration(i)*time.Second), silent, half)
	}
	if !rc.ProbeWanted() || rc.ProbeWanted() {
		t.Fatal("the probe is asked for once, after the third failure")
	}
	if rc.ProbeAnswered(true) != true || rc.NextTransport() != TransportHTTP || rc.BackoffAttempt() != 0 || rc.ProbeAnswered(true) {
		t.Fatalf("after a good probe: via %v, attempt %d", rc.NextTransport(), rc.BackoffAttempt())
	}
	if at, ok := rc.NextReprobe(ti(time.Hour)); !ok || !at.Equal(ti(time.Hour+10*time.Minute)) {
		t.Fatalf("reprobe %v %v", at, ok)
	}
	rc.BackOnPreferred()
	if rc.NextTransport() != TransportWebSocket {
		t.Fatal("moved, but not back on WebSocket")
	}
	if _, ok := rc.NextReprobe(ti(0)); ok {
		t.Fatal("a reprobe while on the preferred transport")
	}

	// The window (the run began at 0): a jump shifts the run's start.
	if _, w := rc.Remaining(ti(4 * time.Second)); w != 56*time.Second {
		t.Fatalf("window left %v", w)
	}
	rc.ClockJumped(time.Hour)
	if end, _ := rc.WindowDeadline(); !end.Equal(ti(time.Hour + time.Minute)) {
		t.Fatalf("window ends %v after a jump of an hour", end)
	}
	fresh := rc
	fresh.NewSession()
	fresh.ClockJumped(time.Hour) // no run: nothing to shift
	if _, ok := fresh.WindowDeadline(); ok {
		t.Fatal("a jump started a run")
	}

	// Leadership: a follower waits, spending and drawing nothing.
	rc.BecameFollower()
	never := func() float64 { t.Fatal("a wait drew"); return 0 }
	if d := rc.AfterFailure(ti(time.Hour+30*time.Second), silent, never); d.Outcome != OutcomeWaitLeader || !rc.IsFollower() {
		t.Fatalf("follower: %+v", d)
	}
	rc.WentOffline()
	if rc.BecameLeader() {
		t.Fatal("a new leader that is offline may dial")
	}
	if !rc.CameOnline() {
		t.Fatal("online leader: no reconnect")
	}

	// Stage 7 has one transport and charges jumps.
	rc7, _ := NewReconnector(Config{Disable: stageFixes(7), Window: time.Minute})
	for i := range 5 {
		rc7.AfterFailure(ti(time.Duration(i)), silent, half)
	}
	rc7.ClockJumped(time.Hour)
	if rc7.ProbeWanted() || rc7.NextTransport() != TransportWebSocket {
		t.Fatal("stage 7 probes HTTP")
	}
	if _, w := rc7.Remaining(ti(4)); w != time.Minute-4 {
		t.Fatalf("stage 7 did not charge the jump: %v", w)
	}
}
