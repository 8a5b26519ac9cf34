package client

import (
	"math"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// overloadDefault is the larger base with the default policy (full jitter,
// base 1 s): OverloadFactor times 1 s.
const overloadDefault = 5 * time.Second

// A 1013 without a retry-after (the auth-loop page's overload with no
// hint) backs off from a larger base than a plain drop: OverloadFactor
// times the policy's first delay, 5 s by default, spread over 5 to 10 s by
// the draw, where the same draw after a 1006 waits under a second. A
// retry-after the server gave still rules when it is there.
func TestOverloadWithoutARetryAfterStartsFromALargerBase(t *testing.T) {
	delay := func(policy Policy, code int, reason string, r float64) time.Duration {
		t.Helper()
		h := newHarness(t, 8, func(c *Config) {
			if policy != nil {
				c.Policy = policy
			}
		})
		h.start()
		s := h.ready()
		h.rand.vals = []float64{r}
		h.closedWith(s, code, reason)
		rec := lastRecord(t, h)
		if rec.Outcome != OutcomeReconnect {
			t.Fatalf("%d %q: record %+v", code, reason, rec)
		}
		// The dial comes at that delay, not before.
		if rec.Delay > 0 {
			h.advance(rec.Delay - time.Millisecond)
			if len(h.dials) != 1 {
				t.Fatalf("%d %q: dialled before the recorded %v", code, reason, rec.Delay)
			}
			h.advance(time.Millisecond)
		}
		if len(h.dials) != 2 {
			t.Fatalf("%d %q: no dial at the recorded %v", code, reason, rec.Delay)
		}
		return rec.Delay
	}
	for _, r := range []float64{0, 0.5, 0.99} {
		drop := delay(nil, protocol.CloseAbnormal, "", r)
		over := delay(nil, protocol.CloseTryAgainLater, "", r)
		if want := overloadDefault + time.Duration(r*float64(overloadDefault)); over != want {
			t.Fatalf("r=%v: 1013 without a retry-after waits %v, want %v", r, over, want)
		}
		if over < overloadDefault || over <= drop {
			t.Fatalf("r=%v: 1013 waits %v, a plain drop %v", r, over, drop)
		}
	}
	// The base follows the policy's: 20 ms full jitter, 100 to 200 ms.
	fast := FullJitter{Base: 20 * time.Millisecond, Cap: 150 * time.Millisecond}
	if d := delay(fast, protocol.CloseTryAgainLater, "", 0.5); d != 150*time.Millisecond {
		t.Fatalf("1013 under a 20 ms policy waits %v, want 150ms", d)
	}
	// The server's own retry-after is the floor when it gives one, even
	// under the larger base.
	if d := delay(nil, protocol.CloseTryAgainLater, protocol.RetryAfterReason(time.Second), 0); d != time.Second {
		t.Fatalf("1013 with a 1 s retry-after waits %v", d)
	}
}

// A policy whose first delay is near the largest duration does not
// overflow the larger base (or the draw over it).
func TestTheOverloadBaseDoesNotOverflow(t *testing.T) {
	for _, first := range []time.Duration{math.MaxInt64, math.MaxInt64 / 5, math.MaxInt64/10 + 1} {
		b := overloadBase(Fixed{D: first})
		if b <= 0 || b+b < 0 {
			t.Fatalf("first delay %v: base %v overflows", first, b)
		}
	}
	if b := overloadBase(Fixed{D: -time.Second}); b != 0 {
		t.Fatalf("a negative first delay: base %v", b)
	}
}
