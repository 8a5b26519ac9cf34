//go:build !js

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/server"
)

// Page load to READY with a cold cache, on loopback and on an emulated
// 10 Mbit/s, 40 ms link, at stage 7 and stage 8, with the page's timing
// marks. The goals (300 ms and 1.0 s, medians of five) are
// performance targets, reported by TestMeasureLoad (make measure) on a
// quiet machine; here they are logged. What CI asserts is correctness:
// the marks tell the load's story in order, with one fetch of the wasm;
// the connection (connect() to READY) takes less than the client's
// first-ping timeout (3 s: on a healthy load nothing in it waits on a
// timer, so a longer one waited on a timeout, a backoff or a second
// socket); and the whole load is under loadStuck (10 s loopback, 15 s on
// the slow link), past which a load is stuck, not slow. A fixed bound
// near the goals was not: at load 9 on 2 cores every step of a loopback
// load slows (the page's HTML alone took 457 ms) and the median of two
// loads reached 2267 ms against a bound of 1500.
func TestPageLoadToReady(t *testing.T) {
	env, err := StartServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for _, stage := range []int{7, 8} {
		fast, err := LoadBreakdown(env, Link{}, stage, 2)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := LoadBreakdown(env, TenMbit40ms, stage, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range append(slices.Clone(fast), slow...) {
			if err := l.check(); err != nil {
				t.Errorf("stage %d: %v", stage, err)
			}
			if c := l["wsready:ready"] - l["wsready:connect"]; c > connectStuck {
				t.Errorf("stage %d: connect() to READY took %.0f ms, over the client's %d ms first-ping timeout: the connection waited on a timer\n%s", stage, c, connectStuck, BreakdownTable(LoadRun{"this load", []Load{l}}))
			}
		}
		fm, _ := medianWorst(readyMs(fast))
		sm, _ := medianWorst(readyMs(slow))
		t.Logf("stage %d, load to READY, cold cache: loopback %v ms, 10 Mbit/s 40 ms %v ms (goals 300 ms and 1 s)\n%s", stage, readyMs(fast), readyMs(slow), BreakdownTable(LoadRun{"loopback", fast})+"\n"+BreakdownTable(LoadRun{"10 Mbit/s, 40 ms", slow}))
		if fm > loadStuckLoopback || sm > loadStuckSlow {
			t.Errorf("stage %d load to READY: loopback median %d ms, slow link median %d ms: past %d and %d ms, a stuck load", stage, fm, sm, loadStuckLoopback, loadStuckSlow)
		}
	}
}

// TestPageLoadToReady's correctness bounds, in ms: the client's default
// first-ping timeout (client.Config.FirstPingTimeout) for the connection,
// and a whole load's median on loopback and on the 10 Mbit/s, 40 ms link.
const (
	connectStuck      = 3000
	loadStuckLoopback = 10000
	loadStuckSlow     = 15000
)

// A Load is one page load's moments, in ms from navigation start, by name:
// the page's marks ("wsready:..." from web/static/wsready.js) and the
// wasm's resource timing ("wasm:start", "wasm:responseEnd", "wasm:bytes");
// and how long the browser took to settle before the navigation
// ("browser:settle", ms; "browser:busy" 1 if it never went quiet).
type Load map[string]float64

// loadPoints are the moments a breakdown shows, in the order a load passes
// them, with what each means.
var loadPoints = []struct{ key, label string }{
	{"html:responseEnd", "page HTML received"},
	{"wsready:load", "load() starts (wsready.js imported and run)"},
	{"wasm:start", "wasm requested"},
	{"wasm:responseEnd", "wasm downloaded"},
	{"wsready:wasm-response", "wasm response handed to the compiler"},
	{"wsready:preconnect", "first socket dialled by preconnect()"},
	{"wsready:preconnect-open", "that socket open"},
	{"wsready:instantiated", "wasm compiled and instantiated"},
	{"wsready:go-started", "Go started (its API registered)"},
	{"wsready:connect", "connect() called"},
	{"wsready:event:leader", "this tab leads (stage 8: the tabs' lock)"},
	{"wsready:event:dial", "socket dialled"},
	{"wsready:ticket-asked", "token hook called"},
	{"wsready:ticket", "ticket in hand"},
	{"wsready:event:open", "socket open"},
	{"wsready:event:ping", "first ping"},
	{"wsready:event:authenticated", "authenticated"},
	{"wsready:event:subscribed", "subscribed"},
	{"wsready:ready", "READY"},
}

// collectMarks reads a page's wsready marks, its navigation timing and the
// wasm's resource timing.
const collectMarks = `(() => {
  const o = {};
  for (const m of performance.getEntriesByType('mark')) {
    if (m.name.startsWith('wsready:') && !(m.name in o)) o[m.name] = m.startTime;
  }
  const n = performance.getEntriesByType('navigation')[0];
  if (n) o['html:responseEnd'] = n.responseEnd;
  const ws = performance.getEntriesByType('resource').filter((e) => /\/wsready[^/]*\.wasm$/.test(new URL(e.name).pathname));
  const w = ws[0];
  if (w) { o['wasm:start'] = w.startTime; o['wasm:responseEnd'] = w.responseEnd; o['wasm:bytes'] = w.encodedBodySize; }
  o['wasm:fetches'] = ws.length;
  return o;
})()`

// LoadBreakdown opens the demo at ?stage=stage in a fresh Chromium (a fresh
// profile: a cold cache) over link, trials times, and returns each load's
// marks up to READY.
func LoadBreakdown(env *Env, link Link, stage, trials int) ([]Load, error) {
	return LoadBreakdownURL(fmt.Sprintf("%s/?stage=%d", env.Base, stage), link, trials)
}

// LoadBreakdownURL is LoadBreakdown for any page that loads wsready.js.
func LoadBreakdownURL(url string, link Link, trials int) ([]Load, error) {
	var out []Load
	for i := range trials {
		l, err := loadOnce(url, link)
		if err != nil {
			return out, fmt.Errorf("load %d of %s: %w", i, url, err)
		}
		out = append(out, l)
	}
	return out, nil
}

func loadOnce(url string, link Link) (Load, error) {
	b, err := NewBrowser(context.Background())
	if err != nil {
		return nil, err
	}
	defer b.Close()
	waited, quiet, err := b.Settle()
	if err != nil {
		return nil, err
	}
	if link != (Link{}) {
		if err := b.Throttle(link.Latency, link.BytesPerSec); err != nil {
			return nil, err
		}
	}
	if err := b.Navigate(url); err != nil {
		return nil, err
	}
	if err := WaitJS(b, "performance.getEntriesByName('wsready:ready').length > 0", 30*time.Second); err != nil {
		return nil, err
	}
	l, err := Eval[Load](b, collectMarks)
	if err != nil {
		return nil, err
	}
	l["browser:settle"] = float64(waited.Milliseconds())
	if !quiet {
		l["browser:busy"] = 1
	}
	return l, nil
}

// inOrder reports a mark of order missing, or before the one ahead of
// it (check's first half; the floors' pages check their own marks).
func (l Load) inOrder(order []string) error {
	prev := 0.0
	for _, k := range order {
		v, ok := l[k]
		if !ok {
			return fmt.Errorf("mark %s missing: %v", k, l)
		}
		if v < prev {
			return fmt.Errorf("mark %s at %.0f ms, before the one ahead of it (%.0f ms): %v", k, v, prev, l)
		}
		prev = v
	}
	return nil
}

// check reports a load whose marks are missing or out of order: the
// breakdown would then mislead.
func (l Load) check() error {
	if err := l.inOrder([]string{"wsready:load", "wsready:wasm-exec", "wsready:instantiated", "wsready:go-started", "wsready:connect", "wsready:event:dial", "wsready:event:open", "wsready:event:ping", "wsready:event:subscribed", "wsready:ready"}); err != nil {
		return err
	}
	if l["wasm:bytes"] <= 0 {
		return fmt.Errorf("no resource timing for wsready.wasm: %v", l)
	}
	// One request for the wasm: the page's early compile (index.html's
	// inline script) is the one load() uses; a second fetch (load() not
	// handed the module, or the module refused) downloads it twice.
	if n := l["wasm:fetches"]; n != 1 {
		return fmt.Errorf("wsready.wasm was fetched %.0f times, want 1 (the page's early compile unused?): %v", n, l)
	}
	return nil
}

func readyMs(ls []Load) []int64 {
	out := make([]int64, len(ls))
	for i, l := range ls {
		out[i] = int64(l["wsready:ready"])
	}
	return out
}

// LoadRun is one link's loads, for a table.
type LoadRun struct {
	Link  string
	Loads []Load
}

// BreakdownTable prints a run's moments in the order they happen (by
// median): each one's median and worst time from navigation start, and the
// step from the moment above (the difference of the medians).
func BreakdownTable(r LoadRun) string {
	type row struct {
		label       string
		median, max float64
		n           int
	}
	var rows []row
	for _, p := range loadPoints {
		var at []float64
		for _, l := range r.Loads {
			if v, ok := l[p.key]; ok {
				at = append(at, v)
			}
		}
		if len(at) == 0 {
			continue
		}
		m, w := medianWorstF(at)
		rows = append(rows, row{p.label, m, w, len(at)})
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.median, b.median) })
	var b strings.Builder
	fmt.Fprintf(&b, "| %s: moment | median ms (worst) | step |\n|---|---|---|\n", r.Link)
	prev := 0.0
	for _, x := range rows {
		note := ""
		if x.n < len(r.Loads) {
			note = fmt.Sprintf(" (in %d of %d loads)", x.n, len(r.Loads))
		}
		fmt.Fprintf(&b, "| %s%s | %.0f (%.0f) | %+.0f |\n", x.label, note, x.median, x.max, x.median-prev)
		prev = x.median
	}
	b.WriteString(settleNote(r.Loads))
	return b.String()
}

