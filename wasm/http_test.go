//go:build js && wasm

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"
)

// js runs body as a JS function of the named parameters with args.
func js(t *testing.T, params []string, body string, args ...any) safejs.Value {
	t.Helper()
	fn, err := safejs.Global().Get("Function")
	if err != nil {
		t.Fatal(err)
	}
	ctorArgs := make([]any, 0, len(params)+1)
	for _, p := range params {
		ctorArgs = append(ctorArgs, p)
	}
	f, err := fn.New(append(ctorArgs, body)...)
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.Invoke(args...)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return v
}

// fakeHTTP installs a fetch that records every call (globalThis.__fetches:
// url, method, body, aborted) and answers only when the test says
// (__respond, __reject), and an EventSource that records its instances
// (__sources) and emits what the test says (__emit). The real ones (if
// any) come back when the test ends.
func fakeHTTP(t *testing.T) {
	t.Helper()
	g := safejs.Global()
	origFetch, _ := g.Get("fetch")
	origES, _ := g.Get("EventSource")
	js(t, nil, `
		globalThis.__fetches = [];
		globalThis.fetch = (url, init = {}) => new Promise((resolve, reject) => {
			const f = { url: String(url), method: init.method || 'GET', body: init.body, resolve, reject, aborted: false,
				contentType: init.headers ? init.headers['Content-Type'] : undefined };
			if (init.signal) init.signal.addEventListener('abort', () => { f.aborted = true; reject(new Error('aborted')); });
			globalThis.__fetches.push(f);
		});
		globalThis.__respond = (i, status, body, headers) => {
			globalThis.__fetches[i].resolve(new Response(status === 204 ? null : body, { status, headers: headers || {} }));
		};
		globalThis.__reject = (i) => globalThis.__fetches[i].reject(new TypeError('failed to fetch'));
		globalThis.__sources = [];
		globalThis.EventSource = class {
			constructor(url) { this.url = url; this.listeners = {}; this.closed = false; globalThis.__sources.push(this); }
			addEventListener(name, fn) { (this.listeners[name] = this.listeners[name] || []).push(fn); }
			close() { this.closed = true; }
		};
		globalThis.__emit = (i, name, data) => {
			for (const fn of globalThis.__sources[i].listeners[name] || []) fn(data === undefined ? {} : { data });
		};`)
	t.Cleanup(func() {
		g.Set("fetch", origFetch)
		g.Set("EventSource", origES)
	})
}

// jsRuns lets the JS event loop run for d of real time (a Go sleep yields
// to it). Real time is the point: the browser driver's timers are
// setTimeout's and its callbacks (promises, channels, sockets) the event
// loop's, which no fake clock reaches (testing/synctest fakes Go's timers
// only). A test also waits on it to see that nothing more happens.
func jsRuns(d time.Duration) { time.Sleep(d) } // real time: the event loop's

// settle lets the event loop run the promises' callbacks.
func settle() { jsRuns(30 * time.Millisecond) }

// waitFor lets the event loop run until cond holds (5 s at most: the
// machine may be loaded).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); jsRuns(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
	}
}

func sourceCount(t *testing.T) int {
	t.Helper()
	n, _ := js(t, nil, `return globalThis.__sources.length`).Int()
	return n
}

func fetchCount(t *testing.T) int {
	t.Helper()
	n, _ := js(t, nil, `return globalThis.__fetches.length`).Int()
	return n
}

func fetchField(t *testing.T, i int, field string) string {
	t.Helper()
	return jsString(t, js(t, nil, `return globalThis.__fetches`), i, field)
}

// recorder collects a transport's events; its run executes at once (the
// driver's would queue the step).
type recorder struct{ got []string }

func (r *recorder) events() socketEvents {
	return socketEvents{
		opened:  func() { r.got = append(r.got, "opened") },
		message: func(f []byte) bool { r.got = append(r.got, "message "+string(f)); return false },
		closed:  func(code int, reason string) { r.got = append(r.got, "closed "+strconv.Itoa(code)+" "+reason) },
		run:     func(step func()) { step() },
	}
}

