//go:build !js

package server

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// rawDial opens a WebSocket that the test drives by hand (it reads only if
// the test does), optionally from a given loopback source address.
func rawDial(t *testing.T, url, from string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	var hc *http.Client
	if from != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		hc = &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	ws, resp, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPClient: hc})
	if err == nil {
		t.Cleanup(func() { ws.CloseNow() })
	}
	return ws, resp, err
}

func (f *fixture) connPeak() int {
	f.srv.mu.Lock()
	defer f.srv.mu.Unlock()
	peak := 0
	for _, c := range f.srv.conns {
		c.q.mu.Lock()
		peak = max(peak, c.q.peak)
		c.q.mu.Unlock()
	}
	return peak
}

// Clients that never read cannot pin the server's memory: the queue stays
// under its byte bound and each is dropped once a write makes no progress
// for WriteTimeout.
//
// How long the drops take is not what is asserted: reaching a stalled
// write means the server decoding and echoing megabytes of 60 KiB frames
// (about 2 s of CPU per connection under -race on a quiet machine; 9 to
// 24 s for the five at load 8 on 2 cores). The wait for them is a hang
// guard of 2 minutes, past which the server has not dropped a reader that
// never reads: with the stall's drop broken the test fails there.
func TestReadersThatNeverReadAreBoundedAndDropped(t *testing.T) {
	const limit = 256 << 10
	f := newFixture(t, &Options{MaxQueuedBytes: limit, WriteTimeout: 500 * time.Millisecond})
	params := []byte(`"` + strings.Repeat("x", 60<<10) + `"`)
	var conns []*websocket.Conn
	for range 5 {
		ws, _, err := rawDial(t, f.url, "")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, ws)
	}
	// A dial returns with the 101, before the server counts the
	// connection: wait until it counts all five, before any writer can
	// get one dropped, or Open == 0 below could be seen too early.
	waitFor(t, 30*time.Second, "five open connections", func() bool { return f.srv.Stats().Open == 5 })
	var writers sync.WaitGroup
	peak := 0
	for _, ws := range conns {
		writers.Add(1)
		go func() { // pipelines 400 big echoes and never reads a reply
			defer writers.Done()
			for id := uint64(1); id <= 400; id++ {
				m := protocol.Encode(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "echo", Params: params})
				if ws.Write(context.Background(), websocket.MessageText, m) != nil {
					return
				}
			}
		}()
	}
	start := time.Now()
	waitFor(t, 2*time.Minute, "every non-reader dropped", func() bool {
		peak = max(peak, f.connPeak())
		return f.srv.Stats().Open == 0
	})
	took := time.Since(start)
	writers.Wait()
	st := f.srv.Stats()
	if st.Limits.Stalled+st.Limits.SlowConsumer < 5 || st.Limits.Stalled > 5 {
		t.Fatalf("limits %+v: want 5 stalled or slow consumers, none stalled twice", st.Limits)
	}
	if peak > limit+protocol.MaxFrameBytes {
		t.Fatalf("a connection queued %d bytes, bound %d", peak, limit)
	}
	t.Logf("every non-reader dropped in %v; peak queued %d bytes; limits %+v", took.Round(time.Millisecond), peak, st.Limits)
}

// Limits.Stalled counts connections: a reader that never reads is dropped
// by its first write past WriteTimeout, and the writes after it, which fail
// with the same saved error, do not count it again (each was counted: 2
// for one connection).
func TestAStalledConnectionIsCountedOnce(t *testing.T) {
	f := newFixture(t, &Options{MaxQueuedBytes: 64 << 20, WriteTimeout: 300 * time.Millisecond})
	params := []byte(`"` + strings.Repeat("x", 60<<10) + `"`)
	ws, _, err := rawDial(t, f.url, "")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the connection counted", func() bool { return f.srv.Stats().Open == 1 })
	done := make(chan struct{})
	go func() { // pipelines big echoes and never reads a reply
		defer close(done)
		for id := uint64(1); id <= 400; id++ {
			m := protocol.Encode(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "echo", Params: params})
			if ws.Write(context.Background(), websocket.MessageText, m) != nil {
				return
			}
		}
	}()
	waitFor(t, 2*time.Minute, "the non-reader dropped", func() bool { return f.srv.Stats().Open == 0 })
	<-done
	if l := f.srv.Stats().Limits; l.Stalled != 1 || l.SlowConsumer != 0 {
		t.Fatalf("limits %+v: want Stalled 1 (one connection), SlowConsumer 0 (its queue's bound is far)", l)
	}
}

