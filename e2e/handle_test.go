//go:build !js

package e2e

import (
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
)

// request() never throws: bad input rejects with a TypeError. After
// close(), the handle still answers: state() and stats() give the final
// values, request() rejects with NotReady, every pending promise settles,
// and every socket the client had (stage 2 leaks some after a freeze) is
// closed.
func TestHandleAfterCloseAndBadRequests(t *testing.T) {
	env, b := newEnv(t)
	if err := b.Navigate(env.Base + "/embed.html"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.embedResult && (embedResult.echo || embedResult.error)", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// A stage 2 client of our own, beside the page's.
	if _, err := Eval[bool](b, `import('./wsready.js').then(async (m) => {
		window.c2 = await m.connect({ stage: 2 });
		return true;
	})`); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "c2.state().ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	bad, err := Eval[map[string]string](b, `(async () => {
		const out = {};
		const cyc = {}; cyc.self = cyc;
		const cases = { empty: ['', 1], number: [7, 1], bigint: ['echo', 10n], cyclic: ['echo', cyc], fn: ['echo', () => 1] };
		for (const [k, [m, p]] of Object.entries(cases)) {
			let r;
			try { r = c2.request(m, p); } catch (e) { out[k] = 'threw ' + e.name; continue; }
			out[k] = await r.then(() => 'resolved', (e) => e.name);
		}
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range bad {
		if v != "TypeError" {
			t.Errorf("request with %s params/method: %s, want a rejected TypeError", k, v)
		}
	}
	if len(bad) != 5 {
		t.Fatalf("cases run: %v", bad)
	}
	// A request or publish whose frame would pass the server's 64 KiB is
	// refused before it is sent (InvalidRequest), counted in UTF-8 bytes:
	// the server would close the connection (1009), failing every request
	// on it. The connection stays; one just within the bound is sent.
	big, err := Eval[map[string]any](b, `(async () => {
		const epoch = c2.state().epoch;
		const name = (p) => p.then((r) => 'resolved ' + JSON.stringify(r).length, (e) => e.name);
		const out = {};
		out.request = await name(c2.request('echo', { s: 'x'.repeat(70000) }));
		out.multibyte = await name(c2.request('echo', { s: 'é'.repeat(33000) })); // 66,000 bytes in 33,000 chars
		out.publish = await name(c2.publish('chat', 'x'.repeat(66000)));
		out.fits = await name(c2.request('echo', { s: 'é'.repeat(30000) }));
		out.badOption = await name(c2.request('echo', { s: 'x'.repeat(70000) }, { timeoutMs: -1 })); // the options first
		out.escaped = await name(c2.request('<'.repeat(11000), {})); // 66,000 bytes escaped
		out.same = c2.state().ready && c2.state().epoch === epoch;
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if big["request"] != "InvalidRequest" || big["multibyte"] != "InvalidRequest" || big["publish"] != "InvalidRequest" ||
		big["fits"] != "resolved 30008" || big["badOption"] != "TypeError" || big["escaped"] != "InvalidRequest" || big["same"] != true {
		t.Fatalf("oversized requests: %v; want InvalidRequest for each, the one that fits resolved, the same READY connection", big)
	}

	// Leak sockets at stage 2: freeze long enough for the watchdog to
	// replace the socket, then let the late closes arrive.
	env.Set("freeze", true)
	browserRuns(4500 * time.Millisecond) // the page's watchdog replaces the socket meanwhile
	env.Set("freeze", false)
	if err := WaitJS(b, "c2.state().ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The late closes arrive.
	browserRuns(2 * time.Second)
	if n := env.Srv.Stats().Open; n < 3 { // the embed page's socket, c2's live one, and at least one leaked
		t.Fatalf("open before close: %d; stage 2 did not leak and the test proves nothing", n)
	}
	got, err := Eval[map[string]any](b, `(async () => {
		const slow = c2.request('echo', {a: 1});            // in flight when close() runs
		const closed = c2.close();
		const after = c2.request('echo', {b: 2});           // made after close()
		const [s1, s2] = await Promise.all([slow.then(() => 'resolved', (e) => e.name), after.then(() => 'resolved', (e) => e.name)]);
		await closed;
		const again = await c2.close().then(() => 'ok');
		const st = c2.state(), stats = c2.stats();
		return { inflight: s1, after: s2, again, stopped: st && st.stopped, ready: st && st.ready, dials: stats && stats.dials };
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if got["after"] != "NotReady" || got["stopped"] != true || got["ready"] != false || got["again"] != "ok" {
		t.Fatalf("after close: %v", got)
	}
	if s := got["inflight"]; s != "resolved" && s != "ConnectionClosed" {
		t.Fatalf("in-flight request settled as %v", s)
	}
	if d, _ := got["dials"].(float64); d < 2 {
		t.Fatalf("stats after close: %v", got)
	}
	poll.UntilEvery(5*time.Second, 50*time.Millisecond, func() bool { return env.Srv.Stats().Open == 1 })
	if n := env.Srv.Stats().Open; n != 1 {
		t.Fatalf("server connections after close: %d, want only the embed page's", n)
	}
}

// The JS API's options: ready(), a request's own timeout and AbortSignal,
// on/off listeners, and state() keys in a stable order.
func TestJSAPIOptions(t *testing.T) {
	env, b := newEnv(t)
	if err := b.Navigate(env.Base + "/embed.html"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.embedResult && embedResult.ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := Eval[map[string]any](b, `import('./wsready.js').then(async (m) => {
		const c = await m.connect({ stage: 6 });
		let states = 0;
		const off = c.on('state', () => states++);
		await c.ready({ timeoutMs: 10000 });
		const keys = Object.keys(c.state());
		const sorted = [...keys].sort().join() === keys.join();
		const ac = new AbortController();
		const aborted = c.request('echo', 1, { signal: ac.signal });
		ac.abort();
		const pre = new AbortController(); pre.abort();
		const before = await c.request('echo', 1, { signal: pre.signal }).then(() => 'resolved', (e) => e.name);
		const abortedName = await aborted.then(() => 'resolved', (e) => e.name);
		await fetch('/api/faults', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"slowReplies":true}' });
		const t0 = performance.now();
		const timedOut = await c.request('echo', 1, { timeoutMs: 300 }).then(() => 'resolved', (e) => e.name);
		const took = performance.now() - t0;
		await fetch('/api/faults', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"slowReplies":false}' });
		const badTimeout = await c.request('echo', 1, { timeoutMs: -5 }).then(() => 'resolved', (e) => e.name);
		off();
		const seen = states;
		await fetch('/api/faults', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"endSession":true}' });
		for (let i = 0; i < 60 && c.state().ready; i++) await new Promise((r) => setTimeout(r, 50));
		const ended = await c.ready({ timeoutMs: 5000 }).then(() => 'ready', (e) => e.name + ':' + e.ended).catch((e) => e.name);
		const later = await new Promise((r) => setTimeout(r, 300)).then(() => states === seen);
		// A page whose origin the server does not accept learns why.
		const other = await m.connect({ stage: 6, url: 'ws://localhost:' + location.port + '/ws' });
		for (let i = 0; i < 100 && !other.state().lastError; i++) await new Promise((r) => setTimeout(r, 50));
		const why = other.state().lastError;
		await other.close();
		return { sorted, keys: keys.join(), before, abortedName, timedOut, took, badTimeout, seen, ended, later,
			whyClass: why && why.class, whyEnded: other.state().ended };
	})`)
	if err != nil {
		t.Fatal(err)
	}
	if got["sorted"] != true || got["before"] != "Aborted" || got["abortedName"] != "Aborted" || got["timedOut"] != "RequestTimeout" || got["badTimeout"] != "TypeError" {
		t.Fatalf("%v", got)
	}
	if took, _ := got["took"].(float64); took < 250 || took > 2000 {
		t.Fatalf("a 300 ms timeout took %v ms", took)
	}
	if seen, _ := got["seen"].(float64); seen < 1 || got["ended"] != "SessionEnded:ended" || got["later"] != true {
		t.Fatalf("%v", got)
	}
	if got["whyClass"] != "origin" {
		t.Fatalf("a foreign origin: lastError class %v (%v)", got["whyClass"], got)
	}
}
