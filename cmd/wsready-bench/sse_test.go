//go:build !js

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// readAll reads every event of a stream until it ends, and how it ended.
func readAll(r io.Reader) ([]sseEvent, error) {
	rd := newSSEReader(r)
	var evs []sseEvent
	for range 1000 {
		ev, err := rd.next()
		if err != nil {
			return evs, err
		}
		ev.Data = append([]byte(nil), ev.Data...) // the reader's buffer is reused
		evs = append(evs, ev)
	}
	return evs, errors.New("more than 1000 events")
}

// stream is what wsready's server writes (server/sse.go), with the forms
// the format allows beside it: a comment, data: without its space, CRLF
// and a lone CR, an update split over two data: lines, an id that
// persists, an event without data (not dispatched).
const stream = "retry: 1000\n\n" +
	"data: {\"type\":\"ping\",\"intervalMs\":1000}\n\n" +
	": a comment\n" +
	"id: feed=41\n" +
	"data: {\"type\":\"update\",\"topic\":\"feed\",\"seq\":41}\n\n" +
	"data:{\"type\":\"ping\"}\r\n\r\n" +
	"id: feed=42\rdata: {\"type\":\"update\",\r\ndata: \"seq\":42}\r\r" +
	"event: nothing\n\n" +
	"event: close\ndata: {\"code\":1012,\"reason\":\"retry-after-ms=4210\"}\n\n"

var streamWant = []sseEvent{
	{Data: []byte(`{"type":"ping","intervalMs":1000}`)},
	{ID: "feed=41", Data: []byte(`{"type":"update","topic":"feed","seq":41}`)},
	{ID: "feed=41", Data: []byte(`{"type":"ping"}`)},
	{ID: "feed=42", Data: []byte("{\"type\":\"update\",\n\"seq\":42}")},
	{Type: "close", ID: "feed=42", Data: []byte(`{"code":1012,"reason":"retry-after-ms=4210"}`)},
}

func sameEvents(t *testing.T, how string, got, want []sseEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events %q, want %d", how, len(got), got, len(want))
	}
	for i := range got {
		if got[i].Type != want[i].Type || got[i].ID != want[i].ID || string(got[i].Data) != string(want[i].Data) {
			t.Errorf("%s: event %d is %q %q %q, want %q %q %q", how, i, got[i].Type, got[i].ID, got[i].Data, want[i].Type, want[i].ID, want[i].Data)
		}
	}
}

func TestSSEReaderReadsDataIDAndEventLines(t *testing.T) {
	evs, err := readAll(strings.NewReader(stream))
	if err != io.EOF {
		t.Fatalf("the stream ended with %v, want io.EOF", err)
	}
	sameEvents(t, "whole", evs, streamWant)
}

// A frame split across reads, at every byte and at every point of two
// reads, reads the same.
func TestSSEReaderJoinsAFrameSplitAcrossReads(t *testing.T) {
	evs, err := readAll(iotest.OneByteReader(strings.NewReader(stream)))
	if err != io.EOF {
		t.Fatalf("one byte at a time: %v", err)
	}
	sameEvents(t, "one byte at a time", evs, streamWant)
	for i := 1; i < len(stream); i++ {
		evs, err := readAll(io.MultiReader(strings.NewReader(stream[:i]), strings.NewReader(stream[i:])))
		if err != io.EOF {
			t.Fatalf("split at %d: %v", i, err)
		}
		sameEvents(t, fmt.Sprintf("split at %d", i), evs, streamWant)
	}
}

func TestSSEReaderSaysWhenTheStreamEndsInsideAnEvent(t *testing.T) {
	evs, err := readAll(strings.NewReader("data: {\"type\":\"ping\"}\n\ndata: {\"type\":\"upd"))
	if err != io.ErrUnexpectedEOF || len(evs) != 1 {
		t.Fatalf("got %d events and %v, want the first and io.ErrUnexpectedEOF", len(evs), err)
	}
	if _, err := readAll(strings.NewReader("id: 3\n")); err != io.ErrUnexpectedEOF {
		t.Fatalf("an unended event: %v, want io.ErrUnexpectedEOF", err)
	}
}

// endless is an endless line of one byte.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.n += len(p)
	return len(p), nil
}

