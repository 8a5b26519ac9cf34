package client

import (
	"testing"
	"time"
	"unsafe"
)

// The simulator keeps one Reconnector per simulated client: a million fit
// in 40 MB because the rules are shared and the state is small.
func TestAReconnectorIs40Bytes(t *testing.T) {
	if n := unsafe.Sizeof(Reconnector{}); n > 40 {
		t.Fatalf("a Reconnector is %d bytes, at most 40 keeps the simulator's memory", n)
	}
}

// Copies share the rules and keep their own state.
func TestReconnectorCopiesKeepTheirOwnState(t *testing.T) {
	rc, err := NewReconnector(Config{Features: Features{Backoff: true, Session: true}, Budget: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := rc, rc
	lost := Cause{By: ByNetwork, Code: 1006}
	half := func() float64 { return 0.5 }
	a.Failed(0, lost, half)
	a.Failed(time.Second, lost, half)
	if d := a.Failed(2*time.Second, lost, half); d.Terminal != GaveUp {
		t.Fatalf("a: %+v", d)
	}
	if d := b.Failed(0, lost, half); d.Terminal != NotEnded || d.BudgetLeft != 1 || b.Attempt() != 1 {
		t.Fatalf("b: %+v attempt %d", d, b.Attempt())
	}
}

// The constructor refuses what the Core refuses, and needs no Rand.
func TestNewReconnectorTakesTheConfigsDefaults(t *testing.T) {
	if _, err := NewReconnector(Config{Budget: -1}); err == nil {
		t.Fatal("a negative budget was accepted")
	}
	rc, err := NewReconnector(Config{Features: Features{Backoff: true, Session: true}})
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
		if d := rc.Failed(0, expired, zero); !d.Refresh {
			t.Fatalf("refresh %d: %+v", i, d)
		}
	}
	if d := rc.Failed(0, expired, zero); d.Terminal != RefreshExhausted {
		t.Fatalf("third 4001: %+v", d)
	}
	// Without Backoff: NaiveDelay every time, reset on open.
	naive, _ := NewReconnector(Config{NaiveDelay: 700 * time.Millisecond})
	if d := naive.Failed(0, Cause{By: ByNetwork, Code: 1006}, zero); d.Delay != 700*time.Millisecond {
		t.Fatalf("naive: %+v", d)
	}
	if naive.Opened(); naive.Attempt() != 0 {
		t.Fatal("naive: no reset on open")
	}
}

// The cooldown rule is one step: READY for the cooldown resets the backoff
// and ends the run; shorter does not; without a cooldown the open resets.
func TestTheCooldownRuleIsTheValuesOwnStep(t *testing.T) {
	for _, resetOnOpen := range []bool{false, true} {
		rc, _ := NewReconnector(Config{Features: Features{Backoff: true}, Cooldown: 5 * time.Second, ResetOnOpen: resetOnOpen})
		lost := Cause{By: ByNetwork, Code: 1006}
		half := func() float64 { return 0.5 }
		rc.Failed(0, lost, half)
		rc.Failed(0, lost, half)
		rc.Opened()
		if resetOnOpen {
			if rc.Attempt() != 0 {
				t.Fatal("reset on open: the open did not reset")
			}
			if _, ok := rc.Ready(0, 0); ok {
				t.Fatal("reset on open: Ready asks to be called again")
			}
			continue
		}
		if rc.Attempt() != 2 {
			t.Fatal("an open reset the backoff with a cooldown")
		}
		if due, ok := rc.Ready(time.Second, time.Second); !ok || due != 6*time.Second {
			t.Fatalf("Ready at READY: %v %v", due, ok)
		}
		if _, ok := rc.Ready(time.Second, 6*time.Second-1); !ok || rc.Attempt() != 2 {
			t.Fatal("reset before the cooldown")
		}
		if _, ok := rc.Ready(time.Second, 6*time.Second); ok || rc.Attempt() != 0 {
			t.Fatal("no reset after the cooldown")
		}
	}
}