// A slow consumer is closed once, by one goroutine, however many frames
// overflow its queue meanwhile.
func TestASlowConsumerIsClosedOnceWithoutAGoroutinePerFrame(t *testing.T) {
	f := newFixture(t, &Options{MaxQueuedBytes: 256 << 10, WriteTimeout: 5 * time.Second}, DemoOptions{FeedInterval: time.Millisecond})
	ws, _, err := rawDial(t, f.url, "")
	if err != nil {
		t.Fatal(err)
	}
	f.waitOpen(1)
	before := runtime.NumGoroutine()
	if err := ws.Write(context.Background(), websocket.MessageText, protocol.Encode(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})); err != nil {
		t.Fatal(err)
	}
	params := []byte(`"` + strings.Repeat("x", 60<<10) + `"`)
	go func() { // fills the socket buffers and the queue, never reading
		for id := uint64(1); id <= 300; id++ {
			m := protocol.Encode(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "echo", Params: params})
			if ws.Write(context.Background(), websocket.MessageText, m) != nil {
				return
			}
		}
	}()
	most := before
	waitFor(t, 15*time.Second, "the slow consumer closed", func() bool {
		most = max(most, runtime.NumGoroutine())
		return f.srv.Stats().Open == 0
	})
	// Each method call has a goroutine while it runs, MaxConcurrentRequests
	// at most, waiting for room in the queue: bounded, not one per frame.
	if most > before+10+f.srv.opts.MaxConcurrentRequests {
		t.Fatalf("goroutines grew from %d to %d while the feed overflowed", before, most)
	}
	if l := f.srv.Stats().Limits; l.SlowConsumer != 1 {
		t.Fatalf("limits %+v, want one slow consumer close", l)
	}
}

// A client that pipelines requests and floods bad frames while reading
// everything is slowed by back-pressure, never closed: every request and
// every bad frame gets its answer.
func TestAFastClientIsPacedNotClosed(t *testing.T) {
	f := newFixture(t, &Options{MaxQueuedBytes: 64 << 10})
	p := f.dial()
	go func() {
		for id := uint64(1); id <= 2000; id++ {
			p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "echo", Params: []byte(`"` + strings.Repeat("y", 200) + `"`)})
		}
		for range 10000 {
			p.sendRaw(`{"type":"nonsense"}`)
		}
	}()
	responses, errs := 0, 0
	answered := map[uint64]bool{} // calls run at once: their answers may come in any order
	deadline := time.After(60 * time.Second)
	for responses < 2000 || errs < 10000 {
		select {
		case m := <-p.frames:
			switch m.Type {
			case protocol.TypeResponse:
				responses++
				if m.ID < 1 || m.ID > 2000 || answered[m.ID] {
					t.Fatalf("response %d has id %d", responses, m.ID)
				}
				answered[m.ID] = true
			case protocol.TypeError:
				errs++
			}
		case err := <-p.closed:
			t.Fatalf("closed after %d responses and %d errors: %v", responses, errs, err)
		case <-deadline:
			t.Fatalf("only %d responses and %d errors in 60 s", responses, errs)
		}
	}
	if l := f.srv.Stats().Limits; l.SlowConsumer != 0 || l.Stalled != 0 {
		t.Fatalf("limits %+v", l)
	}
}

// Slow replies wait on timers, not goroutines, and a connection may have
// at most MaxPendingReplies waiting; the rest are refused at once, by id.
func TestPendingSlowRepliesAreCapped(t *testing.T) {
	f := newFixture(t, &Options{MaxPendingReplies: 10}, DemoOptions{SlowReplyDelay: time.Second})
	f.set("slowReplies", true)
	p := f.dial()
	before := runtime.NumGoroutine()
	for id := uint64(1); id <= 30; id++ {
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "time"})
	}
	refused := map[uint64]bool{}
	for range 20 {
		r := p.next(protocol.TypeResponse, 500*time.Millisecond)
		if r.Error == nil || r.Error.Code != protocol.ErrTooManyPending {
			t.Fatalf("an excess request got %+v", r)
		}
		refused[r.ID] = true
	}
	for id := uint64(11); id <= 30; id++ {
		if !refused[id] {
			t.Fatalf("request %d not refused; refused %v", id, refused)
		}
	}
	// The calls' own goroutines end at once (their replies wait on timers);
	// the refusals, written from the reader, may come before they have.
	// Well before SlowReplyDelay, only the pending replies remain: no
	// goroutine holds one.
	waitFor(t, 500*time.Millisecond, "no goroutine per pending reply", func() bool { return runtime.NumGoroutine() <= before+3 })
	late := map[uint64]bool{}
	for range 10 {
		r := p.next(protocol.TypeResponse, 2*time.Second)
		if r.ID < 1 || r.ID > 10 || r.Error != nil || late[r.ID] {
			t.Fatalf("late reply: %+v", r)
		}
		late[r.ID] = true
	}
}

