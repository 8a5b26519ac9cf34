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
	if d.token != "" {
		t.Fatal("the driver kept the refresh's token for a session")
	}
	if n := sourceCount(t); n != 1 {
		t.Fatalf("%d streams: the refresh made a new session", n)
	}
}