func TestSSEReaderBoundsALine(t *testing.T) {
	long := "data: " + strings.Repeat("x", sseMaxLine-len("data: "))
	evs, err := readAll(strings.NewReader(long + "\n\n"))
	if err != io.EOF || len(evs) != 1 || len(evs[0].Data) != sseMaxLine-len("data: ") {
		t.Fatalf("a line of exactly %d bytes: %d events, %v", sseMaxLine, len(evs), err)
	}
	if _, err := readAll(strings.NewReader(long + "x\n\n")); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a line of %d bytes: %v, want errLineTooLong", sseMaxLine+1, err)
	}
	// A line that never ends fails once the bound is passed, not at the
	// stream's end (there is none).
	e := &endless{}
	if _, err := newSSEReader(io.MultiReader(strings.NewReader("data: "), e)).next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("an endless line: %v, want errLineTooLong", err)
	}
	if e.n > 2*sseMaxLine {
		t.Fatalf("read %d bytes of an endless line, bound %d", e.n, sseMaxLine)
	}
}

func TestSSEReaderBoundsAnEvent(t *testing.T) {
	line := "data: " + strings.Repeat("x", 60<<10) + "\n"
	big := strings.Repeat(line, sseMaxEvent/(60<<10)+1) + "\n"
	if _, err := readAll(strings.NewReader(big)); !errors.Is(err, errEventTooLarge) {
		t.Fatalf("an event over %d bytes: %v, want errEventTooLarge", sseMaxEvent, err)
	}
	if _, err := readAll(strings.NewReader(strings.Repeat(": keep-alive\n", sseMaxLinesPerEvent+1))); !errors.Is(err, errEventTooLarge) {
		t.Fatalf("%d lines without an event: %v, want errEventTooLarge", sseMaxLinesPerEvent+1, err)
	}
}

// sseAll runs n SSE clients against base until the returned stop is
// called; stop waits for them.
func sseAll(t *testing.T, base string, n int, st *counters, tm *sseTiming) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hc := &http.Client{Transport: &http.Transport{}}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sseConn(ctx, base, hc, true, st, tm, func() {})
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait(); hc.CloseIdleConnections() }) }
	t.Cleanup(stop)
	return stop
}

// httpBase is the HTTP transport's mount for a ws:// URL.
func httpBase(ws string) string { return "http" + strings.TrimPrefix(ws, "ws") }

func TestSSEClientsCountWsreadysPingsAndUpdates(t *testing.T) {
	base := httpBase(newWsready(t, server.Options{PingInterval: 100 * time.Millisecond}, demo.Options{FeedInterval: 50 * time.Millisecond}))
	var st counters
	var tm sseTiming
	before := time.Now().UnixNano()
	stop := sseAll(t, base, 3, &st, &tm)
	waitFor(t, &st, "3 subscribed with updates and pings", func(s clientStats) bool {
		return s.Subscribed == 3 && s.Updates >= 9 && s.Pings >= 6
	})
	stop()
	s := st.snapshot()
	if s.Failed != 0 || s.Dropped != 0 || s.Dialed != 3 || s.Connected != 3 || s.Msgs != s.Frames || s.Frames < s.Updates+s.Pings+s.Subscribed {
		t.Fatalf("counts %+v", s)
	}
	if f, l := tm.first.Load(), tm.last.Load(); f < before || l < f || l > time.Now().UnixNano() {
		t.Fatalf("sessions made from %d to %d, the test began at %d", f, l, before)
	}
}

func TestSSEARefusedSubscribeCountsAsFailed(t *testing.T) {
	base := httpBase(newWsready(t, server.Options{Authorize: func(context.Context, server.Identity, server.Action) error {
		return errors.New("not this one")
	}}, demo.Options{NoFeed: true}))
	var st counters
	sseAll(t, base, 1, &st, &sseTiming{})
	s := waitFor(t, &st, "the refusal", func(s clientStats) bool { return s.Failed == 1 })
	if s.Subscribed != 0 || s.Dropped != 0 || s.Dialed != 1 {
		t.Fatalf("counts %+v", s)
	}
}

func TestSSEARefusedSessionCountsAsFailed(t *testing.T) {
	base := httpBase(newWsready(t, server.Options{MaxConns: 1, PingInterval: 100 * time.Millisecond}, demo.Options{}))
	var st counters
	sseAll(t, base, 2, &st, &sseTiming{})
	s := waitFor(t, &st, "one in, one refused", func(s clientStats) bool { return s.Failed == 1 && s.Subscribed == 1 })
	if s.Dialed != 1 || s.Dropped != 0 {
		t.Fatalf("counts %+v", s)
	}
}

