//go:build !js

package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
	"go.uber.org/goleak"
)

// TestMain fails the run if goroutines outlive the tests. An embedded NATS
// server's store and clock goroutines end a little after its
// WaitForShutdown, and on a loaded machine later than goleak's own wait
// (about a second), so a leak is one still there after 10 s.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var err error
		for end := time.Now().Add(10 * time.Second); ; {
			if err = goleak.Find(); err == nil || time.Now().After(end) {
				break
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

type fixture struct {
	t    *testing.T
	srv  *Server
	demo TestDemo
	hs   *httptest.Server
	url  string
}

// newFixture serves the demo's site over a server with o (nil: the
// fixture's defaults), as wsready serve does, without files; d (at most
// one) are the demo's options.
func newFixture(t *testing.T, o *Options, d ...DemoOptions) *fixture {
	t.Helper()
	return newSite(t, o, nil, d...)
}

// newSite is newFixture with files served at /.
func newSite(t *testing.T, o *Options, files fs.FS, d ...DemoOptions) *fixture {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.PingInterval == 0 {
		o.PingInterval = 100 * time.Millisecond
	}
	var do DemoOptions
	switch len(d) {
	case 0:
	case 1:
		do = d[0]
	default:
		t.Fatalf("newSite: %d DemoOptions, want at most one", len(d))
	}
	if do.FeedInterval == 0 {
		do.FeedInterval = 20 * time.Millisecond
	}
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := mustNew(t, o)
	demo, err := NewTestDemo(srv, files, do)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(demo.Handler()) // the site wsready serve serves
	f := &fixture{t: t, srv: srv, demo: demo, hs: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"}
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return f
}

// set flips a demo switch (Demo.Set); an error fails the test.
func (f *fixture) set(name string, value any) {
	f.t.Helper()
	if err := f.demo.Set(name, value); err != nil {
		f.t.Fatal(err)
	}
}

// peer is a raw protocol client: every frame it receives lands in frames.
type peer struct {
	t      *testing.T
	ws     *websocket.Conn
	frames chan protocol.Message
	closed chan error
	cancel context.CancelFunc
}

func (f *fixture) dial() *peer {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws, _, err := websocket.Dial(ctx, f.url, nil)
	if err != nil {
		cancel()
		f.t.Fatalf("dial: %v", err)
	}
	p := &peer{t: f.t, ws: ws, frames: make(chan protocol.Message, 1024), closed: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				p.closed <- err
				return
			}
			m, err := protocol.Decode(b)
			if err != nil {
				f.t.Errorf("server sent undecodable frame %s: %v", b, err)
				continue
			}
			p.frames <- m
		}
	}()
	f.t.Cleanup(func() {
		ws.CloseNow()
		cancel()
		<-p.closed
	})
	return p
}

// waitOpen waits until the server counts n open connections: a client's
// dial returns when it has the 101, before the server has registered it.
func (f *fixture) waitOpen(n int) {
	f.t.Helper()
	waitFor(f.t, 2*time.Second, "open connections", func() bool { return f.srv.Stats().Open == n })
}

func (p *peer) sendRaw(s string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

func (p *peer) send(m protocol.Message) { p.sendRaw(string(protocol.Encode(m))) }

// next returns the next frame of type typ, skipping others, or fails after d.
func (p *peer) next(typ protocol.Type, d time.Duration) protocol.Message {
	p.t.Helper()
	m, ok := p.maybe(typ, d)
	if !ok {
		p.t.Fatalf("no %s frame within %v", typ, d)
	}
	return m
}

func (p *peer) maybe(typ protocol.Type, d time.Duration) (protocol.Message, bool) {
	deadline := time.After(d)
	for {
		select {
		case m := <-p.frames:
			if m.Type == typ {
				return m, true
			}
		case <-deadline:
			return protocol.Message{}, false
		}
	}
}

// silentFor asserts that no frame at all arrives for d.
func (p *peer) silentFor(d time.Duration) {
	p.t.Helper()
	select {
	case m := <-p.frames:
		p.t.Fatalf("expected silence, got %+v", m)
	case <-time.After(d):
	}
}

func (p *peer) closeCode(d time.Duration) websocket.StatusCode {
	p.t.Helper()
	select {
	case err := <-p.closed:
		p.closed <- err // for Cleanup
		return websocket.CloseStatus(err)
	case <-time.After(d):
		p.t.Fatalf("connection not closed within %v", d)
		return 0
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll.Until(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// serverTimersRun lets d of wall time pass for the server's own timers:
// the liveness sweep, HTTPAttachTimeout, the hub's idle topics, a frozen
// stream's socket check. They run on the wall clock (Options.Now moves
// timestamps, not timers), so a test that asserts what they did, or that
// they spared something, gives them that time.
func serverTimersRun(d time.Duration) {
	time.Sleep(d) // real time: the server's timers are wall-clock timers
}

// settledGoroutines waits until runtime.NumGoroutine is the same for five
// looks in a row (goroutines that were ending have ended, ones on their
// way have started) and returns it; 5 s without that fails t.
func settledGoroutines(t *testing.T) int {
	t.Helper()
	n, same := runtime.NumGoroutine(), 0
	if !poll.Until(5*time.Second, func() bool {
		if m := runtime.NumGoroutine(); m != n {
			n, same = m, 0
		} else {
			same++
		}
		return same == 5
	}) {
		t.Fatalf("the goroutine count did not settle within 5 s (last %d)", n)
	}
	return n
}

func TestPingArrivesAtOnceThenAtTheInterval(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: 200 * time.Millisecond})
	start := time.Now()
	p := f.dial()
	first := p.next(protocol.TypePing, time.Second)
	if first.IntervalMs != 200 {
		t.Fatalf("intervalMs = %d, want 200", first.IntervalMs)
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Fatalf("first ping after %v, want at once", d)
	}
	p.next(protocol.TypePing, time.Second)
	gap := time.Since(start)
	if gap < 180*time.Millisecond {
		t.Fatalf("second ping after %v, want about one interval", gap)
	}
}

func TestSubscribeIsAcknowledgedAndFeedSeqHasNoGaps(t *testing.T) {
	f := newFixture(t, nil)
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	ack := p.next(protocol.TypeSubscribed, time.Second)
	if ack.Topic != "feed" {
		t.Fatalf("ack topic %q", ack.Topic)
	}
	prev := p.next(protocol.TypeUpdate, time.Second)
	for range 20 {
		u := p.next(protocol.TypeUpdate, time.Second)
		if u.Seq != prev.Seq+1 {
			t.Fatalf("seq %d after %d", u.Seq, prev.Seq)
		}
		if !json.Valid(u.Data) {
			t.Fatalf("update data %s", u.Data)
		}
		prev = u
	}
	// A topic nobody published to exists when joined: subscribed from 1.
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "nope"})
	if m := p.next(protocol.TypeSubscribed, time.Second); m.Topic != "nope" || m.From != 1 || m.Head != 0 {
		t.Fatalf("subscribe to a new topic: %+v", m)
	}
}

func TestRequestsAreAnsweredWithTheirID(t *testing.T) {
	f := newFixture(t, nil)
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 41, Method: "echo", Params: []byte(`{"text":"hi"}`)})
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 42, Method: "time"})
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 43, Method: "nope"})
	got := map[uint64]protocol.Message{}
	for len(got) < 3 {
		r := p.next(protocol.TypeResponse, time.Second)
		got[r.ID] = r
	}
	if string(got[41].Result) != `{"text":"hi"}` {
		t.Errorf("echo result %s", got[41].Result)
	}
	var tm struct{ UnixMs int64 }
	if err := json.Unmarshal(got[42].Result, &tm); err != nil || tm.UnixMs <= 0 {
		t.Errorf("time result %s: %v", got[42].Result, err)
	}
	if got[43].Error == nil || got[43].Error.Code != protocol.ErrUnknownMethod {
		t.Errorf("unknown method answered %+v", got[43])
	}
}

