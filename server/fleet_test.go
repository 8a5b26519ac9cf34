//go:build !js

package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// closeOf dials and reads until the server closes; it returns the close.
func closeOf(t *testing.T, url string, hdr http.Header) websocket.CloseError {
	t.Helper()
	ws, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("not closed by the server: %v", err)
			}
			return ce
		}
	}
}

// Over the handshake ceiling: 429 with Retry-After for RefuseHTTP; an
// accepted upgrade closed with 1013 and retry-after-ms for RefuseClose. The
// operator's probe gets through on its reserved share.
func TestAdmissionCeilingAndProbe(t *testing.T) {
	h := newFixture(t, &Options{AdmitRate: 1, AdmitBurst: 1, RefuseWith: RefuseHTTP, ProbeKey: "op-secret"})
	h.dial() // the one token
	_, resp, err := websocket.Dial(context.Background(), h.url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the ceiling (http): %v %+v", err, resp)
	}
	probe := http.Header{probeHeader: {"op-secret"}}
	ws, _, err := websocket.Dial(context.Background(), h.url, &websocket.DialOptions{HTTPHeader: probe})
	if err != nil {
		t.Fatalf("the probe was refused: %v", err)
	}
	ws.CloseNow()
	wrong := http.Header{probeHeader: {"guess"}}
	if _, resp, err := websocket.Dial(context.Background(), h.url, &websocket.DialOptions{HTTPHeader: wrong}); err == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a wrong probe key got in: %v", err)
	}

	c := newFixture(t, &Options{AdmitRate: 1, AdmitBurst: 1})
	c.dial()
	ce := closeOf(t, c.url, nil)
	d, ok := protocol.ParseRetryAfter(ce.Reason)
	if ce.Code != protocol.CloseTryAgainLater || !ok || d <= 0 {
		t.Fatalf("over the ceiling (close): %d %q", ce.Code, ce.Reason)
	}
	if n := c.srv.Stats().Limits.RefusedRate; n != 1 {
		t.Fatalf("refusedRate %d", n)
	}
}

// Restart closes every connection with its own reconnect slot: slots start
// when the server accepts again and are spread at 90% of the admission rate.
func TestRestartHandsOutSpreadSlots(t *testing.T) {
	f := newFixture(t, &Options{AdmitRate: 100, AdmitBurst: 100, TenantRate: 1000, TenantBurst: 1000}, DemoOptions{RestartDowntime: 2 * time.Second})
	var peers []*peer
	for range 50 {
		peers = append(peers, f.dial())
	}
	start := time.Now()
	f.set("restart", true)
	var slots []time.Duration
	for _, p := range peers {
		select {
		case err := <-p.closed:
			p.closed <- err
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != protocol.CloseServiceRestart {
				t.Fatalf("closed with %v", err)
			}
			d, ok := protocol.ParseRetryAfter(ce.Reason)
			if !ok {
				t.Fatalf("no slot in %q", ce.Reason)
			}
			slots = append(slots, d)
		case <-time.After(3 * time.Second):
			t.Fatal("not closed")
		}
	}
	_ = start
	sort.Slice(slots, func(i, j int) bool { return slots[i] < slots[j] })
	if slots[0] < 1900*time.Millisecond {
		t.Fatalf("earliest slot %v, before the 2 s downtime ends", slots[0])
	}
	// 50 slots at 90 per second span about 0.55 s: never more than 90 in a second.
	if span := slots[len(slots)-1] - slots[0]; span < 450*time.Millisecond || span > 800*time.Millisecond {
		t.Fatalf("slots span %v, want about 0.55 s", span)
	}
}