// Connections are capped per IP and overall; a refusal is a 503 with
// Retry-After, and a freed place can be taken again.
func TestConnectionCaps(t *testing.T) {
	f := newFixture(t, &Options{MaxConns: 3, MaxConnsPerIP: 2, RefuseWith: RefuseHTTP})
	refused := func(from string) {
		t.Helper()
		_, resp, err := rawDial(t, f.url, from)
		if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("dial from %s past a cap: %v %+v", from, err, resp)
		}
	}
	a, _, err := rawDial(t, f.url, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rawDial(t, f.url, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	refused("127.0.0.1") // per IP
	if _, _, err := rawDial(t, f.url, "127.0.0.2"); err != nil {
		t.Fatal(err)
	}
	refused("127.0.0.3") // overall
	a.Close(websocket.StatusNormalClosure, "")
	waitFor(t, 2*time.Second, "a place freed", func() bool { return f.srv.Stats().Open == 2 })
	if _, _, err := rawDial(t, f.url, "127.0.0.3"); err != nil {
		t.Fatalf("after a close: %v", err)
	}
	if l := f.srv.Stats().Limits; l.RefusedPerIP != 1 || l.RefusedFull != 1 {
		t.Fatalf("limits %+v", l)
	}
}

// A frozen connection whose peer has gone is closed at once, not kept until
// the freeze ends.
func TestAFrozenConnectionEndsWhenItsPeerGoes(t *testing.T) {
	f := newFixture(t, nil)
	f.set("freeze", true)
	for range 3 {
		ws, _, err := rawDial(t, f.url, "")
		if err != nil {
			t.Fatal(err)
		}
		ws.CloseNow()
	}
	waitFor(t, 3*time.Second, "frozen connections of gone peers closed", func() bool {
		st := f.srv.Stats()
		return st.Open == 0 && st.Limits.PeerGone == 3
	})
	if !f.demo.Faults()["freeze"] {
		t.Fatal("freeze ended")
	}
	if n := f.srv.Stats().Limits.PeerGone; n != 3 {
		t.Fatalf("peerGone %d", n)
	}
}

// A message whose first fragment arrives and whose last never does closes
// its connection after MessageTimeout; an idle connection is not closed.
func TestAnUnfinishedMessageClosesTheConnection(t *testing.T) {
	f := newFixture(t, &Options{MessageTimeout: 300 * time.Millisecond})
	idle := f.dial()
	ws, _, err := rawDial(t, f.url, "")
	if err != nil {
		t.Fatal(err)
	}
	f.waitOpen(2)
	w, err := ws.Writer(context.Background(), websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat([]byte("x"), 10<<10)) // more than the writer buffers: a non-final frame goes out
	start := time.Now()
	waitFor(t, 3*time.Second, "the unfinished message's connection closed", func() bool { return f.srv.Stats().Open == 1 })
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("closed after %v, before the message timeout", d)
	}
	if n := f.srv.Stats().Limits.MessageTimeouts; n != 1 {
		t.Fatalf("messageTimeouts %d", n)
	}
	idle.next(protocol.TypePing, time.Second) // the idle one is still served
}

// Per-connection events are debug logs: at info level, connecting and
// disconnecting write nothing.
func TestConnectionsAreNotLoggedAtInfo(t *testing.T) {
	var buf logBuf
	f := newFixture(t, nil)
	f.srv.log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for range 20 {
		ws, _, err := rawDial(t, f.url, "")
		if err != nil {
			t.Fatal(err)
		}
		ws.Close(websocket.StatusNormalClosure, "bye")
	}
	waitFor(t, 2*time.Second, "all closed", func() bool { return f.srv.Stats().Open == 0 })
	if s := buf.String(); s != "" {
		t.Fatalf("info logs for connections:\n%s", s)
	}
	if n := f.srv.Stats().PeerCloses.Normal; n != 20 {
		t.Fatalf("peer closes with 1000: %d", n)
	}
}

// Flapping switched off before a connection's time is up leaves it open.
func TestFlappingOffSparesPendingConnections(t *testing.T) {
	f := newFixture(t, &Options{}, DemoOptions{FlapAfter: 300 * time.Millisecond})
	f.set("flapping", true)
	p := f.dial()
	f.set("flapping", false)
	select {
	case err := <-p.closed:
		t.Fatalf("closed after Flapping was switched off: %v", err)
	case <-time.After(800 * time.Millisecond):
	}
}

// After shutdown a handshake is refused with a positive Retry-After.
func TestRetryAfterIsPositiveAfterShutdown(t *testing.T) {
	clock := newTestClock() // the downtime ends by Options.Now
	f := newFixture(t, &Options{RefuseWith: RefuseHTTP, Now: clock.now}, DemoOptions{RestartDowntime: 100 * time.Millisecond})
	f.set("restart", true)
	clock.advance(200 * time.Millisecond)
	f.srv.Close()
	_, resp, err := rawDial(t, f.url, "")
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("after shutdown: %v %+v", err, resp)
	}
}

// An error about a request carries the request's id.
func TestErrorsAboutARequestCarryItsID(t *testing.T) {
	f := newFixture(t, nil)
	p := f.dial()
	for _, frame := range []string{`{"type":"request","id":41,"method":""}`, `{"type":"request","id":42,"method":7}`, `{"type":"request","id":43}`} {
		p.sendRaw(frame)
		if e := p.next(protocol.TypeError, time.Second); e.ID == 0 {
			t.Errorf("%s: error frame without id: %+v", frame, e)
		}
	}
}