func TestFreezeSilencesOpenAndNewConnectionsWithoutClosing(t *testing.T) {
	f := newFixture(t, nil)
	old := f.dial()
	old.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	old.next(protocol.TypeUpdate, time.Second)
	f.set("freeze", true)
	time.Sleep(50 * time.Millisecond) // real time: frames already on the wire may still land
	for len(old.frames) > 0 {
		<-old.frames
	}
	// A connection opened during the freeze completes its handshake ...
	fresh := f.dial()
	fresh.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "time"})
	// ... and then neither side hears anything, and nothing closes.
	old.silentFor(400 * time.Millisecond)
	fresh.silentFor(50 * time.Millisecond)
	if st := f.srv.Stats(); st.Open != 2 || !f.demo.Faults()["freeze"] || !st.Connections[1].Frozen {
		t.Fatalf("stats during freeze: %+v", st)
	}
	f.set("freeze", false)
	// Traffic resumes, and the request sent during the freeze is answered.
	old.next(protocol.TypeUpdate, time.Second)
	if r := fresh.next(protocol.TypeResponse, time.Second); r.ID != 1 {
		t.Fatalf("response id %d", r.ID)
	}
	fresh.next(protocol.TypePing, time.Second)
}

func TestFreezeHoldsACloseHandshakeUntilItEnds(t *testing.T) {
	f := newFixture(t, nil)
	p := f.dial()
	p.next(protocol.TypePing, time.Second)
	f.set("freeze", true)
	done := make(chan error, 1)
	go func() { done <- p.ws.Close(websocket.StatusNormalClosure, "bye") }()
	select {
	case err := <-done:
		t.Fatalf("close completed during freeze: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if f.srv.Stats().Open != 1 {
		t.Fatal("server let go of the frozen connection")
	}
	f.set("freeze", false)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("close did not complete after the freeze")
	}
	waitFor(t, 2*time.Second, "open count 0", func() bool { return f.srv.Stats().Open == 0 })
}