// settleNote says how long the browser took to settle before each of ls
// (Browser.Settle), and how many never went quiet.
func settleNote(ls []Load) string {
	var waits []float64
	busy := 0
	for _, l := range ls {
		if v, ok := l["browser:settle"]; ok {
			waits = append(waits, v)
		}
		if l["browser:busy"] > 0 {
			busy++
		}
	}
	if len(waits) == 0 {
		return ""
	}
	s := fmt.Sprintf("\nNavigated once the browser had settled: %.0f-%.0f ms after it answered chromedp", slices.Min(waits), slices.Max(waits))
	if busy > 0 {
		s += fmt.Sprintf("; in %d of %d loads it was not seen quiet within %s (a busy machine, or no /proc)", busy, len(ls), settleMax)
	}
	return s + ".\n"
}

func medianWorstF(v []float64) (float64, float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

// precompressedStatic serves the files under dir as a static host that
// serves precompressed files does (Caddy's file_server with precompressed
// br gzip, nginx's brotli_static and gzip_static): name.br to a client that
// accepts br, else name.gz to one that accepts gzip, when the build wrote
// them beside name (the Vite example's does, examples/vite/vite.config.js);
// name itself otherwise. The Vite example's load is measured with it.
func precompressedStatic(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Clean(r.URL.Path)
		if strings.HasSuffix(name, "/") {
			name += "index.html"
		}
		accept := r.Header.Get("Accept-Encoding")
		for _, enc := range []struct{ token, ext string }{{"br", ".br"}, {"gzip", ".gz"}} {
			if !strings.Contains(accept, enc.token) {
				continue
			}
			f := filepath.Join(dir, filepath.FromSlash(name)+enc.ext)
			if st, err := os.Stat(f); err != nil || st.IsDir() {
				continue
			}
			if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.Header().Set("Content-Encoding", enc.token)
			w.Header().Set("Vary", "Accept-Encoding")
			http.ServeFile(w, r, f)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// writeLoadSection puts section into the file at path between the
// markers, replacing what was there; without markers, before the freeze
// samples' paragraph, or at the end.
func writeLoadSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", path, err)
	}
	s := string(old)
	block := loadBegin + "\n" + strings.TrimSpace(section) + "\n" + loadEnd + "\n"
	if i, j := strings.Index(s, loadBegin), strings.Index(s, loadEnd); i >= 0 && j > i {
		s = s[:i] + block + strings.TrimPrefix(s[j+len(loadEnd):], "\n")
	} else if k := strings.Index(s, "\nFreeze detection over short freezes"); k >= 0 {
		s = s[:k+1] + block + s[k:]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + block
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// load() takes the module a page compiled early (as index.html's inline
// script does) instead of fetching the wasm again; a rejected one is
// fetched as usual; a value that is no module is refused with a TypeError.
// The demo at an unknown stage neither compiles nor loads a client itself,
// so both are the test's.
func TestLoadTakesACompiledModule(t *testing.T) {
	env, b := newEnv(t)
	type result struct {
		Connect string
		Fetches int
		Error   string
	}
	const fetches = `performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === '/wsready.wasm').length`
	try := func(module string) result {
		t.Helper()
		openNoClient(t, env, b)
		r, err := Eval[result](b, `(async () => {
  if (window.wsreadyWasm || window.wsreadyLoad) return { Error: 'the page at an unknown stage started a client itself' };
  const { load } = await import('/wsready.js');
  try {
    const api = await load({ module: `+module+` });
    return { Connect: typeof api.connect, Fetches: `+fetches+` };
  } catch (e) {
    return { Error: e.name + ': ' + e.message, Fetches: `+fetches+` };
  }
})()`)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := try("WebAssembly.compileStreaming(fetch('/wsready.wasm'))"); r.Connect != "function" || r.Fetches != 1 {
		t.Errorf("load({module: a compile of its own}): %+v, want the API loaded from one fetch", r)
	}
	if r := try("Promise.reject(new Error('the early fetch failed'))"); r.Connect != "function" || r.Fetches != 1 {
		t.Errorf("load({module: a rejected promise}): %+v, want the API loaded from a fetch of its own", r)
	}
	if r := try("42"); !strings.HasPrefix(r.Error, "TypeError: wsready: load: module must be") {
		t.Errorf("load({module: 42}): %+v, want a TypeError", r)
	}
	if r := try("Promise.resolve('not a module')"); !strings.HasPrefix(r.Error, "TypeError: wsready: load: module must be") {
		t.Errorf("load({module: a promise of a string}): %+v, want a TypeError", r)
	}
}

// preconnect() opens the socket the page's first connect() then takes: the
// server sees it open before connect() and no second handshake after, and
// the client is READY on it (the server's first ping, sent at once, came
// while nobody listened and was replayed). A connect() to another URL
// drops it (closed, its own socket dialled); one the server refused is the
// client's first attempt (with a retry-after), or not (over 1 s old, with
// none); connect() alone preconnects while the wasm
// loads, unless told not to; one nobody takes is closed after
// PRECONNECT_MS (5 s).
func TestPreconnect(t *testing.T) {
	// Pings 30 s apart: the first, sent at once, is the only one within
	// the test's waits, so a READY on the preconnected socket needs it
	// replayed.
	env, b := newEnvWith(t, &server.Options{PingInterval: 30 * time.Second})
	// A page with no client of its own (an unknown stage), and no socket
	// left from the page before it.
	blank := func() {
		t.Helper()
		openNoClient(t, env, b)
		waitOpen(t, env, 0, 5*time.Second)
	}
	run := func(js string) {
		t.Helper()
		if _, err := Eval[any](b, `(async () => { const m = await import('/wsready.js'); `+js+` })()`); err != nil {
			t.Fatal(err)
		}
	}

	blank()
	h0 := env.Srv.Stats().Handshakes
	run(`window.__pre = m.preconnect();`)
	waitOpen(t, env, 1, 5*time.Second)
	browserRuns(1200 * time.Millisecond) // the server's pings come meanwhile
	run(`window.__c = await m.connect({ stage: 7, topic: 'feed' }); await window.__c.ready({ timeoutMs: 5000 });`)
	st := env.Srv.Stats()
	if pre, _ := Eval[bool](b, "window.__pre"); !pre || st.Handshakes-h0 != 1 || st.Open != 1 {
		t.Fatalf("preconnect() then connect(): preconnect said %v; the server counts %d handshakes and %d open, want 1 and 1", pre, st.Handshakes-h0, st.Open)
	}
	if again, _ := Eval[bool](b, "(async () => (await import('/wsready.js')).preconnect())()"); again {
		t.Errorf("a second preconnect() with the first taken opened a socket")
	}

	blank()
	h0 = env.Srv.Stats().Handshakes
	run(`m.preconnect(m.defaultURL() + '?other'); window.__c = await m.connect({ stage: 7, topic: 'feed' }); await window.__c.ready({ timeoutMs: 5000 });`)
	waitOpen(t, env, 1, 5*time.Second)
	if st := env.Srv.Stats(); st.Handshakes-h0 != 2 {
		t.Fatalf("preconnect() to another URL, then connect(): %d handshakes, want 2 (the preconnected one dropped)", st.Handshakes-h0)
	}

	// connect() alone opens its first socket while the wasm loads: before
	// Go has started; with preconnect: false, after.
	for _, c := range []struct {
		opt    string
		before bool
	}{{"", true}, {"preconnect: false, ", false}} {
		blank()
		h0 = env.Srv.Stats().Handshakes
		run(`const made = []; const W = WebSocket;
  window.WebSocket = class extends W { constructor(...a) { super(...a); made.push(performance.now()); } };
  window.__c = await m.connect({ ` + c.opt + `stage: 7, topic: 'feed' }); await window.__c.ready({ timeoutMs: 5000 });
  window.__made = [made.length, made[0] < performance.getEntriesByName('wsready:go-started')[0].startTime];`)
		made, _ := Eval[[]any](b, "window.__made")
		if len(made) != 2 || made[0] != 1.0 || made[1] != c.before || env.Srv.Stats().Handshakes-h0 != 1 {
			t.Fatalf("connect({ %s...}): [sockets made, the first before Go started] %v, want [1 %v]; %d handshakes, want 1", c.opt, made, c.before, env.Srv.Stats().Handshakes-h0)
		}
	}

	// A preconnected socket the server refused (Overload: 1013 and a 5 s
	// retry-after) is the client's first attempt: it honours the
	// retry-after instead of dialling again at once.
	blank()
	h0 = env.Srv.Stats().Handshakes
	env.Set("overload", true)
	run(`m.preconnect();`)
	poll.UntilEvery(5*time.Second, 20*time.Millisecond, func() bool { return env.Srv.Stats().Handshakes != h0 })
	waitOpen(t, env, 0, 5*time.Second)
	run(`window.__closes = []; window.__c = await m.connect({ stage: 7, topic: 'feed', onEvent: (e) => { if (e.kind === 'close') __closes.push(e.detail); } });`)
	browserRuns(1500 * time.Millisecond) // the client honours the retry-after: no second handshake in it
	closes, _ := Eval[[]string](b, "window.__closes")
	n := env.Srv.Stats().Handshakes - h0
	env.Set("overload", false)
	if len(closes) != 1 || !strings.Contains(closes[0], "1013") || n != 1 {
		t.Fatalf("preconnected socket refused with 1013: the client saw closes %q and the server %d handshakes in 1.5 s, want that one close and 1", closes, n)
	}

	// A close heard over 1 s before with no retry-after (WebSocket
	// blocked: a 403, so 1006) is old news: the client dials afresh, and
	// the first close it reports is its own socket's, the second made.
	blank()
	env.Set("blockWebSocket", true)
	run(`window.__made = 0; const W = WebSocket; window.WebSocket = class extends W { constructor(...a) { super(...a); __made++; } }; m.preconnect();`)
	browserRuns(1500 * time.Millisecond) // the close grows old: over 1 s
	run(`window.__at = []; window.__c = await m.connect({ stage: 7, topic: 'feed', onEvent: (e) => { if (e.kind === 'close') __at.push(__made); } });
  await new Promise((r) => setTimeout(r, 500));`)
	at, _ := Eval[[]float64](b, "window.__at")
	env.Set("blockWebSocket", false)
	if len(at) == 0 || at[0] != 2 {
		t.Fatalf("a stale close (1.5 s old, no retry-after): the client's closes came with %v sockets made, want the first with 2 (its own dial, not the old close replayed)", at)
	}

	blank()
	run(`m.preconnect();`)
	waitOpen(t, env, 1, 5*time.Second)
	opened := time.Now()
	waitOpen(t, env, 0, 10*time.Second)
	if d := time.Since(opened); d < 4*time.Second {
		t.Fatalf("the unused preconnected socket closed %v after it opened, want about 5 s", d)
	}
	if _, err := Eval[any](b, "(async () => (await import('/wsready.js')).preconnect('http://x/'))()"); err == nil || !strings.Contains(err.Error(), "must be a ws:// or wss:// URL") {
		t.Errorf("preconnect('http://x/'): %v, want a TypeError", err)
	}
}

// openNoClient opens the demo at an unknown stage: a page that starts no
// client, asks for no ticket and compiles nothing, for a test's own.
func openNoClient(t *testing.T, env *Env, b *Browser) {
	t.Helper()
	if err := b.Navigate(env.Base + "/?stage=x"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.wsreadyDemo && wsreadyDemo.error", 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// waitOpen waits until the server counts n open connections.
func waitOpen(t *testing.T, env *Env, n int, d time.Duration) {
	t.Helper()
	if !poll.UntilEvery(d, 20*time.Millisecond, func() bool { return env.Srv.Stats().Open == n }) {
		t.Fatalf("the server counts %d open connections after %v, want %d", env.Srv.Stats().Open, d, n)
	}
}

// jsCountLockRequests, run before a page's scripts, records each Web Locks
// request the page makes: its name and whether it asked ifAvailable.
const jsCountLockRequests = `(() => {
  const proto = globalThis.LockManager && LockManager.prototype;
  if (!proto) return;
  const request = proto.request;
  window.lockRequests = [];
  proto.request = function (name, ...rest) {
    window.lockRequests.push(name + (typeof rest[0] === 'object' && rest[0].ifAvailable ? ' ifAvailable' : ''));
    return request.call(this, name, ...rest);
  };
})();`

// The demo at stage 8 preconnects from its head, asking for the tabs'
// lock: its client leads with that request's lock, handed over, and makes
// no request of its own. Another tab stealing it is heard as a steal of
// the client's own lock: this tab steps down and follows.
func TestPreconnectHandsTheTabsLockOver(t *testing.T) {
	env, b := newEnv(t)
	runBeforeScripts(t, b, jsCountLockRequests)
	openStage8(t, env, b, "")
	if err := WaitJS(b, "wsreadyDemo.state && wsreadyDemo.state.ready && wsreadyDemo.state.leader", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	reqs, err := Eval[[]string](b, "window.lockRequests")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0], " ifAvailable") {
		t.Fatalf("the page's Web Locks requests: %q; want one, preconnect's (ifAvailable), handed to the client", reqs)
	}
	tab := newTab(t, b)
	t.Cleanup(tab.Close)
	openNoClient(t, env, tab)
	steal := `navigator.locks.request('wsready:' + (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws',
		{ steal: true }, () => new Promise(() => {})); true`
	if _, err := Eval[bool](tab, steal); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "wsreadyDemo.log.some((e) => e.kind === 'follower' && e.detail.includes('another tab took the lock')) && wsreadyDemo.state.follower", 5*time.Second); err != nil {
		logEvents(t, b, 0)
		t.Fatalf("the tab whose handed-over lock was stolen: %v", err)
	}
}

// A client whose connect() comes before the lock manager has answered
// preconnect()'s request (the wasm already loaded: connect() asks at once)
// is handed that request, still pending. Alone, the grant goes to it: one
// Web Locks request, and it leads. In a second tab the answer is that
// another tab holds the lock: the client asks as usual, queued, follows
// that tab, and leads once that tab is gone.
func TestPreconnectHandsAPendingLockOver(t *testing.T) {
	env, b := newEnv(t)
	open := func() *Browser {
		tab := newTab(t, b)
		t.Cleanup(tab.Close)
		runBeforeScripts(t, tab, jsCountLockRequests)
		openNoClient(t, env, tab)
		if _, err := Eval[any](tab, `(async () => {
			const m = await import('/wsready.js');
			await m.load();
			window.handed = await m.connect({ stage: 8 }); // preconnects, and asks in the same task
		})()`); err != nil {
			t.Fatal(err)
		}
		return tab
	}
	requests := func(tab *Browser) []string {
		reqs, err := Eval[[]string](tab, "window.lockRequests")
		if err != nil {
			t.Fatal(err)
		}
		return reqs
	}
	first := open()
	if err := WaitJS(first, "handed.state().leader && handed.state().ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if reqs := requests(first); len(reqs) != 1 || !strings.HasSuffix(reqs[0], " ifAvailable") {
		t.Fatalf("the first tab's Web Locks requests: %q; want one, preconnect's (ifAvailable), handed to the client while pending", reqs)
	}
	second := open()
	// A follower can be READY (the leader's state, heard over the tabs'
	// channel) before the lock manager's answer, and so before the queued
	// request that answer leads to.
	if err := WaitJS(second, "handed.state().follower && handed.state().ready && window.lockRequests.length >= 2", 10*time.Second); err != nil {
		r, _ := Eval[[]string](second, "window.lockRequests")
		t.Fatalf("%v (the second tab's Web Locks requests: %q)", err, r)
	}
	if reqs := requests(second); len(reqs) != 2 || !strings.HasSuffix(reqs[0], " ifAvailable") || strings.HasSuffix(reqs[1], " ifAvailable") {
		t.Fatalf("the second tab's Web Locks requests: %q; want preconnect's (ifAvailable) and its client's, queued", reqs)
	}
	first.Close()
	if err := WaitJS(second, "handed.state().leader && handed.state().ready", 10*time.Second); err != nil {
		t.Fatalf("the second tab, once the first is gone: %v", err)
	}
}

// preconnect(url, { tabs: true }) holds the tabs' lock until its own
// connect() asks for it; another tab's client asking first gets it: that
// tab leads at once (no wait for a silent leader and a steal) and the
// first tab's socket is dropped. The demo at stage 8 in the second tab
// opens no socket from its head either (the lock is held).
func TestPreconnectYieldsTheTabsLock(t *testing.T) {
	env, b := newEnv(t)
	openNoClient(t, env, b)
	if _, err := Eval[any](b, "(async () => { (await import('/wsready.js')).preconnect(undefined, { tabs: true }); })()"); err != nil {
		t.Fatal(err)
	}
	waitOpen(t, env, 1, 5*time.Second)
	h0 := env.Srv.Stats().Handshakes
	tab := newTab(t, b)
	t.Cleanup(tab.Close)
	openStage8(t, env, tab, "")
	if err := WaitJS(tab, "wsreadyDemo.state && wsreadyDemo.state.ready && wsreadyDemo.state.leader", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	steals, _ := Eval[[]string](tab, "wsreadyDemo.log.filter((e) => e.kind === 'tabs').map((e) => e.detail)")
	for _, d := range steals {
		if strings.Contains(d, "went silent") {
			t.Fatalf("the second tab took the lock from a silent leader (%q): the preconnect's lock did not yield", d)
		}
	}
	waitOpen(t, env, 1, 5*time.Second) // the first tab's socket dropped
	if n := env.Srv.Stats().Handshakes - h0; n != 1 {
		t.Fatalf("the second tab: %d handshakes, want 1 (its own; none from its head)", n)
	}
}
