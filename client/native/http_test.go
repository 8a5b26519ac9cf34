//go:build !js

package native

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/internal/testutil"
	"github.com/wsready/wsready/protocol"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// fastStage8 is stage 8 with both transports and short timings: three
// failed WebSocket attempts take well under a second, and the re-probe
// comes every 300 ms.
func fastStage8(seed uint64) *client.Config {
	cfg := stages.Must(8)
	cfg.Rand = rand.New(rand.NewPCG(seed, 8)).Float64
	cfg.Transports = []client.Transport{client.TransportWebSocket, client.TransportHTTP}
	cfg.FirstPingTimeout = time.Second
	cfg.SubscribeTimeout = time.Second
	cfg.RequestTimeout = 2 * time.Second
	cfg.ConnectTimeout = 2 * time.Second
	cfg.Policy = client.FullJitter{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond}
	cfg.CapGrowth = []client.CapStep{}
	cfg.Cooldown = 100 * time.Millisecond
	cfg.ReprobeInterval = 300 * time.Millisecond
	return cfg
}

// The HTTP transport end to end, against the real server on loopback with
// every upgrade refused (the Block WebSocket switch: 403, as a proxy that
// strips upgrades): the native client falls back by the core's rule,
// reaches READY over HTTP, answers requests and publishes, delivers every
// update exactly once across a forced reconnect (Restart: the session ends
// with 1012, the next one resumes from the cursor), and moves back to
// WebSocket once upgrades work again, still losing and repeating nothing.
func TestNativeHTTPTransportFallsBackResumesAndMovesBack(t *testing.T) {
	srv := testutil.StartServer(t, server.Options{PingInterval: 200 * time.Millisecond, NoSlots: true, Publish: true},
		demo.Options{NoFeed: true, RestartDowntime: 200 * time.Millisecond})
	srv.Set("blockWebSocket", true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.Publish(ctx, "ticks", []byte(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}
	rec := &seqRecorder{}
	cfg := fastStage8(1)
	cfg.Topic = "ticks"
	c, err := Dial(ctx, srv.URL, &Options{Config: cfg, OnContinuityLost: rec.continuity})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Subscribe(ctx, "ticks", nil, rec.update); err != nil {
		t.Fatal(err)
	}
	onHTTP := func(s State) bool { return s.Ready && s.Via == client.TransportHTTP }
	if err := c.WaitState(ctx, onHTTP); err != nil {
		t.Fatalf("no READY over HTTP with upgrades refused: %v (state %+v)", err, c.State())
	}
	res, err := c.Request(ctx, "echo", []byte(`{"x":1}`))
	if err != nil || string(res) != `{"x":1}` {
		t.Fatalf("echo over HTTP: %s %v", res, err)
	}
	if seq, err := c.Publish(ctx, "chat", []byte(`{"text":"over http"}`)); err != nil || seq < 1 {
		t.Fatalf("publish over HTTP: seq %d, %v", seq, err)
	}
	next := int64(1)
	publish := func(n int) {
		t.Helper()
		for range n {
			seq, err := srv.Publish(ctx, "ticks", []byte(`{"n":`+strconv.FormatInt(next, 10)+`}`))
			if err != nil {
				t.Fatal(err)
			}
			next = seq
			time.Sleep(5 * time.Millisecond) // spread them over the reconnect
		}
	}
	delivered := func(to int64) string {
		if err := eventually(10*time.Second, func() bool {
			seqs, _ := rec.snapshot()
			return len(seqs) > 0 && seqs[len(seqs)-1] >= to
		}); err != nil {
			seqs, _ := rec.snapshot()
			return "updates up to " + strconv.FormatInt(to, 10) + " not delivered; got " + strconv.Itoa(len(seqs))
		}
		seqs, lost := rec.snapshot()
		if len(lost) != 0 {
			return "continuity lost: " + strconv.Itoa(len(lost))
		}
		return testutil.ExactRun(seqs, 2, to) // seq 1 was published before the subscribe
	}
	publish(20)
	if msg := delivered(next); msg != "" {
		t.Fatalf("over HTTP: %s", msg)
	}

	// A forced reconnect: the session ends with 1012; updates published
	// meanwhile come with the next session's resume.
	epoch := c.State().Epoch
	srv.Set("restart", true)
	publish(20)
	if err := c.WaitState(ctx, func(s State) bool { return onHTTP(s) && s.Epoch != epoch }); err != nil {
		t.Fatalf("no READY over HTTP after the restart: %v (state %+v)", err, c.State())
	}
	publish(10)
	if msg := delivered(next); msg != "" {
		t.Fatalf("across the reconnect over HTTP: %s", msg)
	}

	// Upgrades work again: the core's re-probe moves the client back.
	srv.Set("blockWebSocket", false)
	if err := c.WaitState(ctx, func(s State) bool { return s.Ready && s.Via == client.TransportWebSocket }); err != nil {
		t.Fatalf("no move back to WebSocket: %v (state %+v)", err, c.State())
	}
	publish(10)
	if msg := delivered(next); msg != "" {
		t.Fatalf("across the move to WebSocket: %s", msg)
	}
	if st := c.Stats(); st.Moves < 1 {
		t.Fatalf("stats say %d moves, want at least 1", st.Moves)
	}
}

// A send POST the server refuses for its bounds (429 + Retry-After) ends
// the socket as the server steering: a 1013 whose slot is the Retry-After,
// which the core waits out, never a transport loss.
func TestNativeHTTPSendRefusalIsTheServerSteering(t *testing.T) {
	srv := testutil.StartServer(t, server.Options{PingInterval: 200 * time.Millisecond, NoSlots: true}, demo.Options{NoFeed: true})
	var refuse atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			http.Error(w, "no upgrades here", http.StatusForbidden) // a proxy that strips upgrades
			return
		}
		if strings.HasSuffix(r.URL.Path, "/send") && refuse.Load() {
			w.Header().Set("Retry-After", "2")
			http.Error(w, `{"error":"too many sends","retryAfterMs":2000}`, http.StatusTooManyRequests)
			return
		}
		srv.Demo.Handler().ServeHTTP(w, r)
	}))
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs := make(chan Record, 64)
	cfg := fastStage8(2)
	c, err := Dial(ctx, "ws"+strings.TrimPrefix(front.URL, "http")+"/ws", &Options{Config: cfg, OnRecord: func(r Record) {
		select {
		case recs <- r:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitState(ctx, func(s State) bool { return s.Ready && s.Via == client.TransportHTTP }); err != nil {
		t.Fatalf("no READY over HTTP: %v", err)
	}
	refuse.Store(true)
	_, err = c.Request(ctx, "echo", []byte(`{}`))
	if err == nil {
		t.Fatal("a request whose send was refused succeeded")
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-recs:
			if r.Code == protocol.CloseTryAgainLater {
				if r.RetryAfter != 2*time.Second {
					t.Fatalf("the 1013 lost its slot: retry-after %v, want 2s", r.RetryAfter)
				}
				return
			}
		case <-deadline:
			t.Fatal("no 1013 close after a refused send")
		}
	}
}

// A stream line past its bound ends the socket with 1009 rather than
// growing a buffer without limit; the client stays bounded and closes.
func TestNativeHTTPStreamLineIsBounded(t *testing.T) {
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/session"):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"session":"abcdefghijklmnopqrstuv","intervalMs":1000}`))
		case strings.HasSuffix(r.URL.Path, "/sse"):
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: " + strings.Repeat("x", maxStreamLine+10) + "\n\n"))
		default:
			http.Error(w, "no", http.StatusForbidden)
		}
	}))
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := fastStage8(3)
	cfg.Transports = []client.Transport{client.TransportHTTP}
	recs := make(chan Record, 64)
	c, err := Dial(ctx, front.URL+"/ws", &Options{Config: cfg, OnRecord: func(r Record) {
		select {
		case recs <- r:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case r := <-recs:
		if r.Code != protocol.CloseMessageTooBig {
			t.Fatalf("an over-long stream line closed with %d, want 1009", r.Code)
		}
	case <-ctx.Done():
		t.Fatal("no close after an over-long stream line")
	}
}

// bufferingProxy stands in front of base as a proxy that refuses upgrades
// (403) and buffers responses: an event stream reaches the client only
// when it ends (never, while the session lives), so the client sees it
// open and receive nothing; every other request (the session, sends, long
// polls: responses that complete) passes. streams counts the streams.
// holdHeaders: the stream's headers are held too (else they go at once,
// as nginx's do, and the client sees the stream open).
func bufferingProxy(t *testing.T, base string, holdHeaders bool) (url string, streams *atomic.Int64) {
	t.Helper()
	streams = new(atomic.Int64)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			http.Error(w, "no upgrades here", http.StatusForbidden)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body := io.Reader(resp.Body)
		if strings.HasSuffix(r.URL.Path, "/sse") && r.URL.Query().Get("poll") == "" {
			streams.Add(1)
			if !holdHeaders {
				for k, vs := range resp.Header {
					w.Header()[k] = vs
				}
				w.WriteHeader(resp.StatusCode)
				w.(http.Flusher).Flush() // the headers: the client sees the stream open
			}
			held, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20)) // buffered until it ends
			if err != nil {
				return // the client went: so does the stream
			}
			body = bytes.NewReader(held)
			if !holdHeaders {
				io.Copy(w, body)
				return
			}
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, body)
	}))
	t.Cleanup(func() { front.Close(); hc.CloseIdleConnections() })
	return "ws" + strings.TrimPrefix(front.URL, "http") + "/ws", streams
}

