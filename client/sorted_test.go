package client

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSortedRecoveries: the durations kept sorted as they come give the
// quantiles a sort of the ring gives (noteRecovery's, before the
// wasm size cut), over more recoveries than the ring holds, with repeats.
func TestSortedRecoveries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := &Core{}
	now := time.Unix(1000, 0)
	for n := 1; n <= 3*maxRecoveries+17; n++ {
		c.lostReadyAt = now
		now = now.Add(time.Duration(r.IntN(50)) * time.Millisecond) // repeats likely
		c.noteRecovery(now)
		ref := slices.Clone(c.recoveries)
		slices.Sort(ref)
		if !slices.Equal(ref, c.sortedRecoveries) {
			t.Fatalf("after %d recoveries: sorted %v, want %v", n, c.sortedRecoveries, ref)
		}
		if p50, p99 := ref[(len(ref)-1)*50/100], ref[(len(ref)-1)*99/100]; c.stats.RecoveryP50 != p50 || c.stats.RecoveryP99 != p99 {
			t.Fatalf("after %d recoveries: p50 %v p99 %v, want %v %v", n, c.stats.RecoveryP50, c.stats.RecoveryP99, p50, p99)
		}
	}
}

func TestSortByID(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 70 {
		var ps []*pendingRequest
		var want []uint64
		for range n {
			id := r.Uint64N(40) // repeats cannot happen in the registry, but sort them anyway
			ps = append(ps, &pendingRequest{id: id})
			want = append(want, id)
		}
		slices.Sort(want)
		var got []uint64
		for _, p := range sortByID(ps) {
			got = append(got, p.id)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: %v, want %v", n, got, want)
		}
	}
}

// The quantiles are over the last maxRecoveries recoveries: the one after
// them replaces the oldest (it replaced the second oldest, so the first
// stayed until the 512th).
func TestRecoveriesRingDropsTheOldest(t *testing.T) {
	c := &Core{}
	now := time.Unix(1000, 0)
	recovery := func(d time.Duration) {
		c.lostReadyAt = now
		now = now.Add(d)
		c.noteRecovery(now)
	}
	recovery(time.Hour)     // #1
	recovery(2 * time.Hour) // #2
	for range maxRecoveries - 1 {
		recovery(time.Millisecond) // #3 to #257
	}
	s := c.sortedRecoveries
	if len(s) != maxRecoveries || s[len(s)-1] != 2*time.Hour || s[len(s)-2] != time.Millisecond {
		t.Fatalf("after %d recoveries the window's largest are %v, want 2h (#2) then 1ms: #1 (1h) is out", maxRecoveries+1, s[len(s)-2:])
	}
}