func TestSSEAStreamTheServerEndsCountsAsDropped(t *testing.T) {
	srv, err := server.New(&server.Options{PingInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.New(srv, nil, &demo.Options{FeedInterval: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	var st counters
	sseAll(t, hs.URL+"/ws", 2, &st, &sseTiming{})
	waitFor(t, &st, "2 subscribed", func(s clientStats) bool { return s.Subscribed == 2 })
	srv.Close() // every session gets event: close, then its stream ends
	s := waitFor(t, &st, "2 dropped", func(s clientStats) bool { return s.Dropped == 2 })
	if s.Failed != 0 {
		t.Fatalf("counts %+v", s)
	}
}

// A stream that opens and then says nothing (no ping within the silence
// bound) is cancelled and counted as dropped, not read forever.
func TestSSEASilentStreamCountsAsDropped(t *testing.T) {
	old := sseMinSilence
	sseMinSilence = 300 * time.Millisecond
	t.Cleanup(func() { sseMinSilence = old })
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ws/session", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"session":"AAAAAAAAAAAAAAAAAAAAAA","intervalMs":10}`)
	})
	mux.HandleFunc("POST /ws/send", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /ws/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"type\":\"subscribed\",\"topic\":\"feed\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing, until the client goes
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	var st counters
	start := time.Now()
	sseAll(t, hs.URL+"/ws", 1, &st, &sseTiming{})
	s := waitFor(t, &st, "the silent stream dropped", func(s clientStats) bool { return s.Dropped == 1 })
	if took := time.Since(start); s.Subscribed != 1 || s.Failed != 0 || took < 300*time.Millisecond {
		t.Fatalf("counts %+v after %v", s, took)
	}
}

func TestSSEClientsRefuseBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-transport", "sse", "-url", "ws://127.0.0.1:1/ws"},
		{"-transport", "sse", "-url", "http://example.com/ws"},
		{"-transport", "sse", "-url", "http://127.0.0.1:1/ws", "-src", "10.0.0.1"},
		{"-transport", "quic", "-url", "http://127.0.0.1:1/ws"},
		{"-transport", "sse", "-url", "http://127.0.0.1:1/ws", "-n", "0"},
	} {
		var ue *usageError
		if err := runClients(args); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	for _, args := range [][]string{{"-conns", "0"}, {"-conns", "9001"}, {"-steady", "0s"}, {"-trials", "0"}, {"-sample", "5ms"}, {"extra"}} {
		var ue *usageError
		if err := runSSEOnly(args); !errors.As(err, &ue) {
			t.Errorf("sse %v: %v, want a usage error", args, err)
		}
	}
	var ue *usageError
	if err := runBench([]string{"-sse", "9001"}); !errors.As(err, &ue) {
		t.Errorf("run -sse 9001: %v, want a usage error", err)
	}
}

func TestSSESectionShowsEveryRunAndTheMedians(t *testing.T) {
	s := newSSEFigures(params{SSEConns: 3000, SteadySeconds: 10})
	leg := func(cpu, rss, sps float64) SSELeg {
		return SSELeg{CPUPerFrameUs: cpu, RSSPerConnBytes: rss, SessionsPerSec: sps, UpdatesPerConnPerSec: 4, PingsPerConnPerSec: 1}
	}
	s.Runs = []SSERun{
		{Trial: 1, SSE: leg(30, 60e3, 1500), WS: leg(20, 40e3, 0), CPUPerFrameRatio: 1.5, RSSPerConnRatio: 1.5},
		{Trial: 2, Error: "failed to measure the sse leg: subscribing 3000: 2 connections failed"},
		{Trial: 3, SSE: leg(40, 90e3, 1700), WS: leg(20, 30e3, 0), CPUPerFrameRatio: 2, RSSPerConnRatio: 3},
	}
	s.finish()
	if s.NotMeasured != "" || *s.MedianCPUPerFrameRatio != 1.75 || *s.MedianRSSPerConnRatio != 2.25 || *s.MedianHandshakesPerSec != 1600 ||
		s.VerdictCPU != "missed" || s.VerdictRSS != "missed" {
		t.Fatalf("figures %+v", s)
	}
	md := s.markdown()
	for _, want := range []string{
		"| CPU per delivered frame, SSE / WebSocket on the same wsready server | <= 1.5 | 1.50 (30.0 µs / 20.0 µs) | failed | 2.00 (40.0 µs / 20.0 µs) | **1.75** | missed |",
		"| RSS per connection, SSE / WebSocket | <= 2.0 | 1.50 (60.0 KB / 40.0 KB) | failed | 3.00 (90.0 KB / 30.0 KB) | **2.25** | missed |",
		"| handshakes per second over HTTP (sessions made) | shown | 1500 | failed | 1700 | **1600** |",
		"Run 2 failed: failed to measure the sse leg",
		"3,000 clients",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
	s.Runs = s.Runs[1:2]
	s.finish()
	if s.NotMeasured == "" || s.MedianCPUPerFrameRatio != nil || !strings.Contains(s.markdown(), "Run 2 failed") {
		t.Fatalf("every run failed: %+v", s)
	}
}

// buildBench builds this command once per test run, for the tests that
// run its children (the test binary is not the command).
var buildBench = sync.OnceValues(func() (string, error) {
	out := filepath.Join(peerTmp, "wsready-bench")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", out, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to build wsready-bench: %w: %s", err, b)
	}
	return out, nil
})

// The row, small: 200 connections each leg, a 2 s window, one run, with
// the built command's server and clients children.
func TestSSERowSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs server and client processes for about 15 s")
	}
	self, err := buildBench()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{self: self, p: params{SSEConns: 200, Trials: 1, SteadySeconds: 2, SampleMs: 100, steady: 2 * time.Second, sample: 100 * time.Millisecond}}
	figs, err := e.sseRow()
	if err != nil {
		t.Fatal(err)
	}
	r := figs.Runs[0]
	for _, l := range []SSELeg{r.WS, r.SSE} {
		// Four updates and a ping a second each, give or take a loaded
		// machine; nothing dropped; RSS sampled through the window (20
		// times on an idle machine, each sample also asks the server for
		// its goroutines, so fewer on a loaded one).
		if l.UpdatesPerConnPerSec < 2 || l.PingsPerConnPerSec < 0.5 || l.Dropped != 0 || l.CPUPerFrameUs <= 0 || l.Steady.RSS.N < 3 {
			t.Errorf("%s leg %+v", l.Transport, l)
		}
	}
	if r.SSE.SessionsPerSec <= 0 || r.CPUPerFrameRatio <= 0 || figs.MedianCPUPerFrameRatio == nil || len(figs.HandshakesPerSec) != 1 {
		t.Errorf("run %+v", r)
	}
	t.Logf("%s", figs.markdown())
}

