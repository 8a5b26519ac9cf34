//go:build js && wasm

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
)

// In-band refresh over the HTTP transport: late in the token's life the
// page's hook is asked (its answer reaches the core through the driver's
// queue, never inside the callback) and the fresh token goes out in a
// refresh frame on the send path (POST <base>/send), not in a new session;
// the driver keeps no copy of it for one.
func TestHTTPInBandRefreshIsPosted(t *testing.T) {
	fakeHTTP(t)
	cfg, err := stages.Config(8, func() float64 { return 0 }) // the refresh at 75% of the time left
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = true
	cfg.Transports = []client.Transport{client.TransportHTTP}
	d := testDriver(t, cfg)
	d.open = openTransport
	d.cb.token = js(t, nil, `globalThis.__tokens = 0; return async () => 'tok-' + (++globalThis.__tokens)`)
	now := time.Unix(1000, 0)
	run := d.runAt(&now)
	d.core.Start(now)
	waitFor(t, "the session POST", func() bool { run(); return fetchCount(t) >= 1 })
	js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
	waitFor(t, "the stream", func() bool { run(); return sourceCount(t) > 0 })
	exp := now.Add(60 * time.Second).UnixMilli()
	js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}'); __emit(0, 'message', '{"type":"authenticated","expiresAt":`+strconv.FormatInt(exp, 10)+`}')`)
	settle()
	run()
	responded := 1
	respondAll := func() {
		for ; responded < fetchCount(t); responded++ {
			js(t, nil, `__respond(`+strconv.Itoa(responded)+`, 204)`)
		}
	}
	refreshPosted := func() string {
		for i := 1; i < fetchCount(t); i++ {
			if b := fetchField(t, i, "body"); strings.Contains(b, `"type":"refresh"`) {
				return b
			}
		}
		return ""
	}
	// 44 s of pings a second: nothing asked yet.
	for range 44 {
		now = now.Add(time.Second)
		js(t, nil, `__emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
		run()
		d.core.Tick(now)
		run()
		respondAll()
	}
	if asked, _ := js(t, nil, `return globalThis.__tokens`).Int(); asked != 1 || refreshPosted() != "" {
		t.Fatalf("before 75%% of the token's life: the hook was asked %d times, refresh %q", asked, refreshPosted())
	}
	now = now.Add(time.Second)
	js(t, nil, `__emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
	run()
	d.core.Tick(now)
	waitFor(t, "the refresh POST", func() bool { run(); settle(); respondAll(); return refreshPosted() != "" })
	if b := refreshPosted(); b != `{"type":"refresh","token":"tok-2"}` && b != `[{"type":"refresh","token":"tok-2"}]` {
		t.Fatalf("the refresh POST's body %s", b)
	}
	if n := sourceCount(t); n != 1 {
		t.Fatalf("%d streams: the refresh made a new session", n)
	}
}

// A session lost while the hook runs for its in-band refresh: the core
// dials again and asks the hook for the dial's ticket, and if the
// refresh's answer comes first the dial takes it (tokens are
// interchangeable). Over HTTP that ticket must ride in the new session's
// POST: a session made without one is closed with 4003 by a server that
// requires auth, and the client's session ends forbidden.
func TestHTTPDialTakingTheRefreshsAnswerCarriesIt(t *testing.T) {
	fakeHTTP(t)
	cfg, err := stages.Config(8, func() float64 { return 0 }) // the refresh at 75% of the time left
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = true
	cfg.Transports = []client.Transport{client.TransportHTTP}
	d := testDriver(t, cfg)
	d.open = openTransport
	// The hook answers only when the test says: __asks holds each ask's resolve.
	d.cb.token = js(t, nil, `globalThis.__asks = []; return () => new Promise(r => globalThis.__asks.push(r))`)
	asks := func() int { n, _ := js(t, nil, `return globalThis.__asks.length`).Int(); return n }
	answer := func(i int, tok string) { js(t, nil, `globalThis.__asks[`+strconv.Itoa(i)+`]('`+tok+`')`) }
	sessions := func() []int {
		var at []int
		for i := range fetchCount(t) {
			if strings.HasSuffix(fetchField(t, i, "url"), "/session") {
				at = append(at, i)
			}
		}
		return at
	}
	responded := map[int]bool{}
	respondSends := func() { // every send POST answered; sessions as the test says
		for i := range fetchCount(t) {
			if !responded[i] && !strings.HasSuffix(fetchField(t, i, "url"), "/session") {
				responded[i] = true
				js(t, nil, `__respond(`+strconv.Itoa(i)+`, 204)`)
			}
		}
	}
	now := time.Unix(1000, 0)
	run := d.runAt(&now)
	d.core.Start(now)
	waitFor(t, "the dial's ask", func() bool { run(); return asks() == 1 })
	answer(0, "tok-1")
	waitFor(t, "the session POST", func() bool { run(); return len(sessions()) == 1 })
	if b := fetchField(t, 0, "body"); b != `{"token":"tok-1"}` {
		t.Fatalf("the first session POST's body %s", b)
	}
	js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
	responded[0] = true
	waitFor(t, "the stream", func() bool { run(); return sourceCount(t) == 1 })
	exp := now.Add(60 * time.Second).UnixMilli()
	js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}'); __emit(0, 'message', '{"type":"authenticated","expiresAt":`+strconv.FormatInt(exp, 10)+`}')`)
	waitFor(t, "the open", func() bool { run(); return d.core.State().Transport == client.Up })
	for i := 0; asks() < 2; i++ {
		if i == 60 {
			t.Fatal("no in-band refresh asked in 60 s of a 60 s token")
		}
		now = now.Add(time.Second)
		js(t, nil, `__emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
		run()
		d.core.Tick(now)
		run()
		respondSends()
	}
	// The session is lost while the hook runs for the refresh.
	js(t, nil, `__emit(0, 'close', '{"code":1011,"reason":""}'); __emit(0, 'error')`)
	for i := 0; asks() < 3; i++ {
		if i == 600 {
			t.Fatalf("no ask for the next dial's ticket in 60 s (state %+v)", d.core.State())
		}
		now = now.Add(100 * time.Millisecond)
		run()
		d.core.Tick(now)
		run()
	}
	answer(1, "tok-r") // the refresh's answer first: the dial takes it
	waitFor(t, "the second session POST", func() bool { run(); return len(sessions()) == 2 })
	if b := fetchField(t, sessions()[1], "body"); b != `{"token":"tok-r"}` {
		t.Fatalf("the session POST of the dial that took the refresh's answer: body %s, want its ticket", b)
	}
}
