package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The wheel and its far heap give exactly the order of the plain
// bucket-per-millisecond calendar, including delays past the wheel's range
// and events scheduled for the millisecond being processed.
func TestCalendarMatchesABucketPerMillisecond(t *testing.T) {
	const horizon = 400 * time.Second
	delay := func(rng *rand.Rand) time.Duration {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return time.Duration(rng.IntN(1000)) * time.Millisecond
		default:
			return time.Duration(rng.Int64N(int64(200 * time.Second)))
		}
	}
	// The reference: one bucket per millisecond of the horizon.
	var want []int32
	{
		rng := rand.New(rand.NewPCG(5, 6))
		buckets := make([][]int32, horizon.Milliseconds())
		at := func(t time.Duration, i int32) {
			if ms := t.Milliseconds(); ms < int64(len(buckets)) {
				buckets[ms] = append(buckets[ms], i)
			}
		}
		for i := range int32(2000) {
			at(delay(rng), i)
		}
		for ms := range buckets {
			for j := 0; j < len(buckets[ms]); j++ {
				i := buckets[ms][j]
				want = append(want, i)
				if rng.IntN(3) > 0 {
					at(time.Duration(ms)*time.Millisecond+delay(rng), i)
				}
			}
		}
	}
	var got []int32
	{
		rng := rand.New(rand.NewPCG(5, 6))
		cal := newCalendar(horizon, 2000)
		for i := range int32(2000) {
			cal.at(delay(rng), i)
		}
		for {
			ms, i, ok := cal.pop()
			if !ok {
				break
			}
			got = append(got, i)
			if rng.IntN(3) > 0 {
				cal.at(time.Duration(ms)*time.Millisecond+delay(rng), i)
			}
		}
	}
	if len(want) < 5000 || !slices.Equal(got, want) {
		t.Fatalf("order differs: %d events vs %d in the reference", len(got), len(want))
	}
}
