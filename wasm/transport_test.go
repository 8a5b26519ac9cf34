//go:build js && wasm

package main

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/internal/stages"
)

// fakeWebSocket installs a WebSocket class on globalThis that records its
// instances (globalThis.__sockets) and what is sent and closed on them,
// and restores the real one when the test ends.
func fakeWebSocket(t *testing.T) {
	t.Helper()
	g := safejs.Global()
	orig, err := g.Get("WebSocket")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := g.Get("Function")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := fn.New(`globalThis.__sockets = [];
		return class { constructor(url) { this.url = url; this.sent = []; this.closed = null; globalThis.__sockets.push(this); }
			send(s) { this.sent.push(s); } close(code, reason) { this.closed = [code, reason]; } };`)
	if err != nil {
		t.Fatal(err)
	}
	class, err := mk.Invoke()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Set("WebSocket", class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Set("WebSocket", orig) })
}

func lastFake(t *testing.T) safejs.Value {
	t.Helper()
	arr, err := safejs.Global().Get("__sockets")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := arr.Length()
	if n == 0 {
		t.Fatal("no WebSocket was constructed")
	}
	v, err := arr.Index(n - 1)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func jsString(t *testing.T, v safejs.Value, path ...any) string {
	t.Helper()
	for _, p := range path {
		var err error
		switch p := p.(type) {
		case string:
			v, err = v.Get(p)
		case int:
			v, err = v.Index(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	switch v.Type() {
	case safejs.TypeString:
		s, _ := v.String()
		return s
	case safejs.TypeNumber:
		n, _ := v.Int()
		return strconv.Itoa(n)
	case safejs.TypeNull:
		return "null"
	}
	return "<" + v.Type().String() + ">"
}

// The WebSocket transport opens new WebSocket(url), reports onopen,
// onmessage (text frames; anything else as an empty frame) and onclose
// (code and reason) to its events, sends and closes on the socket, and
// release unhooks it.
func TestWebSocketTransport(t *testing.T) {
	fn, err := safejs.Global().Get("Function")
	if err != nil {
		t.Fatal(err)
	}
	// wsready.js's frameOnly, as it is there.
	frameOnly, err := fn.New("onmessage", "return (e) => onmessage(typeof e.data === 'string' ? e.data : undefined);")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("event", func(t *testing.T) { testWebSocketTransport(t, safejs.Undefined()) })
	t.Run("frameOnly", func(t *testing.T) { testWebSocketTransport(t, frameOnly) })
}

func testWebSocketTransport(t *testing.T, wrap safejs.Value) {
	fakeWebSocket(t)
	var got []string
	tr, err := openWebSocket("ws://example.test/ws", socketEvents{
		opened:  func() { got = append(got, "opened") },
		message: func(f []byte) bool { got = append(got, "message "+strconv.Quote(string(f))); return false },
		closed:  func(code int, reason string) { got = append(got, "closed "+strconv.Itoa(code)+" "+reason) },
	}, safejs.Undefined(), wrap)
	if err != nil {
		t.Fatal(err)
	}
	ws := lastFake(t)
	if u := jsString(t, ws, "url"); u != "ws://example.test/ws" {
		t.Fatalf("url %q", u)
	}
	obj := func(m map[string]any) safejs.Value {
		v, err := jsObject(m)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		handler string
		arg     []any
	}{
		{"onopen", nil},
		{"onmessage", []any{obj(map[string]any{"data": `{"type":"ping"}`})}},
		{"onmessage", []any{obj(map[string]any{"data": 7})}},
		{"onclose", []any{obj(map[string]any{"code": 4001, "reason": "expired"})}},
	} {
		if _, err := ws.Call(c.handler, c.arg...); err != nil {
			t.Fatalf("%s: %v", c.handler, err)
		}
	}
	want := []string{"opened", `message "{\"type\":\"ping\"}"`, `message ""`, "closed 4001 expired"}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if err := tr.send([]byte("frame")); err != nil {
		t.Fatal(err)
	}
	if err := tr.close(1000, "bye"); err != nil {
		t.Fatal(err)
	}
	if s, c := jsString(t, ws, "sent", 0), jsString(t, ws, "closed", 0)+" "+jsString(t, ws, "closed", 1); s != "frame" || c != "1000 bye" {
		t.Fatalf("sent %q, closed %q", s, c)
	}
	tr.release()
	for _, h := range []string{"onopen", "onmessage", "onclose"} {
		if v := jsString(t, ws, h); v != "null" {
			t.Fatalf("%s after release: %s", h, v)
		}
	}
}

// The first dial asks the page's takeWarm (wsready.js) for the socket
// preconnect() opened: given one, the transport is that socket, with the
// handlers takeWarm was handed (it sets them), and no WebSocket is
// constructed; given undefined, it opens its own. A first dial over HTTP
// calls takeWarm with no url, which drops the socket.
func TestWebSocketTransportTakesThePreconnectedSocket(t *testing.T) {
	fakeWebSocket(t)
	fn, err := safejs.Global().Get("Function")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := fn.New(`globalThis.__warmCalls = [];
		return (give) => (...args) => {
			globalThis.__warmCalls.push(args.length === 0 ? 'drop' : args[0]);
			if (!give) return undefined;
			const s = { url: args[0], sent: [], send(x) { this.sent.push(x); }, close() {} };
			[s.onopen, s.onmessage, s.onclose] = args.slice(1);
			globalThis.__warmSocket = s;
			return s;
		};`)
	if err != nil {
		t.Fatal(err)
	}
	warmer, err := mk.Invoke()
	if err != nil {
		t.Fatal(err)
	}
	warm := func(give bool) safejs.Value {
		v, err := warmer.Invoke(give)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var got []string
	ev := socketEvents{
		opened:  func() { got = append(got, "opened") },
		message: func(f []byte) bool { got = append(got, "message "+string(f)); return false },
		closed:  func(code int, reason string) { got = append(got, "closed "+strconv.Itoa(code)) },
	}
	tr, err := openTransport(dialSpec{url: "ws://example.test/ws", via: client.TransportWebSocket, warm: warm(true)}, ev)
	if err != nil {
		t.Fatal(err)
	}
	sockets, _ := safejs.Global().Get("__sockets")
	if n, _ := sockets.Length(); n != 0 {
		t.Fatalf("%d WebSockets constructed with a preconnected socket given", n)
	}
	ws, _ := safejs.Global().Get("__warmSocket")
	for _, h := range []string{"onopen", "onmessage"} {
		var arg []any
		if h == "onmessage" {
			m, _ := jsObject(map[string]any{"data": "hi"})
			arg = []any{m}
		}
		if _, err := ws.Call(h, arg...); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
	}
	if err := tr.send([]byte("frame")); err != nil {
		t.Fatal(err)
	}
	if g, s := strings.Join(got, ","), jsString(t, ws, "sent", 0); g != "opened,message hi" || s != "frame" {
		t.Fatalf("events %q, sent %q", g, s)
	}
	tr.release()
	if v := jsString(t, ws, "onopen"); v != "null" {
		t.Fatalf("onopen after release: %s", v)
	}

	// takeWarm had nothing that fits: the transport opens its own.
	if _, err := openTransport(dialSpec{url: "ws://example.test/ws", via: client.TransportWebSocket, warm: warm(false)}, ev); err != nil {
		t.Fatal(err)
	}
	if u := jsString(t, lastFake(t), "url"); u != "ws://example.test/ws" {
		t.Fatalf("own socket's url %q", u)
	}
	// A first dial over HTTP drops the preconnected socket.
	fakeHTTP(t)
	if _, err := openTransport(dialSpec{url: "ws://example.test/ws", via: client.TransportHTTP, warm: warm(true)}, ev); err != nil {
		t.Fatal(err)
	}
	calls, _ := safejs.Global().Get("__warmCalls")
	var seen []string
	n, _ := calls.Length()
	for i := 0; i < n; i++ {
		seen = append(seen, jsString(t, calls, i))
	}
	if s := strings.Join(seen, ","); s != "ws://example.test/ws,ws://example.test/ws,drop" {
		t.Fatalf("takeWarm calls %q", s)
	}
}

// Without a WebSocket constructor the opener says so.
func TestWebSocketTransportWithoutWebSocket(t *testing.T) {
	fakeWebSocket(t) // restores the real one after
	if err := safejs.Global().Set("WebSocket", safejs.Undefined()); err != nil {
		t.Fatal(err)
	}
	if _, err := openWebSocket("ws://example.test/ws", socketEvents{}, safejs.Undefined(), safejs.Undefined()); !errors.Is(err, errNoWebSocket) {
		t.Fatalf("open: %v", err)
	}
}

// fakeTransport records what the driver does with one socket.
type fakeTransport struct {
	url      string
	ev       socketEvents
	spec     dialSpec
	sent     int
	released bool
	held     int // what buffered reports
}

func (f *fakeTransport) send([]byte) error          { f.sent++; return nil }
func (f *fakeTransport) close(int, string) error    { return nil }
func (f *fakeTransport) release()                   { f.released = true }
func (f *fakeTransport) buffered() int              { return f.held }
func (f *fakeTransport) String() string             { return f.url }
func (f *fakeTransport) closedWith(c int, r string) { f.ev.closed(c, r) }

func holds(d *driver, f *fakeTransport) bool {
	for _, t := range d.sockets {
		if t == transport(f) {
			return true
		}
	}
	return false
}

// The driver drives any transport through the interface: EffDial opens one
// on the next URL in turn, the socket's events reach the core with its id
// (a close forgets and releases it), and an opener's error is an abnormal
// close of that socket.
func TestDriverDrivesATransport(t *testing.T) {
	cfg, err := stages.Config(stages.Max, func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	core, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var opened []*fakeTransport
	var tried []string // every URL the driver opened, or tried to
	failNext := false
	d := &driver{urls: []string{"ws://a.test/ws", "ws://b.test/ws"}, core: core, q: bridge.NewQueue(),
		sockets: map[client.SocketID]transport{}, promises: map[uint64]promise{}, tickets: map[uint64]uint64{}, aborted: map[uint64]bool{}}
	d.open = func(spec dialSpec, ev socketEvents) (transport, error) {
		url := spec.url
		tried = append(tried, url)
		if failNext {
			failNext = false
			return nil, errors.New("refused by the test")
		}
		f := &fakeTransport{url: url, ev: ev, spec: spec}
		opened = append(opened, f)
		return f, nil
	}
	d.timer, err = newTimer(func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer d.timer.release()
	now := time.Unix(1000, 0)
	run := func() { // the loop's work, at the test's instant, until nothing is queued
		d.apply()
		for steps := d.q.Take(); len(steps) > 0; steps = d.q.Take() {
			for _, step := range steps {
				step(now)
				d.apply()
			}
		}
	}
	core.Start(now)
	run()
	if len(opened) != 1 || opened[0].url != "ws://a.test/ws" || !holds(d, opened[0]) {
		t.Fatalf("after Start: opened %v, sockets %d", opened, len(d.sockets))
	}
	opened[0].ev.opened()
	run()
	if st := core.State(); st.Transport != client.Up {
		t.Fatalf("after open: transport %v", st.Transport)
	}
	// The socket closes; the next dial (at once or after a backoff) fails
	// to open; the one after opens.
	failNext = true
	opened[0].closedWith(1006, "")
	run()
	if !opened[0].released || holds(d, opened[0]) {
		t.Fatalf("after close: released %v, still held %v", opened[0].released, holds(d, opened[0]))
	}
	for i := 0; len(opened) < 2 && i < 20; i++ {
		now = now.Add(time.Minute) // past any backoff
		core.Tick(now)
		run()
	}
	if len(tried) != 3 || tried[0] != "ws://a.test/ws" || tried[1] != "ws://b.test/ws" || tried[2] != "ws://a.test/ws" {
		t.Fatalf("tried %q, want a, b (refused), a", tried)
	}
	if len(opened) != 2 || len(d.sockets) != 1 || !holds(d, opened[1]) {
		t.Fatalf("opened %v, holds %d sockets", opened, len(d.sockets))
	}
	if n := core.Stats().Closes; n != 2 {
		t.Fatalf("a close and a refused open made %d closes, want 2", n)
	}
}

// A frame received while the driver is idle is stepped inside its
// callback (no hop to the loop's goroutine); one received while a step is
// queued waits behind it, so the core sees events in the order they came.
// stepDriver is a driver at stage 8 (its core traced when trace) whose
// sockets are fakeTransports, *f the last one opened; the loop is the
// test's to run.
func stepDriver(t *testing.T, trace bool) (*driver, *client.Core, **fakeTransport) {
	t.Helper()
	cfg, err := stages.Config(stages.Max, func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trace = trace
	core, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := new(*fakeTransport)
	d := &driver{urls: []string{"ws://a.test/ws"}, core: core, q: bridge.NewQueue(),
		sockets: map[client.SocketID]transport{}, promises: map[uint64]promise{}, tickets: map[uint64]uint64{}, aborted: map[uint64]bool{}}
	d.open = func(spec dialSpec, ev socketEvents) (transport, error) {
		*f = &fakeTransport{url: spec.url, ev: ev, spec: spec}
		return *f, nil
	}
	d.timer, err = newTimer(func() {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.timer.release)
	return d, core, f
}

func TestFrameSteppedInItsCallback(t *testing.T) {
	d, core, fp := stepDriver(t, false)
	now := time.Now()
	run := func() { // the loop's work, until nothing is queued
		d.apply()
		for steps := d.q.Take(); len(steps) > 0; steps = d.q.Take() {
			for _, step := range steps {
				step(now)
				d.apply()
			}
		}
	}
	core.Start(now)
	run()
	f := *fp
	if f == nil {
		t.Fatal("no socket was opened")
	}
	f.ev.opened()
	run()
	// Idle: the frame (not JSON) is stepped at once, no loop run.
	f.ev.message([]byte("not a frame"))
	if n := core.Stats().BadFrames; n != 1 {
		t.Fatalf("after a frame with the driver idle: %d bad frames, want 1 (stepped in the callback)", n)
	}
	if !d.q.Idle() {
		t.Fatal("the frame stepped at once was also queued")
	}
	// A step queued first: the frame waits behind it.
	var order []string
	d.q.Push(func(time.Time) { order = append(order, "queued step") })
	f.ev.message([]byte("not a frame either"))
	if n := core.Stats().BadFrames; n != 1 {
		t.Fatalf("a frame overtook a queued step: %d bad frames before the loop ran", n)
	}
	d.q.Push(func(time.Time) { order = append(order, "after the frame:"+strconv.Itoa(core.Stats().BadFrames)) })
	run()
	if len(order) != 2 || order[0] != "queued step" || order[1] != "after the frame:2" {
		t.Fatalf("steps ran as %q, want the queued step, then the frame", order)
	}
	// A step running (busy): the frame waits for the loop.
	d.busy = true
	f.ev.message([]byte("nor this"))
	d.busy = false
	if n := core.Stats().BadFrames; n != 2 {
		t.Fatalf("a frame during a step was stepped inside it: %d bad frames", n)
	}
	run()
	if n := core.Stats().BadFrames; n != 3 {
		t.Fatalf("after the loop ran: %d bad frames, want 3", n)
	}
}

// A page that calls the client from inside one of its callbacks (a
// request made in an update's callback, say) while a frame is stepped in
// its socket's callback (stepNow) queues a step; syscall/js runs every
// runnable goroutine before that call returns to JavaScript, the driver's
// loop among them. The loop must leave the queue alone until the frame's
// step has carried out all its effects: the core is never stepped while
// its effects are being read (they share one slice).
func TestPageCallInsideAFrameStepWaitsForIt(t *testing.T) {
	d, core, fp := stepDriver(t, true)
	var order []string
	done := make(chan struct{})
	// The page's API call: it queues a step, as every call does.
	call, err := funcOf(func(safejs.Value, []safejs.Value) any {
		d.q.Push(func(time.Time) {
			order = append(order, "page's step")
			close(done)
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Release()
	ctor, err := safejs.Global().Get("Function")
	if err != nil {
		t.Fatal(err)
	}
	// onEvent: the frame's step traces it (a bad frame); the page calls the
	// client from there, once.
	armed := false
	mark, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		if armed {
			armed = false
			order = append(order, "callback")
			return true
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mark.Release()
	onEvent, err := ctor.New("mark", "call", `return (e) => { if (mark()) { call(); } };`)
	if err != nil {
		t.Fatal(err)
	}
	d.cb.onEvent, err = onEvent.Invoke(mark.Value(), call.Value())
	if err != nil {
		t.Fatal(err)
	}
	d.q.Push(func(now time.Time) { core.Start(now) })
	go d.loop()
	defer func() { // stop the core, the page's callbacks out of it, and wait for the loop to see it
		stopped := make(chan struct{})
		d.q.Push(func(now time.Time) { d.cb.onEvent = safejs.Undefined(); core.Stop(now); close(stopped) })
		<-stopped
	}()
	if !poll.Until(5*time.Second, func() bool { return *fp != nil && holds(d, *fp) }) {
		t.Fatal("no socket was opened")
	}
	f := *fp
	f.ev.opened()
	opened := make(chan struct{})
	d.q.Push(func(time.Time) { close(opened) })
	<-opened
	if !poll.Until(5*time.Second, func() bool { return d.q.Idle() && !d.busy }) {
		t.Fatal("the loop never went idle")
	}
	// The frame arrives in a callback from JavaScript, as a socket's does.
	in, err := funcOf(func(safejs.Value, []safejs.Value) any {
		f.ev.message([]byte("not a frame"))
		order = append(order, "frame's step done")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	armed = true
	if _, err := in.Value().Invoke(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the page's step never ran: %q", order)
	}
	if want := []string{"callback", "frame's step done", "page's step"}; !slices.Equal(order, want) {
		t.Fatalf("ran as %q, want %q: the loop stepped the core inside the frame's step", order, want)
	}
}
