//go:build js && wasm

package main

import (
	"math"
	"testing"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/internal/bridge"
)

// A NaN ticket names no request: cancels that carry one are not kept as
// early aborts. (Kept in a float64-keyed map, a NaN key is never found
// again, so each such cancel held one of maxAborted's slots for good, and
// past maxAborted a real early abort was forgotten and its request sent.)
func TestNaNTicketsTakeNoAbortSlot(t *testing.T) {
	noNetwork(t)
	o, err := bridge.ParseOptions(fakeGetter{"url": "ws://127.0.0.1:1/ws", "tabs": false})
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDriver(o, callbacks{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	nan, err := safejs.ValueOf(math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		d.method(mCancel, []safejs.Value{nan})
	}
	got := make(chan int, 1)
	d.q.Push(func(time.Time) { got <- len(d.aborted) })
	select {
	case n := <-got:
		if n != 0 {
			t.Fatalf("%d early aborts kept for NaN tickets, want 0", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the driver's loop did not run the step")
	}
}
