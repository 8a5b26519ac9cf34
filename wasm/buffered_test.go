//go:build js && wasm

package main

import (
	"testing"
	"time"

	"github.com/wsready/wsready/internal/stages"
)

// After a send the core hears how many bytes the socket holds; while some
// socket holds any, a 250 ms poll runs and reports again; once none does,
// the poll's timer is cleared. Before stage 8 nothing is watched.
func TestBufferedIsReportedAndPolledOnlyWhileNonZero(t *testing.T) {
	for _, stage := range []int{7, 8} {
		cfg, err := stages.Config(stage, func() float64 { return 0 })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Topic = "feed" // a subscribe goes out on open
		d := testDriver(t, cfg)
		var f *fakeTransport
		d.open = func(spec dialSpec, ev socketEvents) (transport, error) {
			f = &fakeTransport{url: spec.url, ev: ev, spec: spec, held: 120}
			return f, nil
		}
		now := time.Unix(1000, 0)
		run := d.runAt(&now)
		d.core.Start(now)
		run()
		f.ev.opened()
		run()
		if f.sent == 0 {
			t.Fatalf("stage %d: nothing sent on open", stage)
		}
		running := !d.buf.timer.IsUndefined()
		if stage == 7 {
			if running || len(d.buf.ids) != 0 {
				t.Fatalf("stage 7 watches sends: running %v, %d sockets", running, len(d.buf.ids))
			}
			continue
		}
		if !running || !d.buf.ids[1] {
			t.Fatalf("stage 8 after a send holding 120 bytes: poll running %v, watched %v", running, d.buf.ids)
		}
		// The poll fires (its step is queued) and the bytes drained. Wait
		// for the step itself: a sleep of two polls lost to a loaded
		// machine, where the interval's callback and the sleep's end come
		// due together and the test could run before the callback had
		// queued the step. Nothing else pushes here (the fakes are
		// synchronous), so a signal on Ready is the poll's; a stale one
		// from the steps run above is drained first (no JS callback runs
		// in between: the test does not yield). 10 s only bounds a poll
		// that never fires.
		select {
		case <-d.q.Ready():
		default:
		}
		select {
		case <-d.q.Ready():
		case <-time.After(10 * time.Second):
			t.Fatal("stage 8: the poll's step not queued within 10 s while a socket held bytes")
		}
		f.held = 0
		run()
		if !d.buf.timer.IsUndefined() || len(d.buf.ids) != 0 {
			t.Fatalf("after draining: poll running %v, watched %v", !d.buf.timer.IsUndefined(), d.buf.ids)
		}
	}
}
