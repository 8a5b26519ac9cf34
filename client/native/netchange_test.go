//go:build !js

package native

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsready/wsready/server"
)

// A program that knows the network changed calls NetworkChanged, and a
// connection that died with the old network (the real server, frozen: it
// carries nothing either way) is found within the probe's timeout, a
// quarter of the 10 s ping interval, not 1.25 intervals and a timeout
// (15 s) later; a live one is kept. On fake time (synctest).
func TestNativeNetworkChangedFindsADeadConnectionAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memTopicServer(t, server.Options{PingInterval: 10 * time.Second})
		c, err := srv.dial(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		// Live: the probe is answered, the connection kept.
		c.NetworkChanged()
		advance(3 * time.Second)
		if s := c.State(); !s.Ready || s.Epoch != 1 {
			t.Fatalf("a live connection after the change: %+v", s)
		}
		if st := c.Stats(); st.Probes != 1 || st.ProbesAnswered != 1 {
			t.Fatalf("probes %d, answered %d", st.Probes, st.ProbesAnswered)
		}
		// Dead: the server freezes, the program hears of a change.
		srv.Set("freeze", true)
		start := time.Now()
		c.NetworkChanged()
		wctx, wcancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer wcancel()
		if err := c.WaitState(wctx, func(s State) bool { return !s.Ready }); err != nil {
			t.Fatalf("still READY 15 s after the change: %v", err)
		}
		if took := time.Since(start); took > 2500*time.Millisecond {
			t.Fatalf("the dead connection was found %v after the change, want within the probe's 2.5s", took)
		}
		srv.Set("freeze", false)
	})
}
