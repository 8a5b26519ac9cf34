//go:build !js

package native

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/server"
)

// handshakeLog is the server's side of the count: when each upgrade
// arrived, per tenant (the URL's query names it; the server ignores it).
type handshakeLog struct {
	mu  sync.Mutex
	all []time.Time
	per map[string][]time.Time
}

func (l *handshakeLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			now := time.Now()
			l.mu.Lock()
			l.all = append(l.all, now)
			tn := r.URL.Query().Get("tenant")
			l.per[tn] = append(l.per[tn], now)
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// check fails t if the handshakes logged exceed the limiter's rate, in
// all or for a tenant: on average over the run (the first to the last
// arrival), within 10%, and in any one second, within 50%. The limiter
// spaces them exactly (TestTheHandshakeLimiterSpacesSlots, on a fake
// clock); between it and the server's count are the network, the
// kernel's accept queue and two schedulers on a machine that may be
// loaded, which can bunch arrivals, never add to them. Without the
// limiter the whole fleet comes back within its first backoff (1 s).
// Called with l.mu held.
func (l *handshakeLog) check(t *testing.T, phase string, rate, tenantRate float64, tenants []string) {
	t.Helper()
	one := func(what string, ts []time.Time, rate float64) {
		t.Helper()
		if len(ts) < 2 {
			return
		}
		ts = sortedTimes(ts)
		span := ts[len(ts)-1].Sub(ts[0]).Seconds()
		avg := float64(len(ts)-1) / span
		most := mostInASecond(ts)
		t.Logf("%s, %s: %d handshakes over %.2fs, %.0f/s on average, at most %d in one second (limit %v/s)", phase, what, len(ts), span, avg, most, rate)
		if avg > rate*1.1 || float64(most) > rate*1.5+2 {
			t.Errorf("%s, %s: %.0f/s on average, %d in one second: the limiter allows %v/s", phase, what, avg, most, rate)
		}
	}
	one("all", l.all, rate)
	for _, tn := range tenants {
		one("tenant "+tn, l.per[tn], tenantRate)
	}
}

func sortedTimes(ts []time.Time) []time.Time {
	ts = append([]time.Time(nil), ts...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts
}

// mostInASecond is the most instants in any window of one second.
func mostInASecond(ts []time.Time) int {
	ts = sortedTimes(ts)
	most, i := 0, 0
	for j := range ts {
		for ts[j].Sub(ts[i]) >= time.Second {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// serveOn starts a server on ln (the real server, its handshake ceilings
// out of the way: the limiter under test is the client's) behind log.
func serveOn(t *testing.T, ln net.Listener, log *handshakeLog) (*server.Server, func()) {
	t.Helper()
	srv, err := server.New(&server.Options{
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		AdmitRate: 1e6, AdmitBurst: 1e6, TenantRate: 1e6, TenantBurst: 1e6, MaxConnsPerIP: 10000,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: log.wrap(srv.Handler())}
	served := make(chan struct{})
	go func() { defer close(served); hs.Serve(ln) }()
	return srv, func() { srv.Close(); hs.Close(); <-served }
}

// 2,000 sessions in one process share a HandshakeLimiter; the server they
// use restarts (a real server on loopback, closed, and a new one on the
// same port). Counted at the new server, their handshakes never exceed
// the limiter's rate in any second, in all or per tenant, and every
// session is READY again. Sessions with a short reconnect window whose
// slot comes too late give up at their window's end, waiting or not: the
// limiter never holds a session past its deadline.
func TestAFleetBehindOneLimiterAfterAServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 clients")
	}
	n := 2000
	if raceEnabled {
		n = 500 // the race detector's bound on live goroutines
	}
	rate := float64(n) / 2 // every session back in about 2 s
	tenantRate := rate * 0.3
	tenants := []string{"a", "b", "c", "d"}
	const window = 1200 * time.Millisecond
	windowed := func(i int) bool { return i%10 == 0 } // a tenth of them

	hl, err := NewHandshakeLimiter(HandshakeLimits{PerSecond: rate, PerTenantPerSecond: tenantRate, MaxWaiters: n})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	first := &handshakeLog{per: map[string][]time.Time{}}
	_, stopFirst := serveOn(t, ln, first)

	clients := make([]*Client, n)
	var endMu sync.Mutex
	ended := map[int]time.Time{} // windowed sessions: when they ended
	defer func() {
		var wg sync.WaitGroup
		for _, c := range clients {
			if c != nil {
				wg.Go(func() { c.Close() })
			}
		}
		wg.Wait()
	}()
	for i := range n {
		cfg := new(Config)
		if windowed(i) {
			cfg.Window = window
		}
		tn := tenants[i%len(tenants)]
		o := &Options{Config: cfg, Handshakes: hl, Tenant: tn}
		if windowed(i) {
			o.OnState = func(s State) {
				if s.Ended != client.NotEnded {
					endMu.Lock()
					if _, ok := ended[i]; !ok {
						ended[i] = time.Now()
					}
					endMu.Unlock()
				}
			}
		}
		c, err := Dial(context.Background(), "ws://"+addr+"/ws?tenant="+tn, o)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	ready := func(phase string, skip func(int) bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for i, c := range clients {
			if skip != nil && skip(i) {
				continue
			}
			if err := c.WaitReady(ctx); err != nil {
				t.Fatalf("%s: session %d: %v", phase, i, err)
			}
		}
	}
	ready("first connect", nil)
	first.mu.Lock()
	first.check(t, "first connect", rate, tenantRate, tenants)
	first.mu.Unlock()

	// The restart: every connection closed (1001), then a new server on the
	// same port.
	stopFirst()
	restart := time.Now()
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	second := &handshakeLog{per: map[string][]time.Time{}}
	srv, stopSecond := serveOn(t, ln, second)
	defer stopSecond()
	ready("after the restart", windowed)

	second.mu.Lock()
	all := second.all
	second.mu.Unlock()
	t.Logf("%d sessions, limiter %v/s (%v/s per tenant): %d handshakes at the new server in %v after the restart; the server counted %d",
		n, rate, tenantRate, len(all), all[len(all)-1].Sub(restart).Round(time.Millisecond), srv.Stats().Handshakes)
	second.check(t, "after the restart", rate, tenantRate, tenants)
	if h := srv.Stats().Handshakes; h < uint64(n-n/10) {
		t.Fatalf("the server counted %d handshakes, want at least the %d unwindowed sessions", h, n-n/10)
	}

	// The windowed sessions: READY again, or gave up by their window's
	// end (measured from the restart, a little before each saw its loss).
	gaveUp := 0
	for i, c := range clients {
		if !windowed(i) {
			continue
		}
		err := eventually(5*time.Second, func() bool {
			s := c.State()
			return s.Ready || s.Ended != client.NotEnded
		})
		if err != nil {
			t.Fatalf("windowed session %d neither READY nor ended: %+v", i, c.State())
		}
		if s := c.State(); s.Ended != client.NotEnded {
			if s.Ended != client.GaveUp {
				t.Fatalf("windowed session %d ended %s", i, s.Ended)
			}
			endMu.Lock()
			at := ended[i]
			endMu.Unlock()
			if late := at.Sub(restart) - window; late > 500*time.Millisecond {
				t.Fatalf("windowed session %d gave up %v after its window", i, late)
			}
			var ee *EndedError
			if err := c.WaitReady(context.Background()); !errors.As(err, &ee) {
				t.Fatalf("windowed session %d: WaitReady %v", i, err)
			}
			gaveUp++
		}
	}
	t.Logf("%d of %d windowed sessions gave up at their window (%v), the rest were READY in it", gaveUp, n/10, window)
	if hl.Waiting() != 0 {
		t.Fatalf("%d dials still waiting", hl.Waiting())
	}
}
