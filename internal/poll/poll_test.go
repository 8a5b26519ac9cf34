package poll

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		if !Until(time.Second, func() bool { n++; return n == 3 }) {
			t.Fatal("Until gave up on a condition that came true")
		}
		if n != 3 {
			t.Fatalf("cond called %d times, want 3", n)
		}
		if got := time.Since(start); got != 2*Every {
			t.Fatalf("took %v, want %v (two waits)", got, 2*Every)
		}
	})
}

func TestUntilGivesUpAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if UntilEvery(time.Second, 100*time.Millisecond, func() bool { return false }) {
			t.Fatal("Until reported a condition that never held")
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("gave up after %v, want 1s", got)
		}
	})
}