// pollAll runs n long-poll clients against base until the returned stop
// is called; stop waits for them.
func pollAll(t *testing.T, base string, n int, st *counters) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pollConn(ctx, base, hc, true, st, &sseTiming{}, func() {})
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait(); hc.CloseIdleConnections() }) }
	t.Cleanup(stop)
	return stop
}

// Twenty long-poll clients on the real server for a few seconds: every
// update arrives, in order, none lost or repeated (each update's seq is
// the last one's next, across polls), each poll a request of its own.
func TestPollClientsGetEveryUpdateInOrder(t *testing.T) {
	base := httpBase(newWsready(t, server.Options{PingInterval: 200 * time.Millisecond}, demo.Options{FeedInterval: 20 * time.Millisecond}))
	var st counters
	stop := pollAll(t, base, 20, &st)
	waitFor(t, &st, "20 subscribed", func(s clientStats) bool { return s.Subscribed == 20 })
	start := time.Now()
	// 50 updates a second: 150 each, as in 3 s.
	waitFor(t, &st, "150 updates each", func(s clientStats) bool { return s.Updates >= 20*150 })
	stop()
	took := time.Since(start)
	s := st.snapshot()
	if s.Failed != 0 || s.Dropped != 0 || s.Dialed != 20 || s.Connected != 20 || s.Misordered != 0 || s.Pings < 20 {
		t.Fatalf("counts %+v", s)
	}
	// A poll per burst: more than one poll per client, and no more polls
	// than events plus the empty answers (one a ping interval at most).
	if s.Polls <= 40 || s.Polls > s.Frames+20*(int64(took/(200*time.Millisecond))+5) {
		t.Fatalf("%d polls for %d frames", s.Polls, s.Frames)
	}
}

