//go:build !js

package native

import (
	"context"
	"errors"
	"os"
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

// Zero false kills with the feed and requests too: with the server's
// pings delayed by a random 0-800 ms (the Jitter switch), clients at the
// library's defaults subscribed to the feed (an update every 250 ms), each
// sending a request every 700 ms, never leave READY: the probe on the ping
// schedule is answered or put off by the feed, and every request's wait
// ends with its answer. 20 s in CI; make jitter (WSREADY_LONG=1) runs 5
// minutes.
func TestJitteryPingsWithTheFeedAndRequestsKillNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memTopicServer(t, server.Options{PingInterval: time.Second})
		const clients = 3
		watches := make([]*readyWatch, clients)
		cls := make([]*Client, clients)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := range clients {
			watches[i] = &readyWatch{}
			c, err := srv.dial(&Options{OnState: watches[i].state})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cls[i] = c
			if err := c.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			stop, err := c.Subscribe(ctx, "feed", nil, func(Update) {})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
		}
		d := 20 * time.Second
		if os.Getenv("WSREADY_LONG") != "" {
			d = 5 * time.Minute
		}
		// A topic added while READY holds READY until the server takes
		// it: that moment is before start.
		advance(time.Second)
		start := time.Now()
		srv.Set("jitter", true)
		done := make(chan struct{})
		failed := make(chan error, clients)
		for _, c := range cls {
			go func() {
				for {
					select {
					case <-done:
						return
					case <-time.After(700 * time.Millisecond):
					}
					if _, err := c.Request(ctx, "echo", []byte(`{}`)); err != nil {
						failed <- err
						return
					}
				}
			}()
		}
		advance(d)
		close(done)
		srv.Set("jitter", false)
		synctest.Wait()
		select {
		case err := <-failed:
			t.Errorf("a request failed in the jitter: %v", err)
		default:
		}
		probes, answered := 0, 0
		for i, c := range cls {
			if l, ok := watches[i].leftAfter(start); ok {
				t.Errorf("client %d left READY %v into the jitter", i, l)
			}
			st := c.Stats()
			probes += st.Probes
			answered += st.ProbesAnswered
			if st.WatchdogFired != 0 {
				t.Errorf("client %d: watchdog fired %d times", i, st.WatchdogFired)
			}
		}
		t.Logf("%v of 0-800 ms ping jitter at 1 s pings, %d clients on the feed, a request each every 700 ms: %d probes, %d answered, no client left READY", d, clients, probes, answered)
	})
}
