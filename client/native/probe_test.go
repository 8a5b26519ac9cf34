//go:build !js

package native

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/server"
)

// readyWatch records when a client last left READY.
type readyWatch struct {
	mu   sync.Mutex
	left []time.Time
}

func (w *readyWatch) state(s client.State) {
	if !s.Ready {
		w.mu.Lock()
		w.left = append(w.left, time.Now())
		w.mu.Unlock()
	}
}

func (w *readyWatch) leftAfter(t time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.left {
		if !l.Before(t) {
			return l.Sub(t), true
		}
	}
	return 0, false
}

func probeClient(t *testing.T, url string, seed uint64, w *readyWatch) *Client {
	t.Helper()
	cfg := client.MustStage(6)
	cfg.Rand = rand.New(rand.NewPCG(seed, 6)).Float64
	cfg.Policy = client.FullJitter{Base: 100 * time.Millisecond, Cap: 500 * time.Millisecond}
	c, err := Dial(context.Background(), url, &Options{Config: cfg, OnState: w.state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Issue 14's freeze detection at 1 s pings, over freezes that start at
// random phases of the ping cycle: 5 clients connected at different times,
// 4 freezes each after a random pause, 20 detections. The goal is a median
// at or under 1.1 s and the worst at or under 1.6 s; CI asserts 1.25 s and
// 1.9 s (a shared machine, -race) and logs what it measured.
func TestProbeDetectsAFreezeWithinAnIntervalAndAHalf(t *testing.T) {
	srv, url := topicServer(t, server.Options{PingInterval: time.Second})
	rnd := rand.New(rand.NewPCG(14, 1))
	const clients, freezes = 5, 4
	watches := make([]*readyWatch, clients)
	cls := make([]*Client, clients)
	for i := range clients {
		watches[i] = &readyWatch{}
		cls[i] = probeClient(t, url, uint64(i), watches[i])
		time.Sleep(time.Duration(rnd.Int64N(int64(time.Second)))) // each its own ping phase
	}
	allReady := func() bool {
		for _, c := range cls {
			if !c.State().Ready {
				return false
			}
		}
		return true
	}
	var samples []time.Duration
	for f := range freezes {
		if err := eventually(10*time.Second, allReady); err != nil {
			t.Fatalf("freeze %d: clients not READY", f)
		}
		time.Sleep(1500*time.Millisecond + time.Duration(rnd.Int64N(int64(time.Second))))
		start := time.Now()
		srv.Set("freeze", true)
		err := eventually(4*time.Second, func() bool {
			for _, w := range watches {
				if _, ok := w.leftAfter(start); !ok {
					return false
				}
			}
			return true
		})
		srv.Set("freeze", false)
		if err != nil {
			t.Fatalf("freeze %d: not every client noticed within 4 s", f)
		}
		for _, w := range watches {
			d, _ := w.leftAfter(start)
			samples = append(samples, d)
		}
	}
	slices.Sort(samples)
	median, worst := samples[len(samples)/2], samples[len(samples)-1]
	t.Logf("%d freezes at 1 s pings: median %v, worst %v, best %v", len(samples), median.Round(time.Millisecond), worst.Round(time.Millisecond), samples[0].Round(time.Millisecond))
	if median > 1250*time.Millisecond || worst > 1900*time.Millisecond {
		t.Fatalf("detection median %v worst %v; goal 1.1 s and 1.6 s", median, worst)
	}
	probes := 0
	for _, c := range cls {
		probes += c.Stats().Probes
	}
	if probes < len(samples) {
		t.Fatalf("%d probes for %d detections: the probe did not do it", probes, len(samples))
	}
}

// Zero false kills: with the server's pings delayed by a random 0-800 ms
// (the Jitter switch), stage 6 clients never leave READY. The run
// is 5 minutes (make jitter sets WSREADY_LONG=1); CI runs 20 s.
func TestJitteryPingsNeverKillAHealthyConnection(t *testing.T) {
	srv, url := topicServer(t, server.Options{PingInterval: time.Second})
	const clients = 5
	watches := make([]*readyWatch, clients)
	cls := make([]*Client, clients)
	for i := range clients {
		watches[i] = &readyWatch{}
		cls[i] = probeClient(t, url, uint64(100+i), watches[i])
	}
	if err := eventually(10*time.Second, func() bool {
		for _, c := range cls {
			if !c.State().Ready {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal("clients not READY")
	}
	d := 20 * time.Second
	if os.Getenv("WSREADY_LONG") != "" {
		d = 5 * time.Minute
	}
	start := time.Now()
	srv.Set("jitter", true)
	time.Sleep(d)
	srv.Set("jitter", false)
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
	t.Logf("%v of 0-800 ms ping jitter at 1 s pings, %d clients: %d probes, %d answered, no client left READY", d, clients, probes, answered)
	if probes == 0 {
		t.Error("no probe in all that jitter: the test proved nothing")
	}
}