// A client that completed its handshake and never reads (nor sends) is
// closed by the sweep one interval plus the grace after the first sweep
// ping, which goes out at the server's next sweep tick (the sweep is one
// ticker for all): between 1 and 2 intervals plus the grace after it
// connected.
func TestSweepClosesAPeerThatNeverAnswers(t *testing.T) {
	const interval, grace = 200 * time.Millisecond, 100 * time.Millisecond
	f := newFixture(t, &Options{SweepInterval: interval, SweepGrace: grace})
	alive := f.dial() // reads, so its client answers pings
	ws, _, err := rawDial(t, f.url, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = ws // never read: no pong ever
	start := time.Now()
	waitFor(t, time.Second, "the silent peer registered", func() bool { return f.srv.Stats().Open == 2 })
	waitFor(t, 3*time.Second, "the silent peer swept", func() bool { return f.srv.Stats().Open == 1 })
	took := time.Since(start)
	lo, hi := interval+grace, 2*interval+grace
	if took < lo*9/10 || took > hi*11/10+50*time.Millisecond {
		t.Fatalf("swept after %v, want between %v and %v", took, lo, hi)
	}
	if n := f.srv.Stats().Limits.SweepClosed; n != 1 {
		t.Fatalf("sweepClosed %d", n)
	}
	alive.next(protocol.TypePing, time.Second)
	// A frozen connection is not swept: the freeze is not its peer's fault.
	f.set("freeze", true)
	serverTimersRun(4 * (2*interval + grace)) // the point is that the sweep's timers fire and spare it
	if n := f.srv.Stats().Open; n != 1 {
		t.Fatalf("open %d after a freeze longer than the sweep deadline", n)
	}
	f.set("freeze", false)
}

// A drain turns /healthz to 503 at once, refuses new handshakes with a
// slot, closes every connection with 1001 and a slot in batches over the
// window, and (as the demo switch) accepts again after it.
func TestDrainClosesInBatchesWithSlots(t *testing.T) {
	f := newFixture(t, &Options{DrainWindow: time.Second, TenantRate: 1000, TenantBurst: 1000})
	var peers []*peer
	for range 40 {
		peers = append(peers, f.dial())
	}
	done := make(chan struct{})
	start := time.Now()
	go func() { f.srv.Drain(context.Background(), true); close(done) }()
	waitFor(t, time.Second, "draining", func() bool { return getStatus(t, f.hs.URL+"/healthz", "") == http.StatusServiceUnavailable })
	if ce := closeOf(t, f.url, nil); ce.Code != protocol.CloseTryAgainLater {
		t.Fatalf("a handshake during the drain: %d %q", ce.Code, ce.Reason)
	}
	var closedAt []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := <-p.closed
			p.closed <- err
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != protocol.CloseGoingAway {
				t.Errorf("closed with %v", err)
				return
			}
			if d, ok := protocol.ParseRetryAfter(ce.Reason); !ok || time.Since(start)+d < 950*time.Millisecond {
				t.Errorf("slot %q at %v: want one at or after the window's end", ce.Reason, time.Since(start))
			}
			mu.Lock()
			closedAt = append(closedAt, time.Since(start))
			mu.Unlock()
		}()
	}
	wg.Wait()
	<-done
	sort.Slice(closedAt, func(i, j int) bool { return closedAt[i] < closedAt[j] })
	if first, last := closedAt[0], closedAt[len(closedAt)-1]; first > 300*time.Millisecond || last < 700*time.Millisecond || last > 2*time.Second {
		t.Fatalf("closes from %v to %v: want batches spread over the 1 s window", first, last)
	}
	if code := getStatus(t, f.hs.URL+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("healthz after a resuming drain: %d", code)
	}
	f.dial().next(protocol.TypePing, time.Second)
}

// /metrics speaks the Prometheus text format, counts what happened, and
// has no label a peer chose or that names a connection.
func TestMetrics(t *testing.T) {
	f := newFixture(t, &Options{})
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "time"})
	p.next(protocol.TypeResponse, time.Second)
	p.ws.Close(4567, "CANARY-metrics")
	waitFor(t, 2*time.Second, "closed", func() bool { return f.srv.Stats().Open == 0 })
	text := getText(t, f.hs.URL+"/metrics")
	for _, want := range []string{
		`wsready_handshakes_total{outcome="accepted",transport="ws"} 1`,
		`wsready_handshakes_total{outcome="admission_refused",transport="ws"} 0`,
		`wsready_handshakes_total{outcome="accepted",transport="sse"} 0`,
		`wsready_closes_total{by="client",code="other",transport="ws"} 1`,
		`wsready_connections_open{transport="ws"} 0`,
		`wsready_connections_open{transport="sse"} 0`,
		`wsready_request_seconds_count 1`,
		`wsready_sweep_closes_total{transport="ws"} 0`,
		`wsready_drain_remaining 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, "CANARY") || strings.Contains(text, "127.0.0.1") {
		t.Fatal("peer text or an address in the metrics")
	}
}

// A drain asked for once the server is closing is refused, not counted
// against a WaitGroup whose Wait may already have returned.
func TestDrainAfterCloseIsRefused(t *testing.T) {
	f := newFixture(t, &Options{})
	f.srv.Close()
	rec := httptest.NewRecorder()
	f.srv.serveDrain(rec, httptest.NewRequest(http.MethodPost, "/api/drain", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("drain after Close answered %d, want 503", rec.Code)
	}
}
