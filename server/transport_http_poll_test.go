//go:build !js

package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// poll makes one long poll (GET sse?poll=1) of session with lastID as
// ?lastEventId= and welcome, and returns its events, how long it took and
// whether it says the stream was held; the answer must complete within 3 s.
func (f *fixture) poll(t *testing.T, session, lastID string, welcome bool) ([]sseEvent, time.Duration, bool) {
	t.Helper()
	q := url.Values{"session": {session}, "poll": {"1"}}
	if lastID != "" {
		q.Set("lastEventId", lastID)
	}
	if welcome {
		q.Set("welcome", "1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base()+"/sse?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("poll: %d", resp.StatusCode)
	}
	var evs []sseEvent
	readEvents(resp.Body, func(e sseEvent) { evs = append(evs, e) })
	if ctx.Err() != nil {
		t.Fatalf("a poll did not complete within 3 s (%d events)", len(evs))
	}
	return evs, time.Since(t0), resp.Header.Get("X-Wsready-Stream") == "held"
}

// A session whose stream delivered nothing (a proxy buffers it) goes on in
// long polls: the first, with welcome, gets the welcome the stream took;
// then each poll completes with what was queued since the last id the
// client got, and the updates published throughout arrive once each, in
// order, none lost. An idle poll answers within a ping interval.
func TestHTTPLongPollTakesOverAStreamThatDeliveredNothing(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: 300 * time.Millisecond, SweepGrace: 2 * time.Second}, DemoOptions{NoFeed: true})
	id := f.newSession(t, "{}")
	// The stream a buffering proxy would hold: the server writes the ping
	// and the welcome into it, the client sees none of them.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.base()+"/sse?session="+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	tr := f.srv.sessionConn(id).tr.(*httpTransport)
	waitFor(t, 2*time.Second, "the welcome written to the stream", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.welcome != nil
	})
	cancel()
	resp.Body.Close()

	evs, _, held := f.poll(t, id, "", true)
	if !held {
		t.Fatal("the first poll does not say the stream was held (X-Wsready-Stream: held)")
	}
	if len(evs) == 0 || !strings.Contains(evs[0].data, `"type":"welcome"`) || !strings.Contains(evs[0].data, id) {
		t.Fatalf("the first poll's events %+v; want the welcome first", evs)
	}
	for _, e := range evs[1:] {
		if strings.Contains(e.data, `"type":"welcome"`) {
			t.Fatalf("the welcome twice: %+v", evs)
		}
	}

	// Idle: an answer within a ping interval (the ping), never held longer.
	evs, took, held := f.poll(t, id, "", false)
	t0 := time.Now()
	if held {
		t.Fatal("a poll without welcome says the stream was held")
	}
	if took > 900*time.Millisecond {
		t.Fatalf("an idle poll took %v; want at most about one ping interval (300ms)", took)
	}
	t.Logf("an idle poll answered in %v with %d events", took, len(evs))

	sendFrames(t, f, id, protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	// The POST answers once the reader has the frame, not once it is
	// handled: publish from the subscribed on, so every update is the
	// subscription's.
	last := ""
	for subscribed := false; !subscribed; {
		if time.Since(t0) > 5*time.Second {
			t.Fatal("no subscribed within 5 s of polls")
		}
		evs, _, _ := f.poll(t, id, last, false)
		for _, e := range evs {
			if e.hasID {
				last = e.id
			}
			subscribed = subscribed || strings.Contains(e.data, `"type":"subscribed"`)
		}
	}
	stop := make(chan struct{})
	published := make(chan int64, 1)
	go func() { // one update every 2 ms
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var n int64
		defer func() { published <- n }()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			n++
			if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":`+itoa64(n)+`}`)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var seqs []int64
	polls := 0
	take := func(evs []sseEvent) {
		for _, e := range evs {
			if e.hasID {
				last = e.id
			}
			m, err := protocol.Decode([]byte(e.data))
			if err == nil && m.Type == protocol.TypeUpdate {
				seqs = append(seqs, m.Seq)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(seqs) < 300 && time.Now().Before(deadline) {
		evs, _, _ := f.poll(t, id, last, false)
		polls++
		take(evs)
	}
	close(stop)
	n := <-published
	for int64(len(seqs)) < n && time.Now().Before(deadline) {
		evs, _, _ := f.poll(t, id, last, false)
		polls++
		take(evs)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("update %d has seq %d (lost or repeated): %v", i, s, seqs[max(0, i-3):min(len(seqs), i+3)])
		}
	}
	if int64(len(seqs)) != n {
		t.Fatalf("%d updates in %d polls, %d published", len(seqs), polls, n)
	}
	t.Logf("%d updates in %d polls, none lost or repeated", n, polls)
}

// sendFrames POSTs frames to the session and wants 204.
func sendFrames(t *testing.T, f *fixture, id string, ms ...protocol.Message) {
	t.Helper()
	for _, m := range ms {
		if a := f.post(t, "/send?session="+id, "application/json", string(protocol.Encode(m))); a.status != http.StatusNoContent {
			t.Fatalf("send: %d %+v", a.status, a)
		}
	}
}

// A stream that was silent because the server was frozen (it wrote
// nothing) is not a held stream: the welcome=1 poll after the freeze gets
// the welcome once, from the session's queue, and no X-Wsready-Stream:
// held, so the client keeps streaming its next sessions.
func TestHTTPLongPollAfterAFreezeIsNotHeld(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: 300 * time.Millisecond, SweepGrace: 2 * time.Second}, DemoOptions{NoFeed: true})
	f.set("freeze", true)
	id := f.newSession(t, "{}")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.base()+"/sse?session="+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	tr := f.srv.sessionConn(id).tr.(*httpTransport)
	waitFor(t, 2*time.Second, "the stream attached", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.stream != nil
	})
	cancel()
	resp.Body.Close()
	f.set("freeze", false)
	evs, _, held := f.poll(t, id, "", true)
	if held {
		t.Fatal("a poll after a frozen (silent) stream says the stream was held")
	}
	welcomes := 0
	for _, e := range evs {
		if strings.Contains(e.data, `"type":"welcome"`) {
			welcomes++
		}
	}
	if welcomes != 1 {
		t.Fatalf("%d welcomes in %+v; want 1", welcomes, evs)
	}
}