func (r *recorder) last() string {
	if len(r.got) == 0 {
		return ""
	}
	return r.got[len(r.got)-1]
}

// The HTTP transport: POST <base>/session with the ticket, the stream on
// <base>/sse?session=, the server's frames from it, the client's by POST
// <base>/send (one at a time: what is sent meanwhile goes in the next, as
// an array), the bytes not yet through counted as buffered, the core's auth
// frame not sent (the ticket went with the session), and the server's
// close event reported with its code.
func TestHTTPTransport(t *testing.T) {
	fakeHTTP(t)
	var r recorder
	tr, err := openHTTP(dialSpec{url: "ws://h.test/ws", via: client.TransportHTTP, token: `tok"1`}, r.events())
	if err != nil {
		t.Fatal(err)
	}
	ht := tr.(*httpTransport)
	if u, m, b, ct := fetchField(t, 0, "url"), fetchField(t, 0, "method"), fetchField(t, 0, "body"), fetchField(t, 0, "contentType"); u != "http://h.test/ws/session" || m != "POST" || b != `{"token":"tok\"1"}` || ct != "application/json" {
		t.Fatalf("session request: %s %s %s %s", m, u, b, ct)
	}
	js(t, nil, `__respond(0, 200, '{"session":"S-1_x","intervalMs":1000}')`)
	waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
	src := js(t, nil, `return globalThis.__sources`)
	if n, _ := src.Length(); n != 1 || jsString(t, src, 0, "url") != "http://h.test/ws/sse?session=S-1_x" {
		t.Fatalf("stream: %d sources", n)
	}
	js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
	if strings.Join(r.got, "|") != `opened|message {"type":"ping","intervalMs":1000}` {
		t.Fatalf("events %q", r.got)
	}
	if err := tr.send(protocol.Encode(protocol.Message{Type: protocol.TypeAuth, Token: `tok"1`})); err != nil || fetchCount(t) != 1 {
		t.Fatalf("the auth frame: %v, %d fetches", err, fetchCount(t))
	}
	f1, f2, f3 := `{"type":"request","id":1,"method":"echo"}`, `{"type":"subscribe","topic":"a"}`, `{"type":"probe","id":2}`
	for _, f := range []string{f1, f2, f3} {
		if err := tr.send([]byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if n := fetchCount(t); n != 2 || fetchField(t, 1, "url") != "http://h.test/ws/send?session=S-1_x" || fetchField(t, 1, "body") != f1 {
		t.Fatalf("first POST: %d fetches, %s", n, fetchField(t, 1, "body"))
	}
	if b := ht.buffered(); b != len(f1)+len(f2)+len(f3) {
		t.Fatalf("buffered %d while the POST is in flight, want %d", b, len(f1)+len(f2)+len(f3))
	}
	js(t, nil, `__respond(1, 204)`)
	waitFor(t, "the second POST", func() bool { return fetchCount(t) > 2 })
	batch := "[" + f2 + "," + f3 + "]"
	if n := fetchCount(t); n != 3 || fetchField(t, 2, "body") != batch || ht.buffered() != len(batch) {
		t.Fatalf("second POST: %d fetches, %q, buffered %d", n, fetchField(t, 2, "body"), ht.buffered())
	}
	js(t, nil, `__respond(2, 204)`)
	waitFor(t, "the second POST's answer", func() bool { return ht.buffered() == 0 })
	if ht.buffered() != 0 || fetchCount(t) != 3 {
		t.Fatalf("after the POSTs: buffered %d, %d fetches", ht.buffered(), fetchCount(t))
	}
	js(t, nil, `__emit(0, 'close', '{"code":4001,"reason":"token expired"}'); __emit(0, 'error')`)
	if r.last() != "closed 4001 token expired" || len(r.got) != 3 {
		t.Fatalf("events %q", r.got)
	}
	if closed := jsString(t, src, 0, "closed"); closed != "<boolean>" || !jsBool(t, src, 0, "closed") {
		t.Fatal("the stream was not closed")
	}
	if err := tr.send([]byte(f1)); err == nil {
		t.Fatal("a send after the close was taken")
	}
	tr.release()
}

func jsBool(t *testing.T, v safejs.Value, path ...any) bool {
	t.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v, _ = v.Get(p)
		case int:
			v, _ = v.Index(p)
		}
	}
	b, _ := v.Bool()
	return b
}

