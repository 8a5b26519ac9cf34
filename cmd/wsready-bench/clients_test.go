//go:build !js

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// dialAll runs n clients against url until the returned stop is called;
// stop waits for them.
func dialAll(t *testing.T, url, proto string, n int, subscribe bool, st *counters) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runClient(ctx, url, proto, subscribe, http.DefaultClient, st, func() {})
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// waitFor polls the counters until ok holds, at most 10 s.
func waitFor(t *testing.T, st *counters, what string, ok func(clientStats) bool) clientStats {
	t.Helper()
	var s clientStats
	if !poll.UntilEvery(10*time.Second, 20*time.Millisecond, func() bool { s = st.snapshot(); return ok(s) }) {
		t.Fatalf("%s: not within 10 s; counts %+v", what, st.snapshot())
	}
	return s
}

func TestClientsCountTheLeanServersPingsAndUpdates(t *testing.T) {
	l := newLeanServer(100*time.Millisecond, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.run(ctx) }()
	defer func() { cancel(); <-done }()
	hs := httptest.NewServer(l)
	defer hs.Close()
	var st counters
	stop := dialAll(t, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", protoWsready, 3, true, &st)
	waitFor(t, &st, "3 subscribed, 2 updates and 2 pings each", func(s clientStats) bool {
		return s.Subscribed == 3 && s.Updates >= 6 && s.Pings >= 6
	})
	stop()
	s := st.snapshot()
	if s.Failed != 0 || s.Dropped != 0 || s.Msgs != s.Frames || s.Frames < s.Updates+s.Pings {
		t.Fatalf("counts %+v", s)
	}
}

func TestLeanServerPingsConnectionsAtRestAndSendsNoUpdates(t *testing.T) {
	l := newLeanServer(50*time.Millisecond, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.run(ctx) }()
	defer func() { cancel(); <-done }()
	hs := httptest.NewServer(l)
	defer hs.Close()
	var st counters
	dialAll(t, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", protoWsready, 2, false, &st)
	s0 := waitFor(t, &st, "pings to connections that never subscribed", func(s clientStats) bool { return s.Connected == 2 && s.Pings >= 8 })
	// 300 ms more of the server's loop (six pings each, 50 ms apart): an
	// update ticker's period, if it had one.
	waitFor(t, &st, "six more pings each", func(s clientStats) bool { return s.Pings >= s0.Pings+12 })
	if s := st.snapshot(); s.Updates != 0 || s.Subscribed != 0 {
		t.Fatalf("updates or subscriptions without a subscribe: %+v", s)
	}
}

func newWsready(t *testing.T, o server.Options, d demo.Options) string {
	t.Helper()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.New(srv, nil, &d); err != nil { // the feed, as the bench's server runs it
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
}

func TestClientsCountWsreadysPingsAndUpdates(t *testing.T) {
	url := newWsready(t, server.Options{PingInterval: 100 * time.Millisecond}, demo.Options{FeedInterval: 50 * time.Millisecond})
	var st counters
	stop := dialAll(t, url, protoWsready, 3, true, &st)
	waitFor(t, &st, "3 subscribed with updates and pings", func(s clientStats) bool {
		return s.Subscribed == 3 && s.Updates >= 9 && s.Pings >= 6
	})
	stop()
	if s := st.snapshot(); s.Failed != 0 || s.Dropped != 0 {
		t.Fatalf("counts %+v", s)
	}
}

func TestARefusedSubscribeCountsAsFailed(t *testing.T) {
	// A topic exists when joined: the refusal is the application's.
	url := newWsready(t, server.Options{Authorize: func(context.Context, server.Identity, server.Action) error {
		return errors.New("not this one")
	}}, demo.Options{NoFeed: true})
	var st counters
	dialAll(t, url, protoWsready, 1, true, &st)
	s := waitFor(t, &st, "the refusal", func(s clientStats) bool { return s.Failed == 1 })
	if s.Subscribed != 0 || s.Dropped != 0 {
		t.Fatalf("counts %+v", s)
	}
}

func TestADialThatFailsCountsAsFailed(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	var st counters
	dialAll(t, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", protoWsready, 2, true, &st)
	if s := waitFor(t, &st, "two failed dials", func(s clientStats) bool { return s.Failed == 2 }); s.Dialed != 0 {
		t.Fatalf("counts %+v", s)
	}
}

func TestWsreadyType(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"update","topic":"feed","seq":1,"data":{}}`: "update",
		`{"topic":"feed","type":"subscribed"}`:               "subscribed",
		`{"type":"ping","intervalMs":1000}`:                  "ping",
		`not json`:                                           "",
	} {
		if got := wsreadyType([]byte(in)); got != want {
			t.Errorf("wsreadyType(%s) = %q, want %q", in, got, want)
		}
	}
}

// buildPeer builds the centrifuge peer (its own module) once per test run.
var buildPeer = sync.OnceValues(func() (string, error) {
	dir, err := filepathAbs("centrifuge")
	if err != nil {
		return "", err
	}
	out := filepath.Join(peerTmp, "centrifuge-peer")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{string(b), err}
	}
	return out, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string {
	return "failed to build the centrifuge peer: " + e.err.Error() + ": " + e.out
}

// peerTmp holds the built peer for the whole test binary (TestMain).
var peerTmp string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wsready-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	peerTmp = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func filepathAbs(p string) (string, error) { return filepath.Abs(p) }

func startPeer(t *testing.T, args ...string) *child {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the centrifuge peer (its own module; a minute or two the first time)")
	}
	bin, err := buildPeer()
	if err != nil {
		t.Fatal(err)
	}
	c, err := startChild(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return c
}

// The clients speak centrifuge's protocol: connect, subscribe, a pong to
// every ping. The peer's pong timeout (400 ms after each 500 ms ping)
// closes a client that does not answer; over 2.5 s none is closed.
func TestClientsSpeakCentrifugesProtocol(t *testing.T) {
	c := startPeer(t, "-ping", "500ms", "-pong", "400ms", "-feed", "50ms")
	var st counters
	stop := dialAll(t, "ws://"+c.addr+"/connection/websocket", protoCentrifuge, 3, true, &st)
	s0 := waitFor(t, &st, "3 subscribed with updates and pings", func(s clientStats) bool {
		return s.Subscribed == 3 && s.Connected == 3 && s.Updates >= 30 && s.Pings >= 6
	})
	// 2.5 s more: five more pings each, every one answered in time or the
	// peer closes its client.
	waitFor(t, &st, "five more pings each", func(s clientStats) bool { return s.Pings >= s0.Pings+15 })
	s := st.snapshot()
	stop()
	if s.Failed != 0 || s.Dropped != 0 {
		t.Fatalf("counts %+v: a client was refused or closed (a pong not answered?)", s)
	}
	if s.Msgs < s.Updates+s.Pings || s.Frames > s.Msgs {
		t.Fatalf("counts %+v: messages and frames disagree", s)
	}
	var hs serverStats
	if err := getJSON("http://"+c.addr+"/bench/stats?mem=1", &hs); err != nil || hs.Goroutines < 3 || hs.PeakGoroutines < hs.Goroutines || hs.HeapInuse <= 0 {
		t.Fatalf("/bench/stats = %+v, %v", hs, err)
	}
}

// The control for the test above: a client that never answers the pings
// is closed by the peer, so a client that stays open did answer them.
func TestCentrifugeClosesAClientThatDoesNotAnswerPings(t *testing.T) {
	c := startPeer(t, "-ping", "500ms", "-pong", "400ms")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+c.addr+"/connection/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"connect":{}}`)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		_, _, err := ws.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("not closed within 10 s")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("closed after %v", d)
			}
			return
		}
	}
}