// The order check can fail: a server that repeats an update and skips
// one is seen, and the client's lastEventId carries the last id it got.
func TestPollClientCountsALostOrRepeatedUpdate(t *testing.T) {
	var mu sync.Mutex
	var lasts []string
	polls := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ws/session", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"session":"AAAAAAAAAAAAAAAAAAAAAA","intervalMs":1000}`)
	})
	mux.HandleFunc("POST /ws/send", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	answers := []string{
		"data: {\"type\":\"welcome\"}\n\n",
		"data: {\"type\":\"subscribed\",\"topic\":\"feed\"}\n\nid: feed=1\ndata: {\"type\":\"update\",\"topic\":\"feed\",\"seq\":1}\n\n",
		"id: feed=2\ndata: {\"type\":\"update\",\"topic\":\"feed\",\"seq\":2}\n\nid: feed=2\ndata: {\"type\":\"update\",\"topic\":\"feed\",\"seq\":2}\n\n",
		"id: feed=4\ndata: {\"type\":\"update\",\"topic\":\"feed\",\"seq\":4}\n\n",
		"data: {\"type\":\"ping\"}\n\n",
	}
	mux.HandleFunc("GET /ws/sse", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := polls
		polls++
		lasts = append(lasts, r.URL.Query().Get("lastEventId"))
		mu.Unlock()
		if r.URL.Query().Get("poll") != "1" || i >= len(answers) {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, answers[i])
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	var st counters
	pollAll(t, hs.URL+"/ws", 1, &st)
	s := waitFor(t, &st, "the 404 after the last answer", func(s clientStats) bool { return s.Failed == 1 })
	if s.Updates != 4 || s.Misordered != 2 || s.Polls != int64(len(answers)) || s.Subscribed != 1 || s.Pings != 1 {
		t.Fatalf("counts %+v", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"", "", "feed=1", "feed=2", "feed=4", "feed=4"}; fmt.Sprint(lasts) != fmt.Sprint(want) {
		t.Fatalf("lastEventId per poll %q, want %q", lasts, want)
	}
}

func TestSSESectionShowsThePollLegsRunsAndMedians(t *testing.T) {
	s := newSSEFigures(params{SSEConns: 1000, SteadySeconds: 10, SSEPoll: true})
	leg := func(cpuU, rss float64) SSELeg {
		return SSELeg{CPUPerFrameUs: cpuU, CPUPerUpdateUs: cpuU, RSSPerConnBytes: rss, UpdatesPerConnPerSec: 4, PingsPerConnPerSec: 1, PollsPerConnPerSec: 4}
	}
	p1, p3 := leg(60, 80e3), leg(90, 120e3)
	s.Runs = []SSERun{
		{Trial: 1, SSE: leg(30, 40e3), WS: leg(20, 40e3), Poll: &p1, CPUPerFrameRatio: 1.5, RSSPerConnRatio: 1, PollCPUPerUpdateRatio: 3, PollRSSPerConnRatio: 2, SSECPUPerUpdateRatio: 1.5},
		{Trial: 2, Error: "failed to measure the poll leg"},
		{Trial: 3, SSE: leg(30, 40e3), WS: leg(30, 40e3), Poll: &p3, CPUPerFrameRatio: 1, RSSPerConnRatio: 1, PollCPUPerUpdateRatio: 3, PollRSSPerConnRatio: 3, SSECPUPerUpdateRatio: 1},
	}
	s.finish()
	if *s.MedianPollCPUPerUpdateRatio != 3 || *s.MedianPollRSSPerConnRatio != 2.5 || *s.MedianSSECPUPerUpdateRatio != 1.25 {
		t.Fatalf("figures %+v", s)
	}
	md := s.markdown()
	for _, want := range []string{
		"| CPU per delivered update, long poll / WebSocket | 3.00 (60.0 µs / 20.0 µs) | failed | 3.00 (90.0 µs / 30.0 µs) | **3.00** |",
		"| RSS per connection, long poll / WebSocket | 2.00 (80.0 KB / 40.0 KB) | failed | 3.00 (120 KB / 40.0 KB) | **2.50** |",
		"| long poll: polls, updates and pings per connection per second | 4.00; 4.00 + 1.00 | failed | 4.00; 4.00 + 1.00 | |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
}
