//go:build !js

package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// The sweep pings only what is silent: a peer that sends a message every
// quarter interval is never pinged, and a silent one that answers the pings
// (a browser at stage 0 or 1, which sends nothing of its own) is pinged
// every other tick, its pong being what it was heard from. Both stay open.
// Before the rule every connection was pinged every tick.
func TestSweepPingsOnlyPeersItHasNotHeardFrom(t *testing.T) {
	const interval, grace = 100 * time.Millisecond, 50 * time.Millisecond
	f := newFixture(t, &Options{SweepInterval: interval, SweepGrace: grace, PingInterval: time.Hour})
	dial := func(pings *atomic.Int64) *websocket.Conn {
		ws, _, err := websocket.Dial(context.Background(), f.url, &websocket.DialOptions{
			OnPingReceived: func(context.Context, []byte) bool { pings.Add(1); return true },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { // reads (and so answers pings) until the cleanup
			defer close(done)
			for {
				if _, _, err := ws.Read(ctx); err != nil {
					return
				}
			}
		}()
		t.Cleanup(func() { cancel(); ws.CloseNow(); <-done })
		return ws
	}
	var silentPings, talkerPings atomic.Int64
	dial(&silentPings)
	talker := dial(&talkerPings)
	waitFor(t, time.Second, "both registered", func() bool { return f.srv.Stats().Open == 2 })

	start := time.Now()
	probe := protocol.Encode(protocol.Message{Type: protocol.TypeProbe, ID: 1})
	for time.Since(start) < 3*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := talker.Write(ctx, websocket.MessageText, probe)
		cancel()
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		serverTimersRun(interval / 4) // the peer talks within the sweep's interval
	}
	ticks := float64(time.Since(start) / interval)
	silent, talked := float64(silentPings.Load()), talkerPings.Load()
	t.Logf("%.0f ticks: the silent peer was pinged %.0f times, the talker %d", ticks, silent, talked)
	if silent < ticks*0.3 || silent > ticks*0.65 {
		t.Errorf("the silent peer was pinged %.0f times in %.0f ticks: want about every other tick", silent, ticks)
	}
	// The first tick may find the talker not yet heard from; a loaded
	// machine may stretch one gap between its messages past a tick.
	if talked > 3 {
		t.Errorf("a peer that sends every quarter interval was pinged %d times in %.0f ticks", talked, ticks)
	}
	if st := f.srv.Stats(); st.Open != 2 || st.Limits.SweepClosed != 0 {
		t.Fatalf("open %d, swept %d: a live peer was swept", st.Open, st.Limits.SweepClosed)
	}
}

// A peer that keeps sending but never answers a ping (its client never
// reads) is alive; once it falls silent it is closed 2 to 3 intervals plus
// the grace after the last frame the server read from it (the bound in
// Options.SweepInterval), at once, without a close handshake.
func TestSweepClosesAPeerThatFallsSilentWithinTheBound(t *testing.T) {
	const interval, grace = 200 * time.Millisecond, 100 * time.Millisecond
	f := newFixture(t, &Options{SweepInterval: interval, SweepGrace: grace})
	ws, _, err := rawDial(t, f.url, "") // never reads: answers no ping
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "registered", func() bool { return f.srv.Stats().Open == 1 })
	probe := protocol.Encode(protocol.Message{Type: protocol.TypeProbe, ID: 1})
	var last time.Time
	// Six intervals of messages: longer than the most a peer that never
	// answers may live (3 intervals plus the grace).
	for start := time.Now(); time.Since(start) < 6*interval; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := ws.Write(ctx, websocket.MessageText, probe)
		cancel()
		if err != nil {
			t.Fatalf("write after %v: %v", time.Since(start), err)
		}
		last = time.Now()
		serverTimersRun(interval / 4) // the peer talks within the sweep's interval
	}
	if st := f.srv.Stats(); st.Open != 1 || st.Limits.SweepClosed != 0 {
		t.Fatalf("open %d, swept %d: a peer that sends was swept for not answering pings", st.Open, st.Limits.SweepClosed)
	}
	waitFor(t, 3*time.Second, "the silent peer swept", func() bool { return f.srv.Stats().Open == 0 })
	took := time.Since(last)
	lo, hi := 2*interval+grace, 3*interval+grace
	if took < lo*9/10 || took > hi*11/10+50*time.Millisecond {
		t.Fatalf("swept %v after the last frame, want between %v and %v", took, lo, hi)
	}
	if n := f.srv.Stats().Limits.SweepClosed; n != 1 {
		t.Fatalf("sweepClosed %d", n)
	}
}