func TestServiceDownDropsSubscriptionsButKeepsPinging(t *testing.T) {
	f := newFixture(t, nil)
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	p.next(protocol.TypeSubscribed, time.Second)
	f.set("serviceDown", true)
	u := p.next(protocol.TypeUnsubscribed, time.Second)
	if u.Reason != "service_unavailable" {
		t.Fatalf("reason %q", u.Reason)
	}
	p.next(protocol.TypePing, time.Second)
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 5, Method: "time"})
	if m, ok := p.maybe(protocol.TypeSubscribed, 300*time.Millisecond); ok {
		t.Fatalf("subscribe answered while down: %+v", m)
	}
	if _, ok := p.maybe(protocol.TypeResponse, 100*time.Millisecond); ok {
		t.Fatal("request answered while down")
	}
	if _, ok := p.maybe(protocol.TypeUpdate, 100*time.Millisecond); ok {
		t.Fatal("feed delivered while down")
	}
	f.set("serviceDown", false)
	// No data until the client subscribes again.
	if _, ok := p.maybe(protocol.TypeUpdate, 200*time.Millisecond); ok {
		t.Fatal("feed resumed without a new subscribe")
	}
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	p.next(protocol.TypeSubscribed, time.Second)
	p.next(protocol.TypeUpdate, time.Second)
}

func TestSlowRepliesArriveAfterTheDelay(t *testing.T) {
	f := newFixture(t, &Options{}, DemoOptions{SlowReplyDelay: 400 * time.Millisecond})
	p := f.dial()
	f.set("slowReplies", true)
	start := time.Now()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 9, Method: "echo", Params: []byte(`1`)})
	p.next(protocol.TypePing, time.Second) // pings are unaffected
	r := p.next(protocol.TypeResponse, 2*time.Second)
	if d := time.Since(start); d < 380*time.Millisecond || r.ID != 9 {
		t.Fatalf("response %d after %v", r.ID, d)
	}
	f.set("slowReplies", false)
	start = time.Now()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 10, Method: "echo", Params: []byte(`1`)})
	p.next(protocol.TypeResponse, time.Second)
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Fatalf("reply after switch off took %v", d)
	}
}