// What the server refuses is reported as the WebSocket's close would be,
// so the core classifies it the same way: 429/503 wait (1013 with the
// retry-after), a 401/403 with a close body is that close, the rest is a
// transport loss (1006), as are a failed fetch, a stream error and a POST
// the server answers 404 (the session is gone).
func TestHTTPTransportRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer string // JS run on the session fetch (index 0)
		want   string
	}{
		{"overloaded", `__respond(0, 503, 'busy', {'Retry-After': '3'})`, "closed 1013 retry-after-ms=3000"},
		{"a reconnect slot", `__respond(0, 503, '{"error":"restarting","retryAfterMs":4210,"close":{"code":1012,"reason":"retry-after-ms=4210"}}', {'Retry-After': '5'})`, "closed 1012 retry-after-ms=4210"},
		{"rate limited", `__respond(0, 429, '')`, "closed 1013 "},
		{"forbidden", `__respond(0, 403, '{"close":{"code":4003,"reason":"forbidden"}}')`, "closed 4003 forbidden"},
		{"token expired", `__respond(0, 401, '{"close":{"code":4001,"reason":"token expired"}}')`, "closed 4001 token expired"},
		{"a proxy's 403", `__respond(0, 403, '<html>no</html>')`, "closed 1006 "},
		{"no HTTP transport", `__respond(0, 404, 'not found')`, "closed 1006 "},
		{"unreachable", `__reject(0)`, "closed 1006 "},
		{"a bad session id", `__respond(0, 200, '{"session":"a b"}')`, "closed 1006 "},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeHTTP(t)
			var r recorder
			tr, err := openHTTP(dialSpec{url: "wss://h.test/rt", via: client.TransportHTTP}, r.events())
			if err != nil {
				t.Fatal(err)
			}
			defer tr.release()
			if b := fetchField(t, 0, "body"); b != "{}" || fetchField(t, 0, "url") != "https://h.test/rt/session" {
				t.Fatalf("session request %s %s", fetchField(t, 0, "url"), b)
			}
			js(t, nil, c.answer)
			waitFor(t, "the close", func() bool { return len(r.got) > 0 })
			settle()
			if strings.Join(r.got, "|") != c.want {
				t.Fatalf("events %q, want %q", r.got, c.want)
			}
		})
	}
	t.Run("stream error", func(t *testing.T) {
		fakeHTTP(t)
		var r recorder
		tr, _ := openHTTP(dialSpec{url: "ws://h.test/ws", via: client.TransportHTTP}, r.events())
		defer tr.release()
		js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
		waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
		js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}'); __emit(0, 'error'); __emit(0, 'error')`)
		if strings.Join(r.got, "|") != "opened|message {\"type\":\"ping\",\"intervalMs\":1000}|closed 1006 " {
			t.Fatalf("events %q", r.got)
		}
	})
	t.Run("session gone", func(t *testing.T) {
		fakeHTTP(t)
		var r recorder
		tr, _ := openHTTP(dialSpec{url: "ws://h.test/ws", via: client.TransportHTTP}, r.events())
		defer tr.release()
		js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
		waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
		js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
		tr.send([]byte(`{"type":"probe","id":1}`))
		js(t, nil, `__respond(1, 404, '{"close":{"code":4404,"reason":"unknown session"}}')`)
		waitFor(t, "the close", func() bool { return len(r.got) > 2 })
		if strings.Join(r.got, "|") != "opened|message {\"type\":\"ping\",\"intervalMs\":1000}|closed 1006 " || !jsBool(t, js(t, nil, `return globalThis.__sources`), 0, "closed") {
			t.Fatalf("events %q", r.got)
		}
	})
	t.Run("closed by the client", func(t *testing.T) {
		fakeHTTP(t)
		var r recorder
		tr, _ := openHTTP(dialSpec{url: "ws://h.test/ws", via: client.TransportHTTP}, r.events())
		defer tr.release()
		js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
		waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
		js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
		tr.send([]byte(`{"type":"probe","id":1}`)) // in flight when the core closes
		if err := tr.close(4408, "heartbeat timeout"); err != nil {
			t.Fatal(err)
		}
		settle()
		if strings.Join(r.got, "|") != "opened|message {\"type\":\"ping\",\"intervalMs\":1000}|closed 4408 heartbeat timeout" || !jsBool(t, js(t, nil, `return globalThis.__fetches`), 1, "aborted") {
			t.Fatalf("events %q; the POST in flight aborted: %v", r.got, jsBool(t, js(t, nil, `return globalThis.__fetches`), 1, "aborted"))
		}
	})
	t.Run("a queue that does not drain is bounded", func(t *testing.T) {
		fakeHTTP(t)
		var r recorder
		tr, _ := openHTTP(dialSpec{url: "ws://h.test/ws", via: client.TransportHTTP}, r.events())
		defer tr.release()
		js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
		waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
		frame := []byte(`"` + strings.Repeat("x", protocol.MaxFrameBytes-2) + `"`)
		var err error
		sent := 0
		for ; sent < 200 && err == nil; sent++ {
			err = tr.send(frame)
		}
		if b := tr.(*httpTransport).buffered(); err != errQueueFull || b > maxQueued+len(frame) {
			t.Fatalf("after %d frames: %v, buffered %d", sent, err, b)
		}
	})
}

