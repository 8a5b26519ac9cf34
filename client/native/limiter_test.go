//go:build !js

package native

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestNewHandshakeLimiterRefusesTheInvalid(t *testing.T) {
	for _, l := range []HandshakeLimits{
		{},
		{PerSecond: -1},
		{PerSecond: math.NaN()},
		{PerSecond: math.Inf(1)},
		{PerSecond: 10, PerTenantPerSecond: -1},
		{PerSecond: 10, PerTenantPerSecond: math.NaN()},
		{PerSecond: 10, MaxWaiters: -1},
	} {
		hl, err := NewHandshakeLimiter(l)
		var oe *OptionError
		if hl != nil || !errors.Is(err, ErrInvalidOptions) || !errors.As(err, &oe) {
			t.Fatalf("%+v: %v, %v", l, hl, err)
		}
	}
	if _, err := NewHandshakeLimiter(HandshakeLimits{PerSecond: 10}); err != nil {
		t.Fatalf("zero per tenant and zero waiters are values: %v", err)
	}
}

// grants runs n Waits at once for the tenants in turn and returns when
// each was granted, measured from the start (the bubble's fake clock).
func grants(t *testing.T, hl *HandshakeLimiter, tenants []string, n int) (map[string][]time.Duration, []error) {
	t.Helper()
	start := time.Now()
	var mu sync.Mutex
	got := map[string][]time.Duration{}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		tn := tenants[i%len(tenants)]
		wg.Go(func() {
			if errs[i] = hl.Wait(context.Background(), tn); errs[i] == nil {
				mu.Lock()
				got[tn] = append(got[tn], time.Since(start))
				mu.Unlock()
			}
		})
		synctest.Wait() // asked in this order
	}
	wg.Wait()
	return got, errs
}

// Slots are spaced at the global rate, and within a tenant at its own.
func TestTheHandshakeLimiterSpacesSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hl, err := NewHandshakeLimiter(HandshakeLimits{PerSecond: 5, MaxWaiters: 100})
		if err != nil {
			t.Fatal(err)
		}
		got, errs := grants(t, hl, []string{""}, 10)
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for i, d := range got[""] {
			if want := time.Duration(i) * 200 * time.Millisecond; d != want {
				t.Fatalf("slot %d at %v, want %v: %v", i, d, want, got[""])
			}
		}

		// 100/s in all, 2/s per tenant: a's slots 500 ms apart, b's too,
		// and never two at the same instant.
		hl, _ = NewHandshakeLimiter(HandshakeLimits{PerSecond: 100, PerTenantPerSecond: 2, MaxWaiters: 100})
		got, _ = grants(t, hl, []string{"a", "b"}, 8)
		for _, tn := range []string{"a", "b"} {
			if len(got[tn]) != 4 {
				t.Fatalf("%s: %v", tn, got[tn])
			}
			for i := 1; i < len(got[tn]); i++ {
				if gap := got[tn][i] - got[tn][i-1]; gap < 500*time.Millisecond {
					t.Fatalf("%s's slots %v apart: %v", tn, gap, got[tn])
				}
			}
		}

		// A tenant at its own ceiling does not hold the others back: a's
		// three asks come first, b's first slot is the next free one, not
		// one after a's last, and b's others fill the gaps between a's.
		hl, _ = NewHandshakeLimiter(HandshakeLimits{PerSecond: 10, PerTenantPerSecond: 1, MaxWaiters: 100})
		got, _ = grants(t, hl, []string{"a", "a", "a", "b", "b", "b"}, 6)
		want := map[string][]time.Duration{"a": {0, time.Second, 2 * time.Second}, "b": {100 * time.Millisecond, 1100 * time.Millisecond, 2100 * time.Millisecond}}
		for tn, w := range want {
			if len(got[tn]) != len(w) {
				t.Fatalf("%s: %v, want %v", tn, got[tn], w)
			}
			for i := range w {
				if got[tn][i] != w[i] {
					t.Fatalf("%s: %v, want %v", tn, got[tn], w)
				}
			}
		}
	})
}

// At most MaxWaiters wait; one more fails at once with
// ErrHandshakeLimited. A waiter whose context ends stops waiting and gives
// its slot back; one whose deadline comes before its slot takes none.
func TestTheHandshakeLimiterBoundsItsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hl, _ := NewHandshakeLimiter(HandshakeLimits{PerSecond: 1, MaxWaiters: 2})
		if err := hl.Wait(context.Background(), ""); err != nil {
			t.Fatal(err) // the free slot: at once
		}
		var cancels [2]context.CancelFunc
		errs := make(chan error, 2)
		for i := range 2 {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancels[i] = cancel
			go func() { errs <- hl.Wait(ctx, "") }()
			synctest.Wait()
		}
		if n := hl.Waiting(); n != 2 {
			t.Fatalf("%d waiting", n)
		}
		start := time.Now()
		if err := hl.Wait(context.Background(), ""); !errors.Is(err, ErrHandshakeLimited) || time.Since(start) != 0 {
			t.Fatalf("a third waiter: %v after %v", err, time.Since(start))
		}
		// The earlier first: a slot is given back wherever it stands.
		for i := range 2 {
			cancels[i]()
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Fatalf("a cancelled waiter: %v", err)
			}
		}
		if n := hl.Waiting(); n != 0 {
			t.Fatalf("%d waiting after the cancel", n)
		}
		// Both slots were given back: the next is 1 s after the first.
		dctx, dcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer dcancel()
		if err := hl.Wait(dctx, ""); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Fatalf("a slot after the deadline: %v after %v", err, time.Since(start))
		}
		if err := hl.Wait(context.Background(), ""); err != nil || time.Since(start) != time.Second {
			t.Fatalf("the next slot: %v after %v, want 1s", err, time.Since(start))
		}
		// MaxWaiters 0: none waits.
		none, _ := NewHandshakeLimiter(HandshakeLimits{PerSecond: 1})
		if err := none.Wait(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if err := none.Wait(context.Background(), ""); !errors.Is(err, ErrHandshakeLimited) {
			t.Fatalf("MaxWaiters 0: %v", err)
		}
	})
}