func TestFlappingClosesEveryConnectionSoonAfterAccept(t *testing.T) {
	f := newFixture(t, &Options{}, DemoOptions{FlapAfter: 150 * time.Millisecond})
	open := f.dial()
	f.set("flapping", true)
	if code := open.closeCode(2 * time.Second); code != protocol.CloseFlapping {
		t.Fatalf("open connection closed with %d", code)
	}
	start := time.Now()
	p := f.dial()
	if code := p.closeCode(2 * time.Second); code != protocol.CloseFlapping {
		t.Fatalf("new connection closed with %d", code)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 1500*time.Millisecond {
		t.Fatalf("closed after %v", d)
	}
	f.set("flapping", false)
	q := f.dial()
	q.next(protocol.TypePing, time.Second)
	q.next(protocol.TypeWelcome, time.Second) // queued right after the first ping
	q.silentFor(0)
	if _, ok := q.maybe(protocol.TypePing, 400*time.Millisecond); !ok {
		t.Fatal("connection after flapping is off did not stay")
	}
}

func TestRestartDropsAllAndRefusesForTheDowntime(t *testing.T) {
	clock := newTestClock() // the downtime ends by Options.Now
	f := newFixture(t, &Options{RefuseWith: RefuseHTTP, Now: clock.now}, DemoOptions{RestartDowntime: 500 * time.Millisecond})
	a, b := f.dial(), f.dial()
	f.set("restart", true)
	for _, p := range []*peer{a, b} {
		if code := p.closeCode(2 * time.Second); code != protocol.CloseServiceRestart {
			t.Fatalf("closed with %d, want 1012", code)
		}
	}
	_, resp, err := websocket.Dial(context.Background(), f.url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("dial during restart: err %v resp %+v", err, resp)
	}
	if !f.demo.Faults()["restart"] {
		t.Fatal("stats do not show the restart")
	}
	clock.advance(600 * time.Millisecond)
	c := f.dial()
	c.next(protocol.TypePing, time.Second)
	if st := f.srv.Stats(); f.demo.Faults()["restart"] || st.RefusedWindow != 1 {
		t.Fatalf("after downtime: %+v", st)
	}
}

func TestCountersMatchWhatTheClientsDid(t *testing.T) {
	f := newFixture(t, nil)
	f.demo.ResetCounters()
	const n = 5
	var peers []*peer
	for range n {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
		p.next(protocol.TypeSubscribed, time.Second)
		peers = append(peers, p)
	}
	st := f.srv.Stats()
	if st.Open != n || st.HandshakesWindow != n || st.Handshakes != n || st.Subscribed != n || len(st.Connections) != n {
		t.Fatalf("stats after %d dials: %+v", n, st)
	}
	for _, p := range peers {
		p.ws.Close(websocket.StatusNormalClosure, "")
	}
	waitFor(t, 2*time.Second, "open count 0", func() bool { return f.srv.Stats().Open == 0 })
	f.demo.ResetCounters()
	if st := f.srv.Stats(); st.HandshakesWindow != 0 || st.Handshakes != n {
		t.Fatalf("after reset: %+v", st)
	}
}

func TestBadInputGetsAnErrorFrameAndTheConnectionStays(t *testing.T) {
	f := newFixture(t, nil)
	bad, neighbour := f.dial(), f.dial()
	neighbour.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	neighbour.next(protocol.TypeSubscribed, time.Second)
	cases := []struct{ frame, code string }{
		{`hello`, protocol.ErrBadJSON},
		{`[1]`, protocol.ErrNotObject},
		{`{"type":"dance"}`, protocol.ErrUnknownType},
		{`{"type":"request","method":"echo"}`, protocol.ErrMissingField},
		{`{"type":"request","id":"7","method":"echo"}`, protocol.ErrWrongType},
		{`{"type":"ping","intervalMs":5}`, protocol.ErrUnexpected},
	}
	for _, c := range cases {
		bad.sendRaw(c.frame)
		e := bad.next(protocol.TypeError, time.Second)
		if e.Error.Code != c.code {
			t.Errorf("%s: code %q want %q", c.frame, e.Error.Code, c.code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	bad.ws.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3})
	if e := bad.next(protocol.TypeError, time.Second); e.Error.Code != protocol.ErrNotText {
		t.Errorf("binary frame: %q", e.Error.Code)
	}
	// Still usable after all of that.
	bad.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "echo", Params: []byte(`"ok"`)})
	if r := bad.next(protocol.TypeResponse, time.Second); string(r.Result) != `"ok"` {
		t.Fatalf("after bad input: %+v", r)
	}
	// An oversized frame closes that connection with 1009 and nothing else.
	bad.sendRaw(`{"type":"request","id":2,"method":"echo","params":"` + strings.Repeat("x", protocol.MaxFrameBytes) + `"}`)
	if code := bad.closeCode(2 * time.Second); code != websocket.StatusMessageTooBig {
		t.Fatalf("oversized frame closed with %d", code)
	}
	neighbour.next(protocol.TypeUpdate, time.Second)
	neighbour.send(protocol.Message{Type: protocol.TypeRequest, ID: 3, Method: "time"})
	neighbour.next(protocol.TypeResponse, time.Second)
}

