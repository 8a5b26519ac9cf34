package slots

import (
	"testing"
	"time"
)

// Slots start when the server accepts again, never come closer than the
// spacing, and keep at most Share of the rate in any one second.
func TestSlotsAreSpreadUnderTheRate(t *testing.T) {
	a := New(500)
	t0 := time.Unix(0, 0)
	perSecond := map[int64]int{}
	var prev time.Time
	for i := range 10000 {
		s := a.Take(t0.Add(time.Duration(i)*time.Microsecond), t0.Add(10*time.Second))
		if s.Before(t0.Add(10 * time.Second)) {
			t.Fatalf("slot %v before the downtime ends", s.Sub(t0))
		}
		if i > 0 && s.Sub(prev) < a.Spacing {
			t.Fatalf("slots %v apart", s.Sub(prev))
		}
		prev = s
		perSecond[s.Sub(t0).Milliseconds()/1000]++
	}
	for sec, n := range perSecond {
		if n > 451 { // 450 a second, one more where a second starts and ends on a slot
			t.Fatalf("%d slots in second %d, over 90%% of 500", n, sec)
		}
	}
	// 10,000 clients at 450/s: the last slot about 22 s after the downtime.
	if last := prev.Sub(t0); last < 31*time.Second || last > 33*time.Second {
		t.Fatalf("last slot at %v", last)
	}
	// Later, with nothing handed out for a while, a slot is one spacing away.
	if s := a.Take(t0.Add(time.Hour), time.Time{}); s.Sub(t0.Add(time.Hour)) != a.Spacing {
		t.Fatalf("idle slot %v from now", s.Sub(t0.Add(time.Hour)))
	}
}
