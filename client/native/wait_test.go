//go:build !js

package native

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/server"
)

// At production heartbeats (25 s pings) a request sent into a connection
// that went silent (the Freeze switch: the socket open, nothing carried
// either way) fails with ConnectionClosed within 2.5 s, not after the
// 37.5 s the ping schedule takes: nothing heard for 500 ms, the client
// probes, and gives up 1.5 s later (client/heartbeat.go). Once the server
// carries frames again the client is READY on a new connection. A client
// at the library's defaults (stage 8), in a synctest bubble: fake time.
func TestARequestIntoASilentConnectionAt25sPingsFailsWithin2500ms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memTopicServer(t, server.Options{PingInterval: 25 * time.Second})
		c, err := srv.dial(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		// A healthy connection: a request answered at once costs no probe.
		if _, err := c.Request(ctx, "echo", []byte(`{}`)); err != nil {
			t.Fatalf("echo on a healthy connection: %v", err)
		}
		advance(5 * time.Second)
		if n := c.Stats().Probes; n != 0 {
			t.Fatalf("%d probes on a healthy connection with an answered request", n)
		}
		srv.Set("freeze", true)
		advance(3 * time.Second)
		start := time.Now()
		_, err = c.Request(ctx, "echo", []byte(`{}`))
		took := time.Since(start)
		if !errors.Is(err, client.ErrConnectionClosed) || took > 2500*time.Millisecond {
			t.Fatalf("a request into the silent connection: %v after %v; want ConnectionClosed within 2.5 s", err, took)
		}
		t.Logf("the request failed with %v after %v", err, took)
		if st := c.Stats(); st.Probes != 1 || st.WatchdogFired != 1 {
			t.Fatalf("stats %+v: want one probe, given up", st)
		}
		srv.Set("freeze", false)
		if err := c.WaitReady(ctx); err != nil {
			t.Fatalf("not READY again once the server carries frames: %v", err)
		}
		if _, err := c.Request(ctx, "echo", []byte(`{}`)); err != nil {
			t.Fatalf("echo after the recovery: %v", err)
		}
	})
}
