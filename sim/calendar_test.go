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

// A client has at most one pending attempt: scheduling it again before
// its attempt is taken is a bug in the caller, and the calendar says so
// instead of threading the client into two slots.
func TestCalendarRefusesASecondPendingAttempt(t *testing.T) {
	for _, second := range []time.Duration{time.Second, 100 * time.Second} { // in the wheel, in the far heap
		cal := newCalendar(time.Hour, 3)
		cal.at(200*time.Second, 1)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("a second attempt at %v was accepted", second)
				}
			}()
			cal.at(second, 1)
		}()
	}
	// Once taken, the client may be scheduled again, at the same instant.
	cal := newCalendar(time.Hour, 3)
	cal.at(time.Second, 2)
	ms, i, ok := cal.pop()
	if !ok || ms != 1000 || i != 2 {
		t.Fatalf("pop: %d %d %v", ms, i, ok)
	}
	cal.at(time.Second, 2)
	if ms, i, ok := cal.pop(); !ok || ms != 1000 || i != 2 {
		t.Fatalf("pop after rescheduling: %d %d %v", ms, i, ok)
	}
}

// The calendar ends once nothing is pending, and while the wheel is empty
// it moves straight to the millisecond a far attempt comes into range:
// the attempts still come out at their own milliseconds and in order.
func TestCalendarSkipsEmptyStretches(t *testing.T) {
	cal := newCalendar(24*time.Hour, 4)
	cal.at(23*time.Hour, 0)
	cal.at(5*time.Hour, 1)
	cal.at(5*time.Hour, 3)
	cal.at(1500*time.Millisecond, 2)
	var got []int64
	var who []int32
	for {
		ms, i, ok := cal.pop()
		if !ok {
			break
		}
		got, who = append(got, ms), append(who, i)
		if i == 2 && ms < 10_000 {
			cal.at(time.Duration(ms)*time.Millisecond+10*time.Hour, 2) // far again, from now
		}
	}
	want := []int64{1500, 5 * 3600_000, 5 * 3600_000, 1500 + 10*3600_000, 23 * 3600_000}
	if !slices.Equal(got, want) || !slices.Equal(who, []int32{2, 1, 3, 2, 0}) {
		t.Fatalf("took %v (clients %v), want %v (2 1 3 2 0)", got, who, want)
	}
	if cal.now != cal.horizon || cal.pending != 0 || len(cal.far) != 0 {
		t.Fatalf("after the last attempt: now %d of %d, %d pending, %d far", cal.now, cal.horizon, cal.pending, len(cal.far))
	}
}