// Behind a proxy that buffers the event stream, the session goes on in
// long polls after bridge.FirstEventTimeout: READY over HTTP, every update
// exactly once across the switch and across a forced reconnect, after
// which the next session starts in long polls at once (no second stream).
// Whether the proxy lets the stream's headers through or holds them too.
func TestNativeHTTPLongPollsBehindABufferingProxy(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run("holdHeaders="+strconv.FormatBool(hold), func(t *testing.T) {
			t.Parallel() // each waits out the 3 s FirstEventTimeout: side by side, not one after the other
			testLongPollsBehindABufferingProxy(t, hold)
		})
	}
}

func testLongPollsBehindABufferingProxy(t *testing.T, holdHeaders bool) {
	srv := testutil.StartServer(t, server.Options{PingInterval: 200 * time.Millisecond, NoSlots: true},
		demo.Options{NoFeed: true, RestartDowntime: 200 * time.Millisecond})
	url, streams := bufferingProxy(t, srv.Base, holdHeaders)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.Publish(ctx, "ticks", []byte(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}
	rec := &seqRecorder{}
	cfg := fastStage8(4)
	cfg.Topic = "ticks"
	cfg.ConnectTimeout = 5 * time.Second // the first open waits out the stream's FirstEventTimeout
	cfg.FirstPingTimeout = 5 * time.Second
	c, err := Dial(ctx, url, &Options{Config: cfg, OnContinuityLost: rec.continuity})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Subscribe(ctx, "ticks", nil, rec.update); err != nil {
		t.Fatal(err)
	}
	onHTTP := func(s State) bool { return s.Ready && s.Via == client.TransportHTTP }
	if err := c.WaitState(ctx, onHTTP); err != nil {
		t.Fatalf("no READY in long polls: %v (state %+v)", err, c.State())
	}
	res, err := c.Request(ctx, "echo", []byte(`{"x":2}`))
	if err != nil || string(res) != `{"x":2}` {
		t.Fatalf("echo in long polls: %s %v", res, err)
	}
	var last int64
	publish := func(n int) {
		t.Helper()
		for range n {
			seq, err := srv.Publish(ctx, "ticks", []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			last = seq
			time.Sleep(5 * time.Millisecond) // real time: spread the updates over the switch and the reconnect
		}
	}
	check := func(when string) {
		t.Helper()
		if err := eventually(10*time.Second, func() bool {
			seqs, _ := rec.snapshot()
			return len(seqs) > 0 && seqs[len(seqs)-1] >= last
		}); err != nil {
			t.Fatalf("%s: updates up to %d not delivered", when, last)
		}
		seqs, lost := rec.snapshot()
		if msg := testutil.ExactRun(seqs, 2, last); msg != "" || len(lost) != 0 {
			t.Fatalf("%s: %s (continuity lost %d)", when, msg, len(lost))
		}
	}
	publish(20)
	check("in long polls")
	epoch := c.State().Epoch
	srv.Set("restart", true)
	publish(20)
	if err := c.WaitState(ctx, func(s State) bool { return onHTTP(s) && s.Epoch != epoch }); err != nil {
		t.Fatalf("no READY after the restart: %v", err)
	}
	publish(10)
	check("across the reconnect")
	if n := streams.Load(); n != 1 {
		t.Fatalf("%d streams opened, want 1: the server said the stream was held, so the next session starts in long polls", n)
	}
}

// With tickets required, the session POST carries the Token hook's ticket
// (a ticket never rides in a URL, and the core's auth frame is not sent
// after it): READY over HTTP, and requests are answered as the ticket's
// identity allows.
func TestNativeHTTPSessionCarriesTheTicket(t *testing.T) {
	srv, base, url := authServer(t, server.Options{PingInterval: 200 * time.Millisecond, NoSlots: true}, demo.Options{NoFeed: true})
	srv.Set("blockWebSocket", true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var fetched atomic.Int64
	c, err := Dial(ctx, url, &Options{Config: fastStage8(5), Token: tokenHook(http.DefaultClient, base, "http-ticket", &fetched)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitState(ctx, func(s State) bool { return s.Ready && s.Via == client.TransportHTTP }); err != nil {
		t.Fatalf("no READY over HTTP with a ticket: %v (state %+v)", err, c.State())
	}
	res, err := c.Request(ctx, "echo", []byte(`{"x":3}`))
	if err != nil || string(res) != `{"x":3}` {
		t.Fatalf("echo over HTTP with a ticket: %s %v", res, err)
	}
	if fetched.Load() == 0 {
		t.Fatal("the token hook was never asked")
	}
}

// Sends go in order, one POST at a time: 40 requests from concurrent
// callers reach the server in the order the loop took them (their ids
// increase through every POST body), never two POSTs of the session at
// once, and every one is answered.
func TestNativeHTTPSendsArePostedInOrderOneAtATime(t *testing.T) {
	srv := testutil.StartServer(t, server.Options{PingInterval: 200 * time.Millisecond, NoSlots: true}, demo.Options{NoFeed: true})
	var (
		mu               sync.Mutex
		ids              []uint64
		inflight, maxAny int
	)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			http.Error(w, "no upgrades here", http.StatusForbidden)
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/send") {
			srv.Demo.Handler().ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
		if err != nil {
			return
		}
		frames := [][]byte{body}
		if len(body) > 0 && body[0] == '[' {
			var raw []json.RawMessage
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Errorf("a send body that is not a JSON array: %v", err)
			}
			frames = frames[:0]
			for _, f := range raw {
				frames = append(frames, f)
			}
		}
		mu.Lock()
		inflight++
		maxAny = max(maxAny, inflight)
		for _, f := range frames {
			if m, err := protocol.Decode(f); err == nil && m.Type == protocol.TypeRequest {
				ids = append(ids, m.ID)
			}
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // real time: a POST that takes a while, so frames queue behind it
		r.Body = io.NopCloser(bytes.NewReader(body))
		srv.Demo.Handler().ServeHTTP(w, r)
		mu.Lock()
		inflight--
		mu.Unlock()
	}))
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, "ws"+strings.TrimPrefix(front.URL, "http")+"/ws", &Options{Config: fastStage8(6)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitState(ctx, func(s State) bool { return s.Ready && s.Via == client.TransportHTTP }); err != nil {
		t.Fatalf("no READY over HTTP: %v", err)
	}
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			p := []byte(`{"i":` + strconv.Itoa(i) + `}`)
			res, err := c.Request(ctx, "echo", p)
			if err == nil && !bytes.Equal(res, p) {
				err = errors.New("echo answered " + string(res) + " for " + string(p))
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if maxAny != 1 {
		t.Fatalf("%d send POSTs at once, want 1", maxAny)
	}
	if len(ids) < n {
		t.Fatalf("the server got %d requests, want at least %d", len(ids), n)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("request ids out of order across the POSTs: %v", ids)
		}
	}
}