func TestAPanicInAHandlerStaysWithItsConnection(t *testing.T) {
	// A hook that runs on the reader (a method's panic is its own call's:
	// requests_test.go).
	f := newFixture(t, &Options{Authorize: func(_ context.Context, _ Identity, a Action) error {
		if a.Method == "boom" {
			panic("test panic in a hook")
		}
		return nil
	}})
	p, other := f.dial(), f.dial()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "boom"})
	if e := p.next(protocol.TypeError, time.Second); e.Error.Code != protocol.ErrInternal {
		t.Fatalf("panic answered with %+v", e)
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "time"})
	p.next(protocol.TypeResponse, time.Second)
	other.send(protocol.Message{Type: protocol.TypeRequest, ID: 3, Method: "time"})
	other.next(protocol.TypeResponse, time.Second)
}

func TestCrossOriginUpgradeNeedsTheFlag(t *testing.T) {
	f := newFixture(t, nil)
	hdr := http.Header{"Origin": {"http://evil.example"}}
	ws, _, err := websocket.Dial(context.Background(), f.url, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("cross-origin dial: %v", err)
	}
	// Accepted only to be closed with 1008 and a reason a page can show.
	_, _, err = ws.Read(context.Background())
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != protocol.ReasonOriginNotAllowed {
		t.Fatalf("cross-origin: %v", err)
	}
	if f.srv.Stats().Open != 0 {
		t.Fatal("a cross-origin connection was registered")
	}
	g := newFixture(t, &Options{OriginPatterns: []string{"evil.example"}})
	ws, _, err = websocket.Dial(context.Background(), g.url, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("listed origin refused: %v", err)
	}
	ws.CloseNow()
}