// The probe is a plain GET <base>/probe; any 2xx is ok, anything else (or
// no answer) is not.
func TestHTTPProbe(t *testing.T) {
	for _, c := range []struct {
		answer string
		want   bool
	}{{`__respond(0, 204)`, true}, {`__respond(0, 200, 'ok')`, true}, {`__respond(0, 403, '')`, false}, {`__reject(0)`, false}} {
		fakeHTTP(t)
		var got []bool
		probe("wss://h.test/ws?x=1", func(ok bool) { got = append(got, ok) })
		if u, m := fetchField(t, 0, "url"), fetchField(t, 0, "method"); u != "https://h.test/ws/probe?x=1" || m != "GET" {
			t.Fatalf("probe %s %s", m, u)
		}
		js(t, nil, c.answer)
		waitFor(t, "the answer", func() bool { return len(got) > 0 })
		settle()
		if len(got) != 1 || got[0] != c.want {
			t.Fatalf("%s: %v", c.answer, got)
		}
	}
}

// The driver over the real openers: WebSocket attempts that never open
// make the core ask for a probe; the driver makes it, and after its 204 the
// next dial is an HTTP one (POST /session).
func TestDriverFallsBackToHTTP(t *testing.T) {
	fakeWebSocket(t)
	fakeHTTP(t)
	cfg, err := stages.Config(8, func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	d := testDriver(t, cfg)
	d.open = openTransport
	now := time.Unix(1000, 0)
	run := d.runAt(&now)
	d.core.Start(now)
	run()
	failed := 0
	for fetchCount(t) == 0 {
		if failed == 10 {
			t.Fatal("no probe after 10 WebSocket attempts")
		}
		js(t, nil, `const s = globalThis.__sockets[globalThis.__sockets.length - 1]; s.onclose({code: 1006, reason: ''})`)
		failed++
		run()
		if fetchCount(t) > 0 {
			break
		}
		now = now.Add(time.Millisecond) // the backoff's draw is 0: the next dial is due
		d.core.Tick(now)
		run()
	}
	if failed != 3 {
		t.Fatalf("probed after %d WebSocket attempts failed, want 3", failed)
	}
	if u := fetchField(t, 0, "url"); u != "http://a.test/ws/probe" {
		t.Fatalf("probe %s", u)
	}
	js(t, nil, `__respond(0, 204)`)
	settle()
	run()
	// The WebSocket dialled beside the probe fails too: the next dial is
	// an HTTP one.
	js(t, nil, `const s = globalThis.__sockets[globalThis.__sockets.length - 1]; s.onclose({code: 1006, reason: ''})`)
	waitFor(t, "the HTTP dial", func() bool {
		run()
		now = now.Add(time.Millisecond)
		d.core.Tick(now)
		run()
		return fetchCount(t) >= 2
	})
	if fetchCount(t) != 2 || fetchField(t, 1, "url") != "http://a.test/ws/session" {
		t.Fatalf("after the probe: %d fetches", fetchCount(t))
	}
	if st := d.core.State(); st.Via != client.TransportHTTP {
		t.Fatalf("via %v", st.Via)
	}
}

// testDriver is a driver for cfg without a loop: the test steps it with
// runAt. Its sockets open through fakes the test installs.
func testDriver(t *testing.T, cfg client.Config) *driver {
	t.Helper()
	core, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{urls: []string{"ws://a.test/ws"}, cfg: cfg, core: core, q: bridge.NewQueue(),
		sockets: map[client.SocketID]transport{}, promises: map[uint64]promise{}, tickets: map[uint64]uint64{}, aborted: map[uint64]bool{},
		local: map[string]bridge.TabSub{}, coreTopics: map[string]bool{}, tabsMode: bridge.TabsOff}
	d.buf.on = !cfg.Disable.WhereUsersAre
	d.timer, err = newTimer(func() {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.timer.release()
		d.buf.release()
	})
	return d
}

// runAt returns the loop's work at the instant *now: apply, then every
// step queued, until nothing is.
func (d *driver) runAt(now *time.Time) func() {
	return func() {
		d.apply()
		for steps := d.q.Take(); len(steps) > 0; steps = d.q.Take() {
			for _, step := range steps {
				step(*now)
				d.apply()
			}
		}
	}
}

// With a token hook, the HTTP session carries the ticket even when the
// core dials it with the ticket it kept from WebSocket attempts that never
// opened (it asks the hook once, then reuses the ticket until a socket
// opens), and the core's auth frame is not sent over HTTP.
func TestHTTPDialCarriesTheTicketTheCoreKept(t *testing.T) {
	fakeWebSocket(t)
	fakeHTTP(t)
	cfg, err := stages.Config(8, func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = true
	d := testDriver(t, cfg)
	d.open = openTransport
	d.cb.token = js(t, nil, `globalThis.__tokens = 0; return () => 'tok-' + (++globalThis.__tokens)`)
	now := time.Unix(1000, 0)
	run := d.runAt(&now)
	d.core.Start(now)
	run()
	for failed := 0; fetchCount(t) == 0; failed++ {
		if failed == 10 {
			t.Fatal("no probe after 10 WebSocket attempts")
		}
		js(t, nil, `const s = globalThis.__sockets[globalThis.__sockets.length - 1]; s && s.onclose({code: 1006, reason: ''})`)
		run()
		if fetchCount(t) > 0 {
			break
		}
		now = now.Add(time.Millisecond)
		d.core.Tick(now)
		run()
	}
	js(t, nil, `__respond(0, 204)`)
	settle()
	run()
	js(t, nil, `const s = globalThis.__sockets[globalThis.__sockets.length - 1]; s.onclose({code: 1006, reason: ''})`)
	waitFor(t, "the HTTP dial", func() bool {
		run()
		now = now.Add(time.Millisecond)
		d.core.Tick(now)
		run()
		return fetchCount(t) >= 2
	})
	asked, _ := js(t, nil, `return globalThis.__tokens`).Int()
	if body := fetchField(t, 1, "body"); body != `{"token":"tok-`+strconv.Itoa(asked)+`"}` {
		t.Fatalf("the session POST's body %s (the hook was asked %d times)", body, asked)
	}
	js(t, nil, `__respond(1, 200, '{"session":"S"}')`)
	waitFor(t, "the stream", func() bool { run(); return sourceCount(t) > 0 })
	js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
	settle()
	run()
	for i := 2; i < fetchCount(t); i++ {
		if b := fetchField(t, i, "body"); strings.Contains(b, `"auth"`) {
			t.Fatalf("the auth frame went over HTTP: %s", b)
		}
	}
}

// A stream that opens and delivers nothing within FirstEventTimeout is
// closed and the session goes on in long polls: the first asks for the
// welcome again, the socket opens with its first event, the next poll
// carries the last id received, a close event ends the socket with its
// code; the server's "held" makes the next session start in long polls at
// once.
func TestHTTPSilentStreamGoesOnInLongPolls(t *testing.T) {
	fakeHTTP(t)
	const url = "ws://h.test/ws"
	delete(pollSince, url)
	t.Cleanup(func() { delete(pollSince, url) })
	var r recorder
	tr, _ := openHTTP(dialSpec{url: url, via: client.TransportHTTP}, r.events())
	defer tr.release()
	js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
	waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
	js(t, nil, `__emit(0, 'open')`)
	settle()
	if len(r.got) != 0 {
		t.Fatalf("events %q before any event came; want none (the socket opens with its first event)", r.got)
	}
	waitFor(t, "the first poll", func() bool { return fetchCount(t) > 1 })
	if u := fetchField(t, 1, "url"); u != "http://h.test/ws/sse?session=S&poll=1&welcome=1" || fetchField(t, 1, "method") != "GET" {
		t.Fatalf("the first poll %s %s", fetchField(t, 1, "method"), u)
	}
	if !jsBool(t, js(t, nil, `return globalThis.__sources`), 0, "closed") {
		t.Fatal("the silent stream was not closed")
	}
	js(t, nil, `__respond(1, 200, 'data: {"type":"welcome","session":"S"}\n\nid: feed=7\ndata: {"type":"update","topic":"feed","seq":7}\n\n', {'X-Wsready-Stream': 'held'})`)
	waitFor(t, "the second poll", func() bool { return fetchCount(t) > 2 })
	want := `opened|message {"type":"welcome","session":"S"}|message {"type":"update","topic":"feed","seq":7}`
	if strings.Join(r.got, "|") != want {
		t.Fatalf("events %q; want %q", r.got, want)
	}
	if u := fetchField(t, 2, "url"); u != "http://h.test/ws/sse?session=S&poll=1&lastEventId=feed%3D7" {
		t.Fatalf("the second poll %s", u)
	}
	js(t, nil, `__respond(2, 200, 'event: close\ndata: {"code":1012,"reason":"retry-after-ms=500"}\n\n')`)
	waitFor(t, "the close", func() bool { return len(r.got) > 3 })
	if l := r.last(); l != "closed 1012 retry-after-ms=500" {
		t.Fatalf("last event %q", l)
	}

	// The next session: long polls at once, no stream.
	var r2 recorder
	tr2, _ := openHTTP(dialSpec{url: url, via: client.TransportHTTP}, r2.events())
	defer tr2.release()
	js(t, nil, `__respond(3, 200, '{"session":"T"}')`)
	waitFor(t, "the poll", func() bool { return fetchCount(t) > 4 })
	if u := fetchField(t, 4, "url"); u != "http://h.test/ws/sse?session=T&poll=1" || sourceCount(t) != 1 {
		t.Fatalf("the next session's first request %s, %d streams; want a poll and no new stream", u, sourceCount(t))
	}
}