func TestCentrifugePeerAtRestSendsNoUpdates(t *testing.T) {
	c := startPeer(t, "-ping", "500ms", "-pong", "400ms", "-feed", "50ms", "-updates=false")
	var st counters
	dialAll(t, "ws://"+c.addr+"/connection/websocket", protoCentrifuge, 2, true, &st)
	waitFor(t, &st, "2 subscribed with 2 pings each", func(s clientStats) bool { return s.Subscribed == 2 && s.Pings >= 4 })
	if s := st.snapshot(); s.Updates != 0 || s.Dropped != 0 {
		t.Fatalf("counts %+v", s)
	}
}

func TestCentrifugePeerRefusesBadFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the centrifuge peer")
	}
	bin, err := buildPeer()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-ping", "1s", "-pong", "1s"}, {"-ping", "0s"}, {"-feed", "0s"}} {
		if out, err := exec.Command(bin, args...).CombinedOutput(); err == nil {
			t.Errorf("%v: accepted (%s)", args, out)
		}
	}
}

func TestStatsEndpointReportsTheHighWaterMark(t *testing.T) {
	var g goroutineWatch
	g.see(1 << 20) // as if a burst had happened since the last read
	hs := httptest.NewServer(http.HandlerFunc(g.serveStats))
	defer hs.Close()
	var s serverStats
	if err := getJSON(hs.URL+"?mem=1", &s); err != nil {
		t.Fatal(err)
	}
	if s.PeakGoroutines != 1<<20 || s.Goroutines < 1 || s.HeapInuse <= 0 {
		t.Fatalf("stats %+v", s)
	}
	var s2 serverStats
	if err := getJSON(hs.URL, &s2); err != nil {
		t.Fatal(err)
	}
	if s2.PeakGoroutines >= 1<<20 || s2.HeapInuse != 0 {
		t.Fatalf("the second read: %+v (the mark did not restart, or the heap was read without ?mem=1)", s2)
	}
}