func TestFaultsAPIRejectsBadInput(t *testing.T) {
	f := newFixture(t, &Options{Demo: true})
	for _, body := range []string{`{"freeze":tru`, `{"explode":true}`, `{"freeze":"yes"}`, `{"freeze":true} {}`} {
		resp, err := http.Post(f.hs.URL+"/api/faults", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Error == "" {
			t.Errorf("%s: status %d error %q", body, resp.StatusCode, e.Error)
		}
	}
	if f.demo.Faults()["freeze"] {
		t.Fatal("a rejected request changed a switch")
	}
	resp, err := http.Post(f.hs.URL+"/api/faults", "application/json", strings.NewReader(`{"slowReplies":true,"serviceDown":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Switches []struct {
			Name string `json:"name"`
			On   bool   `json:"on"`
		} `json:"switches"`
	}
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	on := map[string]bool{}
	for _, sw := range got.Switches {
		on[sw.Name] = sw.On
	}
	if !on["slowReplies"] || !on["serviceDown"] || on["freeze"] || len(got.Switches) != len(f.demo.Faults()) {
		t.Fatalf("faults after POST: %+v", got)
	}
	var st struct {
		Stats
		Faults map[string]bool `json:"faults"` // the demo's part
	}
	getJSON(t, f.hs.URL+"/api/stats", &st)
	if !st.Faults["slowReplies"] || st.PingIntervalMs != 100 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStaticServesPrecompressedWasmWithValidators(t *testing.T) {
	fsys := fstest.MapFS{
		"index.html":       {Data: []byte("<!doctype html>")},
		"wsready.wasm":     {Data: []byte("\x00asm raw")},
		"wsready.wasm.gz":  {Data: []byte("gzipped")},
		"nested/other.css": {Data: []byte("body{}")},
	}
	f := newSite(t, nil, fsys)
	req, _ := http.NewRequest("GET", f.hs.URL+"/wsready.wasm", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/wasm" || resp.Header.Get("Content-Encoding") != "gzip" || string(body) != "gzipped" {
		t.Fatalf("wasm: %v %q", resp.Header, body)
	}
	etag := resp.Header.Get("ETag")
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation status %d", resp.StatusCode)
	}
	req.Header.Del("If-None-Match")
	req.Header.Set("Accept-Encoding", "identity")
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "\x00asm raw" || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("identity: %q %v", body, resp.Header)
	}
	for path, want := range map[string]int{"/": 200, "/nested/other.css": 200, "/missing": 404, "/../server.go": 404} {
		if code := getStatus(t, f.hs.URL+path, ""); code != want {
			t.Errorf("%s: %d want %d", path, code, want)
		}
	}
}

func TestCloseEndsEveryGoroutineEvenWhileFrozen(t *testing.T) {
	o := &Options{PingInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := mustNew(t, o)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				readErr <- err
				return
			}
		}
	}()
	demo, err := NewTestDemo(srv, nil, DemoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Set("freeze", true); err != nil {
		t.Fatal(err)
	}
	if err := demo.Set("slowReplies", true); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
	if err := <-readErr; websocket.CloseStatus(err) != websocket.StatusGoingAway && !errors.Is(err, io.EOF) {
		t.Fatalf("client saw %v, want 1001", err)
	}
}

// getEncoded GETs url with Accept-Encoding accept, through a transport
// that decodes nothing, and returns the response and its body as sent.
func getEncoded(t *testing.T, url, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept-Encoding", accept)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// A text file with no precompressed sibling is gzipped by StaticHandler
// itself when that pays (big enough, compressible); the rest go as they
// are, and a precompressed sibling is never replaced.
func TestStaticGzipsTextFilesItself(t *testing.T) {
	js := []byte(strings.Repeat("export const answer = () => 42; // the page's script\n", 100))
	noise := make([]byte, 4096)
	rand.NewChaCha8([32]byte{1}).Read(noise) // a .txt that gzip cannot shrink
	letters := make([]byte, 16<<10)
	rand.NewChaCha8([32]byte{2}).Read(letters)
	for i := range letters {
		letters[i] = 'a' + letters[i]%26 // gzipped, still more than net/http buffers before it must chunk
	}
	fsys := fstest.MapFS{
		"big.js":      {Data: letters},
		"app.js":      {Data: js},
		"tiny.css":    {Data: []byte("body{margin:0}")},
		"noise.txt":   {Data: noise},
		"big.wasm":    {Data: bytes.Repeat([]byte{0}, 4096)},
		"given.js":    {Data: js},
		"given.js.gz": {Data: []byte("precompressed")},
	}
	f := newSite(t, nil, fsys)
	get := func(path, accept string) (*http.Response, []byte) { return getEncoded(t, f.hs.URL+path, accept) }
	resp, body := get("/app.js", "gzip, deflate, br")
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" || len(body) >= len(js)/4 || resp.ContentLength != int64(len(body)) {
		t.Fatalf("app.js with gzip accepted: %v, %d bytes of %d", resp.Header, len(body), len(js))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := io.ReadAll(zr); err != nil || !bytes.Equal(plain, js) {
		t.Fatalf("app.js gunzipped: %v, %d bytes, want the file's %d", err, len(plain), len(js))
	}
	gzETag := resp.Header.Get("ETag")
	// A stored encoding's length is known: said, not chunked.
	if resp, body := get("/big.js", "gzip"); resp.Header.Get("Content-Encoding") != "gzip" || len(body) < 8<<10 || resp.ContentLength != int64(len(body)) {
		t.Fatalf("big.js: %v, %d bytes, Content-Length %d: want gzip with its length", resp.Header, len(body), resp.ContentLength)
	}
	resp, body = get("/app.js", "br")
	if resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, js) || resp.Header.Get("ETag") == gzETag {
		t.Fatalf("app.js without gzip accepted: %v, %d bytes", resp.Header, len(body))
	}
	for _, p := range []string{"/tiny.css", "/noise.txt", "/big.wasm"} {
		if resp, body := get(p, "gzip"); resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, fsys[p[1:]].Data) {
			t.Errorf("%s: %v, %d bytes: want it as it is", p, resp.Header, len(body))
		}
	}
	if _, body := get("/given.js", "gzip"); string(body) != "precompressed" {
		t.Errorf("given.js: %q, want its own .gz", body)
	}
}

// Brotli before gzip by q-value, identity when nothing fits; hashed names
// are immutable; the client's files may be loaded cross-origin.
func TestStaticNegotiatesEncodingAndCaching(t *testing.T) {
	fsys := fstest.MapFS{
		"wsready.wasm":    {Data: []byte("\x00asm raw")},
		"wsready.wasm.gz": {Data: []byte("gzipped")},
		"wsready.wasm.br": {Data: []byte("brotli")},
		"index.html":      {Data: []byte("<!doctype html>")},
	}
	f := newSite(t, nil, fsys)
	get := func(path, accept string) (*http.Response, string) {
		resp, b := getEncoded(t, f.hs.URL+path, accept)
		return resp, string(b)
	}
	for accept, want := range map[string]string{
		"gzip, deflate, br": "brotli", "br;q=0.5, gzip": "gzipped", "gzip": "gzipped", "br": "brotli",
		"identity": "\x00asm raw", "": "\x00asm raw", "gzip;q=0, br;q=0": "\x00asm raw", "zstd": "\x00asm raw",
	} {
		resp, body := get("/wsready.wasm", accept)
		if body != want || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("Accept-Encoding %q: %q %v", accept, body, resp.Header)
		}
	}
	sum := sha256.Sum256([]byte("\x00asm raw"))
	resp, body := get("/"+hashedName("wsready.wasm", hex.EncodeToString(sum[:8])), "br")
	if resp.StatusCode != 200 || body != "brotli" || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("hashed name: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := get("/wsready.0123456789abcdef.wasm", ""); resp.StatusCode != 404 {
		t.Fatalf("a wrong hash: %d", resp.StatusCode)
	}
	if resp, _ := get("/index.html", ""); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("the page itself is not for other origins")
	}
}

// deadlineWriter records the write deadlines set on a response.
type deadlineWriter struct {
	http.ResponseWriter
	deadlines []time.Time
}

func (d *deadlineWriter) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineWriter) SetReadDeadline(time.Time) error { return nil }

// A static file's response may take RequestTimeout plus its body's time at
// 16 KiB/s (a 650 KB wasm on a slow link is not cut off at 30 s); a small
// one keeps about RequestTimeout, and so does a HEAD.
func TestStaticGivesABigFileTimeToSend(t *testing.T) {
	srv := mustNew(t, &Options{RequestTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { srv.Close() })
	h := srv.StaticHandler(fstest.MapFS{
		"big.wasm":  {Data: bytes.Repeat([]byte{1}, 640<<10)},
		"tiny.wasm": {Data: []byte("\x00asm")},
	})
	for _, tc := range []struct {
		method, path string
		extra        time.Duration
	}{
		{"GET", "/big.wasm", 40 * time.Second},
		{"GET", "/tiny.wasm", 0},
		{"HEAD", "/big.wasm", 0},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Host = "localhost"
		w := &deadlineWriter{ResponseWriter: httptest.NewRecorder()}
		start := time.Now()
		h.ServeHTTP(w, req)
		if len(w.deadlines) == 0 {
			t.Fatalf("%s %s: no write deadline", tc.method, tc.path)
		}
		got := w.deadlines[len(w.deadlines)-1].Sub(start)
		if want := 2*time.Second + tc.extra; got < want-time.Second/2 || got > want+time.Second/2 {
			t.Errorf("%s %s: write deadline %v after the request, want about %v", tc.method, tc.path, got, want)
		}
	}
}
