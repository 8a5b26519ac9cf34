//go:build !js

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
	"github.com/wsready/wsready/server/demo"
)

// The browser bench (make bench-browser): wsready's browser client beside
// centrifuge-js (npm's centrifuge, installed by the make target into
// build/browserbench) in the same headless Chromium, each against its own
// server on loopback publishing one topic at a rate with the publish time in
// the payload ({"ts":<unix ms>,"value":<n>}, 29-31 bytes: both servers'
// feeds make the same bytes). The clients alternate (A B B A A B ...) and
// each run is, in order: a cold load (a fresh Chromium and profile) that
// measures browserBenchWarm after the first update for the window, then a
// warm visit of the same URL in the same browser (its HTTP cache and its
// cache of compiled wasm); then, in a second fresh Chromium, a cold and a
// warm visit over slowMobile. After the first rate's runs, the memory
// phase: every client's runs at once, a fresh Chromium per page, sampled at
// memorySampleAt and at the phase's end. Settings by environment
// (benchSettingsFromEnv): WSREADY_BROWSER_BENCH=1 runs it; _RATES (updates
// a second, comma-separated; default 200), _RUNS (per client and rate;
// default 3), _WINDOW (a Go duration; default 20s), _MEMORY (the memory
// phase's length; default 5m, 0 skips it), _OUT (the markdown written;
// default ../build/browserbench/results.md), _CLIENTS (default
// "centrifuge-js,wsready").
const (
	browserBenchWarm = 3 * time.Second
	// delayBucket is the delay histogram's resolution: 0.1 ms (Chromium's
	// performance.now() is coarsened to 0.1 ms without cross-origin
	// isolation). delayBuckets covers 0-2 s; a longer delay lands in the
	// last bucket (the max is kept apart, exact).
	delayBuckets = 20001
	// benchFirstUpdateWait bounds the wait for a page's first update on
	// loopback; benchSlowFirstUpdateWait over slowMobile (the wasm alone
	// takes about 3.3 s there).
	benchFirstUpdateWait     = 30 * time.Second
	benchSlowFirstUpdateWait = 90 * time.Second
)

// slowMobile is the bench's slow mobile link (a 4G link at its worst): 1.6 Mbit/s down, 750 kbit/s
// up, 150 ms latency, emulated by Chromium (Network.
// emulateNetworkConditionsByRule, every request of the tab).
var slowMobile = struct {
	latency  time.Duration
	down, up float64 // bytes a second
}{150 * time.Millisecond, 1.6e6 / 8, 750e3 / 8}

// benchRecorder is each page's common part: window.__bench counts the
// updates the client delivers and their delay (now, in unix ms at 0.1 ms,
// less the payload's ts, the server's publish time in whole ms: so every
// delay reads up to 1 ms long, the same for both clients). bytes() is the
// transferSize of the navigation and every resource (a file the cache
// served without a request transfers 0, a revalidated one only its 304's
// headers), served() each of those files, wasm() the byte length of the
// wasm's memory (null without one).
const benchRecorder = `<script>
  window.__bench = {
    n: 0, first: 0, max: 0, hist: new Uint32Array(` + "20001" + `), bad: 0, compileMs: null,
    rec(ts) {
      const now = performance.now();
      if (this.n++ === 0) this.first = now;
      if (typeof ts !== 'number') { this.bad++; return; }
      const d = performance.timeOrigin + now - ts;
      if (d > this.max) this.max = d;
      this.hist[Math.min(this.hist.length - 1, Math.max(0, Math.round(d * 10)))]++;
    },
    reset() { this.hist.fill(0); this.max = 0; },
    entries() {
      return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'));
    },
    bytes() {
      return this.entries().reduce((s, e) => s + (e.transferSize || 0), 0);
    },
    served() {
      return this.entries().map((e) => ({
        path: new URL(e.name).pathname, transfer: e.transferSize, body: e.encodedBodySize,
        requestStart: e.requestStart, responseStart: e.responseStart, responseEnd: e.responseEnd,
      }));
    },
    wasm() { return window.__wasmMem ? window.__wasmMem.buffer.byteLength : null; },
  };
</script>
`

// wasmProbe keeps what the wsready page's figures need from its wasm
// without any API change: it runs before wsready.js is imported and wraps
// WebAssembly's instantiate calls to keep the instance's memory
// (window.__wasmMem: Go's wasm exports it as mem) and compileStreaming to
// time it (__bench.compileMs: from the call, made as the fetch starts, to
// the module, so on loopback mostly the compile, or the compiled wasm's
// load from the browser's cache).
const wasmProbe = `<script>
  (() => {
    const keep = (r) => {
      const i = r instanceof WebAssembly.Instance ? r : r && r.instance;
      if (i && i.exports.mem instanceof WebAssembly.Memory) window.__wasmMem = i.exports.mem;
      return r;
    };
    const instantiate = WebAssembly.instantiate, streaming = WebAssembly.instantiateStreaming;
    const compile = WebAssembly.compileStreaming;
    WebAssembly.instantiate = function (...a) { return instantiate.apply(this, a).then(keep); };
    WebAssembly.instantiateStreaming = function (...a) { return streaming.apply(this, a).then(keep); };
    WebAssembly.compileStreaming = function (...a) {
      const t = performance.now();
      return compile.apply(this, a).then((m) => {
        if (window.__bench.compileMs === null) window.__bench.compileMs = performance.now() - t;
        return m;
      });
    };
  })();
</script>
`

// wsreadyBenchPage is wsready with the library's defaults (connect() with
// no option: stage 8, tabs on) and one subscribe, served by the demo
// server that carries the feed.
const wsreadyBenchPage = `<!doctype html>
<meta charset="utf-8">
<title>wsready bench</title>
` + benchRecorder + wasmProbe + `<script type="module">
  import { connect } from './wsready.js';
  const c = await connect();
  c.subscribe('feed', (u) => window.__bench.rec(u.data.ts));
</script>
`

// centrifugeBenchPage is centrifuge-js's browser bundle (dist/centrifuge.js,
// the JSON protocol) with its defaults and one subscription, served by the
// centrifuge server (cmd/wsready-bench/centrifuge -static).
const centrifugeBenchPage = `<!doctype html>
<meta charset="utf-8">
<title>centrifuge-js bench</title>
` + benchRecorder + `<script src="centrifuge.js"></script>
<script>
  const c = new Centrifuge('ws://' + location.host + '/connection/websocket');
  const s = c.newSubscription('feed');
  s.on('publication', (ctx) => window.__bench.rec(ctx.data.ts));
  s.subscribe();
  c.connect();
</script>
`

// benchMainFile is the file that makes each client's load: the one the
// warm visit must not fetch again in full and the slow link's check times.
var benchMainFile = map[string]string{"wsready": "/wsready.wasm", "centrifuge-js": "/centrifuge.js"}

// benchRun is one run's figures: the cold load and its window, the warm
// visit, the slow link's two visits.
type benchRun struct {
	client    string
	updates   int64   // delivered in the window
	rate      float64 // delivered per second in the window
	taskUs    float64 // per update: Performance.getMetrics TaskDuration delta
	scriptUs  float64 // ScriptDuration
	threadUs  float64 // ThreadTime (the main thread's CPU)
	firstMs   float64 // the first update's performance.now()
	bytes     float64 // transferSize of the navigation and every resource
	pssMiB    float64 // the renderer's PSS at the window's end
	heapMiB   float64 // JSHeapUsedSize at the window's end
	liveMiB   float64 // JSHeapUsedSize after a full GC (HeapProfiler.collectGarbage) at the end
	wasmMiB   float64 // the wasm's memory at the window's end (NaN: no wasm)
	p50, p99  float64 // delivery delay, ms
	maxMs     float64
	badUpdate int64 // updates whose payload had no numeric ts

	compileMs     float64 // wasmProbe's compileStreaming time, cold (NaN: no wasm)
	warmFirstMs   float64 // the warm visit's first update
	warmBytes     float64 // the warm visit's transferSize
	warmCompileMs float64
	warmServed    []benchServed // the warm visit's files
	wasmCached    int           // files in the profile's compiled wasm cache after the warm visit

	slowFirstMs     float64 // slowMobile, a cold load
	slowWarmFirstMs float64 // slowMobile, the warm visit in the same browser
	slowMainKBps    float64 // the cold load's main file: body bytes over its download time
}

// benchServed is one file of a visit, as its resource timing (the
// navigation's or a resource's) tells it.
type benchServed struct {
	Path          string  `json:"path"`
	Transfer      float64 `json:"transfer"`
	Body          float64 `json:"body"`
	RequestStart  float64 `json:"requestStart"`
	ResponseStart float64 `json:"responseStart"`
	ResponseEnd   float64 `json:"responseEnd"`
}

// how says how the file came: from the cache without a request (no bytes
// transferred), revalidated (a 304: only headers, fewer bytes than the
// body) or fetched in full.
func (s benchServed) how() string {
	switch {
	case s.Transfer == 0:
		return "cache, no request"
	case s.Transfer < s.Body:
		return "revalidated (304)"
	default:
		return "fetched in full"
	}
}

// benchVisit is what a visit's page tells once its first update is in.
type benchVisit struct {
	First   float64       `json:"first"`
	Bytes   float64       `json:"bytes"`
	Compile *float64      `json:"compile"` // nil: no wasm
	Served  []benchServed `json:"served"`
}

// file is the visit's entry for path, false without one.
func (v benchVisit) file(path string) (benchServed, bool) {
	for _, s := range v.Served {
		if s.Path == path {
			return s, true
		}
	}
	return benchServed{}, false
}

// benchSettings are the bench's settings (benchSettingsFromEnv).
type benchSettings struct {
	rates   []int
	runs    int
	window  time.Duration
	memory  time.Duration // the memory phase; 0: none
	clients []string
	out     string
}

// benchSettingsFromEnv reads the WSREADY_BROWSER_BENCH_* settings, each
// refused with a clear error when it is not what it may be.
func benchSettingsFromEnv() (benchSettings, error) {
	s := benchSettings{
		rates:   []int{200},
		runs:    3,
		window:  20 * time.Second,
		memory:  5 * time.Minute,
		clients: []string{"centrifuge-js", "wsready"},
		out:     filepath.Join("..", "build", "browserbench", "results.md"),
	}
	if v := os.Getenv("WSREADY_BROWSER_BENCH_RATES"); v != "" {
		s.rates = nil
		for _, f := range strings.Split(v, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || r < 1 || r > 1000 {
				return s, fmt.Errorf("WSREADY_BROWSER_BENCH_RATES: %q is not a rate in 1..1000", f)
			}
			s.rates = append(s.rates, r)
		}
	}
	if v := os.Getenv("WSREADY_BROWSER_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 50 {
			return s, fmt.Errorf("WSREADY_BROWSER_BENCH_RUNS: %q is not 1..50", v)
		}
		s.runs = n
	}
	if v := os.Getenv("WSREADY_BROWSER_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 10*time.Minute {
			return s, fmt.Errorf("WSREADY_BROWSER_BENCH_WINDOW: %q is not a duration in 1s..10m", v)
		}
		s.window = d
	}
	if v := os.Getenv("WSREADY_BROWSER_BENCH_MEMORY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || (d != 0 && (d < memoryMin || d > memoryMax)) {
			return s, fmt.Errorf("WSREADY_BROWSER_BENCH_MEMORY: %q is neither 0 (no memory phase) nor a duration in %s..%s (the first sample is at %s)", v, fmtShort(memoryMin), fmtShort(memoryMax), fmtShort(memorySampleAt))
		}
		s.memory = d
	}
	if v := os.Getenv("WSREADY_BROWSER_BENCH_CLIENTS"); v != "" {
		s.clients = strings.Split(v, ",")
		for i, c := range s.clients {
			if c != "centrifuge-js" && c != "wsready" {
				return s, fmt.Errorf("WSREADY_BROWSER_BENCH_CLIENTS: %q is neither centrifuge-js nor wsready", c)
			}
			if slices.Contains(s.clients[:i], c) {
				return s, fmt.Errorf("WSREADY_BROWSER_BENCH_CLIENTS: %q is named twice", c)
			}
		}
	}
	if v := os.Getenv("WSREADY_BROWSER_BENCH_OUT"); v != "" {
		s.out = v
	}
	return s, nil
}

func TestBrowserBench(t *testing.T) {
	if os.Getenv("WSREADY_BROWSER_BENCH") != "1" {
		t.Skip("set WSREADY_BROWSER_BENCH=1 (make bench-browser)")
	}
	set, err := benchSettingsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cjs := filepath.Join("..", "build", "browserbench", "node_modules", "centrifuge", "dist", "centrifuge.js")
	if slices.Contains(set.clients, "centrifuge-js") {
		if _, err := os.Stat(cjs); err != nil {
			t.Fatalf("centrifuge-js is missing (%v): make bench-browser installs it", err)
		}
	}

	var md strings.Builder
	fmt.Fprintf(&md, "Made by `make bench-browser` on %s, %s, %s, %d CPUs, load average %s at the start: %d runs per client and rate, alternating. Each run: a cold load (a fresh Chromium and profile), a %v window after %v of updates, then a warm visit of the same URL in the same browser (about:blank first, then the browser settled: its HTTP cache and its cache of compiled wasm kept); then a second fresh Chromium with a slow mobile link emulated (%.1f Mbit/s down, %.0f kbit/s up, %v latency): a cold load and a warm visit (no per-update CPU figures from these).\n", time.Now().UTC().Format(time.RFC3339), runtime.Version(), chromiumVersion(), runtime.NumCPU(), loadAverage(), set.runs, set.window, browserBenchWarm, slowMobile.down*8/1e6, slowMobile.up*8/1e3, slowMobile.latency)
	var memory string
	for i, rate := range set.rates {
		mem := time.Duration(0)
		if i == 0 {
			mem = set.memory
		}
		all, pages, err := benchRate(t, rate, set.runs, set.window, mem, set.clients, cjs)
		if err != nil {
			t.Fatalf("%d/s: %v", rate, err)
		}
		md.WriteString(benchTable(fmt.Sprintf("%d updates a second", rate), "run", all, func(r benchRun) string { return r.client }, benchWindowCols, set.clients))
		md.WriteString(benchTable(fmt.Sprintf("%d updates a second: the loads", rate), "run", all, func(r benchRun) string { return r.client }, benchLoadCols, set.clients))
		md.WriteString(warmServedTable(all, set.clients))
		// Every client kept up: one that fell far behind would look cheap
		// per update for the wrong reason. Half, not all: on a busy machine
		// the servers' tickers drop ticks (a Go ticker does not catch up),
		// so fewer are published; the table shows what was delivered.
		for _, r := range all {
			if r.rate < 0.5*float64(rate) {
				t.Errorf("%s at %d/s delivered %.0f updates a second", r.client, rate, r.rate)
			}
			if r.badUpdate > 0 {
				t.Errorf("%s at %d/s: %d updates without a numeric ts", r.client, rate, r.badUpdate)
			}
		}
		if mem > 0 {
			memory = memoryTable(rate, mem, pages, set.clients)
			for _, p := range pages {
				if p.rate < 0.5*float64(rate) {
					t.Errorf("memory phase: %s page %d at %d/s delivered %.0f updates a second", p.client, p.page, rate, p.rate)
				}
			}
		}
	}
	md.WriteString(memory)
	fmt.Fprintf(&md, "\nLoad average at the end: %s.\n", loadAverage())
	t.Log("\n" + md.String())
	if err := os.MkdirAll(filepath.Dir(set.out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(set.out, []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("written to %s", set.out)
}

// benchRate starts both servers feeding rate updates a second and runs
// each client runs times, alternating; then, with memory over 0, the
// memory phase of that length against the same servers.
func benchRate(t *testing.T, rate, runs int, window, memory time.Duration, clients []string, cjs string) ([]benchRun, []memoryPage, error) {
	interval := time.Second / time.Duration(rate)
	base := map[string]string{}
	if slices.Contains(clients, "wsready") {
		env, err := startDemoServer(nil, &demo.Options{FeedInterval: interval}, true, nil)
		if err != nil {
			return nil, nil, err
		}
		defer env.Close()
		mux := http.NewServeMux()
		mux.Handle("/bench.html", htmlPage(wsreadyBenchPage))
		mux.Handle("/", env.Demo.Handler())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("failed to listen: %w", err)
		}
		hs := env.Srv.HTTPServer(mux)
		go hs.Serve(ln)
		defer hs.Close()
		base["wsready"] = "http://" + ln.Addr().String()
	}
	if slices.Contains(clients, "centrifuge-js") {
		addr, stop, err := startCentrifuge(t, interval, cjs)
		if err != nil {
			return nil, nil, err
		}
		defer stop()
		base["centrifuge-js"] = "http://" + addr
	}
	var all []benchRun
	for i := range runs {
		order := slices.Clone(clients)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			r, err := benchOne(c, base[c]+"/bench.html", window)
			if err != nil {
				return nil, nil, fmt.Errorf("%s run %d: %w", c, i+1, err)
			}
			t.Logf("%d/s %s run %d: %s", rate, c, i+1, r)
			all = append(all, r)
		}
	}
	if memory == 0 {
		return all, nil, nil
	}
	pages, err := benchMemory(t, runs, memory, clients, base)
	if err != nil {
		return nil, nil, fmt.Errorf("memory phase: %w", err)
	}
	return all, pages, nil
}

// String is the run's figures on one line, for the test's log.
func (r benchRun) String() string {
	return fmt.Sprintf("%d updates (%.0f/s), task %.0f script %.0f thread %.0f us/update, first update %.0f ms (%.0f KB, wasm compile %.0f ms), warm %.0f ms (%.1f KB, compile %.0f ms), slow cold %.0f ms (main file %.0f KB/s), slow warm %.0f ms, PSS %.1f MiB, JS heap %.2f MiB (%.2f after GC), wasm %.1f MiB, delay p50 %.1f p99 %.1f max %.1f ms",
		r.updates, r.rate, r.taskUs, r.scriptUs, r.threadUs, r.firstMs, r.bytes/1000, r.compileMs, r.warmFirstMs, r.warmBytes/1000, r.warmCompileMs,
		r.slowFirstMs, r.slowMainKBps, r.slowWarmFirstMs, r.pssMiB, r.heapMiB, r.liveMiB, r.wasmMiB, r.p50, r.p99, r.maxMs)
}

// startCentrifuge builds cmd/wsready-bench/centrifuge (a module of its
// own) and runs it feeding every interval, serving the bench page and
// centrifuge-js from a temporary directory.
func startCentrifuge(t *testing.T, interval time.Duration, cjs string) (string, func(), error) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "centrifuge-peer")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "cmd", "wsready-bench", "centrifuge")
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("failed to build the centrifuge server: %w: %s", err, out)
	}
	static := filepath.Join(dir, "static")
	if err := os.Mkdir(static, 0o755); err != nil {
		return "", nil, err
	}
	js, err := os.ReadFile(cjs)
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(static, "centrifuge.js"), js, 0o644); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(static, "bench.html"), []byte(centrifugeBenchPage), 0o644); err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "-feed", interval.String(), "-static", static)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("failed to start the centrifuge server: %w", err)
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		f := strings.Fields(l)
		if !ok || len(f) != 2 || f[0] != "listening" {
			stop()
			return "", nil, fmt.Errorf("the centrifuge server said %q, not its address", l)
		}
		return f[1], stop, nil
	case <-time.After(20 * time.Second):
		stop()
		return "", nil, errors.New("the centrifuge server did not say its address within 20s")
	}
}

// benchOne is one run of client at url: the cold load with its window and
// the warm visit in one fresh Chromium, then the slow link's cold and warm
// visits in another.
func benchOne(client, url string, window time.Duration) (benchRun, error) {
	r := benchRun{client: client}
	if err := benchLoopback(&r, url, window); err != nil {
		return r, err
	}
	if err := benchSlow(&r, url); err != nil {
		return r, fmt.Errorf("slow link: %w", err)
	}
	return r, nil
}

// benchLoopback is the cold load of url in a fresh Chromium, its window
// and its figures, then the warm visit.
func benchLoopback(r *benchRun, url string, window time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), window+3*time.Minute)
	defer cancel()
	b, err := NewBrowser(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if _, _, err := b.Settle(); err != nil {
		return err
	}
	if _, err := chromedp.Call(b.Ctx, performance.Enable, performance.EnableParams{}); err != nil {
		return fmt.Errorf("failed to enable Performance: %w", err)
	}
	if err := b.Navigate(url); err != nil {
		return err
	}
	if err := WaitJS(b, "window.__bench && window.__bench.n > 0", benchFirstUpdateWait); err != nil {
		return fmt.Errorf("no update: %w", err)
	}
	browserRuns(browserBenchWarm) // the warm-up
	m0, err := metrics(b)
	if err != nil {
		return err
	}
	n0, err := Eval[int64](b, "(window.__bench.reset(), window.__bench.n)")
	if err != nil {
		return err
	}
	start := time.Now()
	browserRuns(window) // the measured window
	n1, err := Eval[int64](b, "window.__bench.n")
	if err != nil {
		return err
	}
	took := time.Since(start)
	m1, err := metrics(b)
	if err != nil {
		return err
	}
	type page struct {
		Max   float64    `json:"max"`
		Bad   int64      `json:"bad"`
		Wasm  *float64   `json:"wasm"`
		Hist  []uint32   `json:"hist"`
		Visit benchVisit `json:"visit"`
	}
	p, err := Eval[page](b, "({ max: __bench.max, bad: __bench.bad, wasm: __bench.wasm(), hist: Array.from(__bench.hist), visit: "+visitFigures+" })")
	if err != nil {
		return err
	}
	r.updates = n1 - n0
	if r.updates <= 0 {
		return errors.New("no update in the window")
	}
	n := float64(r.updates)
	r.rate = n / took.Seconds()
	r.taskUs = (m1["TaskDuration"] - m0["TaskDuration"]) * 1e6 / n
	r.scriptUs = (m1["ScriptDuration"] - m0["ScriptDuration"]) * 1e6 / n
	r.threadUs = (m1["ThreadTime"] - m0["ThreadTime"]) * 1e6 / n
	r.heapMiB = m1["JSHeapUsedSize"] / (1 << 20)
	r.maxMs, r.badUpdate, r.wasmMiB = p.Max, p.Bad, orNaN(p.Wasm)/(1<<20)
	r.firstMs, r.bytes, r.compileMs = p.Visit.First, p.Visit.Bytes, orNaN(p.Visit.Compile)
	r.p50, r.p99 = histQuantile(p.Hist, 0.5), histQuantile(p.Hist, 0.99)
	r.pssMiB = rendererPSS(b)
	// What the page holds: JSHeapUsedSize moves with when V8 last
	// collected (a client that leaves the main thread idle more often gets
	// collected at other moments).
	live, err := heapAfterGC(b)
	if err != nil {
		return err
	}
	r.liveMiB = live
	// The warm visit: a person's second visit, the page's files in the
	// browser's HTTP cache (and the wasm's compiled code in its cache).
	w, err := revisit(b, url, benchFirstUpdateWait)
	if err != nil {
		return fmt.Errorf("warm visit: %w", err)
	}
	main, ok := w.file(benchMainFile[r.client])
	if !ok {
		return fmt.Errorf("warm visit: no %s among its files (%v)", benchMainFile[r.client], w.Served)
	}
	if main.how() == "fetched in full" {
		return fmt.Errorf("warm visit: %s fetched in full (%.0f bytes transferred for a body of %.0f): the cache did not serve it", main.Path, main.Transfer, main.Body)
	}
	r.warmFirstMs, r.warmBytes, r.warmCompileMs, r.warmServed = w.First, w.Bytes, orNaN(w.Compile), w.Served
	r.wasmCached = wasmCodeCached(b)
	return nil
}

// wasmCodeCached is how many entries b's profile holds in Chromium's
// cache of compiled wasm (Default/Code Cache/wasm, its index aside): what
// a warm visit could load instead of compiling. -1 when unreadable.
func wasmCodeCached(b *Browser) int {
	es, err := os.ReadDir(filepath.Join(b.dir, "Default", "Code Cache", "wasm"))
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range es {
		if !e.IsDir() && e.Name() != "index" {
			n++
		}
	}
	return n
}

// benchSlow is a cold load of url over slowMobile in a fresh Chromium,
// then a warm visit in the same browser, still over slowMobile; each is
// checked to have been slowed.
func benchSlow(r *benchRun, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*benchSlowFirstUpdateWait+time.Minute)
	defer cancel()
	b, err := NewBrowser(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if _, _, err := b.Settle(); err != nil {
		return err
	}
	if err := emulateSlowMobile(b); err != nil {
		return err
	}
	if err := b.Navigate(url); err != nil {
		return err
	}
	if err := WaitJS(b, "window.__bench && window.__bench.n > 0", benchSlowFirstUpdateWait); err != nil {
		return fmt.Errorf("no update: %w", err)
	}
	cold, err := Eval[benchVisit](b, visitFigures)
	if err != nil {
		return err
	}
	kbps, err := slowLinkTookEffect(cold, benchMainFile[r.client], true)
	if err != nil {
		return fmt.Errorf("cold load: %w", err)
	}
	warm, err := revisit(b, url, benchSlowFirstUpdateWait)
	if err != nil {
		return fmt.Errorf("warm visit: %w", err)
	}
	if _, err := slowLinkTookEffect(warm, benchMainFile[r.client], false); err != nil {
		return fmt.Errorf("warm visit: %w", err)
	}
	r.slowFirstMs, r.slowWarmFirstMs, r.slowMainKBps = cold.First, warm.First, kbps
	return nil
}

// emulateSlowMobile puts b's tab on slowMobile, every request of it from
// the next on. Network.emulateNetworkConditions is deprecated (and gone
// from cdproto); its successor takes rules, and one with no URL pattern
// matches every request.
func emulateSlowMobile(b *Browser) error {
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return fmt.Errorf("failed to enable Network: %w", err)
	}
	cond := &network.Conditions{
		Latency:            float64(slowMobile.latency.Milliseconds()),
		DownloadThroughput: slowMobile.down,
		UploadThroughput:   slowMobile.up,
	}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{cond},
	}); err != nil {
		return fmt.Errorf("failed to emulate the slow link: %w", err)
	}
	return nil
}

// slowLinkTookEffect checks a visit over slowMobile was slowed: the page's
// HTML took at least most of the latency from its request to its last
// byte, and, with full, the main file (fetched in full) came at most a
// little faster than the link's download rate. It returns that file's
// rate in KB/s: its body over the time from its request to its last byte,
// less the latency (Chromium 156 applies the emulated latency between the
// response's first byte and its last, measured: responseStart moves
// little), NaN without full.
func slowLinkTookEffect(v benchVisit, mainFile string, full bool) (float64, error) {
	latency := float64(slowMobile.latency.Milliseconds())
	nav, ok := v.file("/bench.html")
	if !ok {
		return math.NaN(), fmt.Errorf("no /bench.html among the visit's files (%v)", v.Served)
	}
	if took := nav.ResponseEnd - nav.RequestStart; nav.how() != "cache, no request" && took < 0.8*latency {
		return math.NaN(), fmt.Errorf("/bench.html came %.0f ms after its request, within the emulated %v latency: the link was not emulated", took, slowMobile.latency)
	}
	if !full {
		return math.NaN(), nil
	}
	m, ok := v.file(mainFile)
	if !ok {
		return math.NaN(), fmt.Errorf("no %s among the visit's files (%v)", mainFile, v.Served)
	}
	if m.how() != "fetched in full" {
		return math.NaN(), fmt.Errorf("%s: %s on a cold load", mainFile, m.how())
	}
	took := (m.ResponseEnd - m.RequestStart - latency) / 1000
	kbps := m.Body / 1000 / took
	if want := m.Body / slowMobile.down; took < 0.8*want {
		return kbps, fmt.Errorf("%s (%.0f bytes) took %.0f ms from its request to its last byte beyond the latency, not the %.0f ms of the emulated %.0f KB/s: the link was not emulated", mainFile, m.Body, took*1000, want*1000, slowMobile.down/1000)
	}
	return kbps, nil
}

// visitFigures is the expression a visit's figures are read with.
const visitFigures = "({ first: __bench.first, bytes: __bench.bytes(), compile: __bench.compileMs, served: __bench.served() })"

// revisit is the warm visit: b's tab to about:blank (the page and its
// connection gone), the browser settled, then url again in the same tab;
// its figures once the first update is in.
func revisit(b *Browser, url string, wait time.Duration) (benchVisit, error) {
	if err := b.Navigate("about:blank"); err != nil {
		return benchVisit{}, err
	}
	if _, _, err := b.Settle(); err != nil {
		return benchVisit{}, err
	}
	if err := b.Navigate(url); err != nil {
		return benchVisit{}, err
	}
	if err := WaitJS(b, "window.__bench && window.__bench.n > 0", wait); err != nil {
		return benchVisit{}, fmt.Errorf("no update: %w", err)
	}
	return Eval[benchVisit](b, visitFigures)
}

// heapAfterGC is JSHeapUsedSize, in MiB, after a full GC
// (HeapProfiler.collectGarbage).
func heapAfterGC(b *Browser) (float64, error) {
	gctx, gcancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer gcancel()
	if _, err := chromedp.Call(gctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
		return math.NaN(), fmt.Errorf("failed to collect garbage: %w", err)
	}
	m, err := metrics(b)
	if err != nil {
		return math.NaN(), err
	}
	return m["JSHeapUsedSize"] / (1 << 20), nil
}

// orNaN is *p, NaN for nil (a figure the page does not have: JSON has no
// NaN).
func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// metrics is Performance.getMetrics by name.
func metrics(b *Browser) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		return nil, fmt.Errorf("failed to get metrics: %w", err)
	}
	m := map[string]float64{}
	for _, x := range res.Metrics {
		m[x.Name] = x.Value
	}
	return m, nil
}

// histQuantile is the q quantile of the 0.1 ms delay histogram, in ms.
func histQuantile(h []uint32, q float64) float64 {
	var total uint64
	for _, c := range h {
		total += uint64(c)
	}
	if total == 0 {
		return math.NaN()
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h {
		seen += uint64(c)
		if seen >= want {
			return float64(i) / 10
		}
	}
	return float64(len(h)-1) / 10
}

// rendererPSS is the largest PSS, in MiB, of b's Chromium's renderer
// processes (/proc/PID/smaps_rollup): the page's (a spare renderer holds a
// few MiB); NaN without /proc.
func rendererPSS(b *Browser) float64 {
	c := chromedp.FromContext(b.Ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return math.NaN()
	}
	tree, ok := treeTicks(c.Browser.Process().Pid)
	if !ok {
		return math.NaN()
	}
	best := math.NaN()
	for pid := range tree {
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmd), "--type=renderer") {
			continue
		}
		sm, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(sm), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == "Pss:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				if mib := kb / 1024; math.IsNaN(best) || mib > best {
					best = mib
				}
			}
		}
	}
	return best
}

// benchCol is one of a table's figures: its heading, the row's value and
// its decimals.
type benchCol[R any] struct {
	head string
	val  func(r R) float64
	prec int
}

// benchWindowCols are the cold load's and its window's figures.
var benchWindowCols = []benchCol[benchRun]{
	{"task us/update", func(r benchRun) float64 { return r.taskUs }, 0},
	{"script us/update", func(r benchRun) float64 { return r.scriptUs }, 0},
	{"thread us/update", func(r benchRun) float64 { return r.threadUs }, 0},
	{"first update ms", func(r benchRun) float64 { return r.firstMs }, 0},
	{"KB loaded", func(r benchRun) float64 { return r.bytes / 1000 }, 0},
	{"PSS MiB", func(r benchRun) float64 { return r.pssMiB }, 1},
	{"JS heap MiB", func(r benchRun) float64 { return r.heapMiB }, 2},
	{"after GC MiB", func(r benchRun) float64 { return r.liveMiB }, 2},
	{"wasm MiB", func(r benchRun) float64 { return r.wasmMiB }, 1},
	{"delay p50 ms", func(r benchRun) float64 { return r.p50 }, 1},
	{"delay p99 ms", func(r benchRun) float64 { return r.p99 }, 1},
	{"delay max ms", func(r benchRun) float64 { return r.maxMs }, 1},
	{"updates/s", func(r benchRun) float64 { return r.rate }, 0},
}

// benchLoadCols are the loads: cold and warm, on loopback and over
// slowMobile.
var benchLoadCols = []benchCol[benchRun]{
	{"first update ms", func(r benchRun) float64 { return r.firstMs }, 0},
	{"first update warm ms", func(r benchRun) float64 { return r.warmFirstMs }, 0},
	{"first update slow cold ms", func(r benchRun) float64 { return r.slowFirstMs }, 0},
	{"first update slow warm ms", func(r benchRun) float64 { return r.slowWarmFirstMs }, 0},
	{"KB loaded", func(r benchRun) float64 { return r.bytes / 1000 }, 0},
	{"KB loaded warm", func(r benchRun) float64 { return r.warmBytes / 1000 }, 1},
	{"wasm compile ms", func(r benchRun) float64 { return r.compileMs }, 0},
	{"wasm compile warm ms", func(r benchRun) float64 { return r.warmCompileMs }, 0},
	{"slow link main file KB/s", func(r benchRun) float64 { return r.slowMainKBps }, 0},
}

// benchTable is every row (a run or a page: label), then each client's
// medians and, with both clients, wsready's median over centrifuge-js's
// and the median of the paired ratios. A figure a row does not have (NaN)
// shows as "-" and is left out of its medians.
func benchTable[R any](title, label string, rows []R, client func(R) string, cols []benchCol[R], clients []string) string {
	var s strings.Builder
	if title != "" {
		fmt.Fprintf(&s, "\n### %s\n", title)
	}
	fmt.Fprintf(&s, "\n| %s | client |", label)
	for _, c := range cols {
		s.WriteString(" " + c.head + " |")
	}
	s.WriteString("\n|---|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	seen := map[string]int{}
	for _, r := range rows {
		seen[client(r)]++
		fmt.Fprintf(&s, "| %d | %s |", seen[client(r)], client(r))
		for _, c := range cols {
			fmt.Fprintf(&s, " %s |", fmtFig(c.val(r), c.prec))
		}
		s.WriteString("\n")
	}
	med := map[string][]float64{}
	for _, cl := range clients {
		fmt.Fprintf(&s, "| median | %s |", cl)
		for _, c := range cols {
			var xs []float64
			for _, r := range rows {
				if client(r) == cl {
					xs = append(xs, c.val(r))
				}
			}
			m := medianF(xs)
			med[cl] = append(med[cl], m)
			if math.IsNaN(m) {
				s.WriteString(" - |")
			} else {
				fmt.Fprintf(&s, " **%.*f** |", c.prec, m)
			}
		}
		s.WriteString("\n")
	}
	if len(clients) == 2 {
		// A growth (a column named "... growth") is a difference: a ratio
		// of two says nothing (either may be near zero or below it).
		ratio := func(c benchCol[R], v float64) string {
			if strings.HasSuffix(c.head, " growth") {
				return "-"
			}
			return fmtRatio(v)
		}
		s.WriteString("| ratio of medians | wsready / centrifuge-js |")
		for i, c := range cols {
			fmt.Fprintf(&s, " %s |", ratio(c, med["wsready"][i]/med["centrifuge-js"][i]))
		}
		// Row k of one beside row k of the other (runs: adjacent in time,
		// A B, B A, ..., so a busy spell of the machine weighs on both).
		s.WriteString("\n| median of paired ratios | wsready / centrifuge-js |")
		var w, c []R
		for _, r := range rows {
			if client(r) == "wsready" {
				w = append(w, r)
			} else {
				c = append(c, r)
			}
		}
		for _, col := range cols {
			var xs []float64
			for k := range min(len(w), len(c)) {
				xs = append(xs, col.val(w[k])/col.val(c[k]))
			}
			fmt.Fprintf(&s, " %s |", ratio(col, medianF(xs)))
		}
		s.WriteString("\n")
	}
	return s.String()
}

// warmServedTable says how each client's files came on the warm visits:
// per file, how often each way (benchServed.how) and the bytes
// transferred (the median over the runs).
func warmServedTable(all []benchRun, clients []string) string {
	var s strings.Builder
	s.WriteString("\nHow the warm visits' files came (resource timing: no bytes transferred is the cache without a request; fewer than the body, a revalidation, 304):\n\n| client | file | how (runs) | bytes transferred, median | body bytes |\n|---|---|---|---:|---:|\n")
	for _, cl := range clients {
		var paths []string
		how := map[string]map[string]int{}
		transfer, body := map[string][]float64{}, map[string][]float64{}
		for _, r := range all {
			if r.client != cl {
				continue
			}
			for _, f := range r.warmServed {
				if how[f.Path] == nil {
					paths = append(paths, f.Path)
					how[f.Path] = map[string]int{}
				}
				how[f.Path][f.how()]++
				transfer[f.Path] = append(transfer[f.Path], f.Transfer)
				body[f.Path] = append(body[f.Path], f.Body)
			}
		}
		for _, p := range paths {
			var ways []string
			for w, n := range how[p] {
				ways = append(ways, fmt.Sprintf("%s (%d)", w, n))
			}
			slices.Sort(ways)
			fmt.Fprintf(&s, "| %s | %s | %s | %.0f | %.0f |\n", cl, p, strings.Join(ways, ", "), medianF(transfer[p]), medianF(body[p]))
		}
	}
	var per []string
	for _, cl := range clients {
		var ns []string
		for _, r := range all {
			if r.client == cl {
				ns = append(ns, strconv.Itoa(r.wasmCached))
			}
		}
		per = append(per, cl+" "+strings.Join(ns, ", "))
	}
	fmt.Fprintf(&s, "\nEntries in Chromium's cache of compiled wasm (the profile's Code Cache/wasm, its index aside) after each warm visit, by run (-1: unreadable): %s.\n", strings.Join(per, "; "))
	return s.String()
}

// fmtFig is v with prec decimals, "-" for NaN (a figure the row has not).
func fmtFig(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// fmtRatio is a ratio as "1.23x", "-" when there is none (NaN, or an
// infinity from a zero below).
func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

// medianF is the median of xs, NaNs left out (the mean of the middle two
// for an even count), NaN for none.
func medianF(xs []float64) float64 {
	s := slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestBrowserBenchSettings: the bench's settings have their defaults, take
// what is valid (0 for the memory phase: none) and refuse the rest, each
// by its variable's name, before any browser starts.
func TestBrowserBenchSettings(t *testing.T) {
	vars := []string{"RATES", "RUNS", "WINDOW", "MEMORY", "CLIENTS", "OUT"}
	clear := func() {
		for _, v := range vars {
			t.Setenv("WSREADY_BROWSER_BENCH_"+v, "")
		}
	}
	clear()
	s, err := benchSettingsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.rates, []int{200}) || s.runs != 3 || s.window != 20*time.Second || s.memory != 5*time.Minute ||
		!slices.Equal(s.clients, []string{"centrifuge-js", "wsready"}) || s.out != filepath.Join("..", "build", "browserbench", "results.md") {
		t.Errorf("defaults: %+v", s)
	}
	for _, c := range []struct {
		name, value string
		check       func(benchSettings) bool
	}{
		{"RATES", "200, 1000", func(s benchSettings) bool { return slices.Equal(s.rates, []int{200, 1000}) }},
		{"RUNS", "1", func(s benchSettings) bool { return s.runs == 1 }},
		{"WINDOW", "3s", func(s benchSettings) bool { return s.window == 3*time.Second }},
		{"MEMORY", "0", func(s benchSettings) bool { return s.memory == 0 }},
		{"MEMORY", "30s", func(s benchSettings) bool { return s.memory == 30*time.Second }},
		{"MEMORY", "30m", func(s benchSettings) bool { return s.memory == 30*time.Minute }},
		{"CLIENTS", "wsready", func(s benchSettings) bool { return slices.Equal(s.clients, []string{"wsready"}) }},
		{"OUT", "x.md", func(s benchSettings) bool { return s.out == "x.md" }},
	} {
		clear()
		t.Setenv("WSREADY_BROWSER_BENCH_"+c.name, c.value)
		s, err := benchSettingsFromEnv()
		if err != nil || !c.check(s) {
			t.Errorf("%s=%q: %+v, %v", c.name, c.value, s, err)
		}
	}
	for _, c := range []struct{ name, value string }{
		{"RATES", "0"}, {"RATES", "1001"}, {"RATES", "200,"}, {"RATES", "fast"},
		{"RUNS", "0"}, {"RUNS", "51"}, {"RUNS", "-1"}, {"RUNS", "three"},
		{"WINDOW", "0"}, {"WINDOW", "999ms"}, {"WINDOW", "11m"}, {"WINDOW", "20"},
		{"MEMORY", "-1s"}, {"MEMORY", "20s"}, {"MEMORY", "29s"}, {"MEMORY", "31m"}, {"MEMORY", "5"}, {"MEMORY", "forever"},
		{"CLIENTS", "wsready,"}, {"CLIENTS", "centrifuge"}, {"CLIENTS", "wsready,wsready"},
	} {
		clear()
		t.Setenv("WSREADY_BROWSER_BENCH_"+c.name, c.value)
		if _, err := benchSettingsFromEnv(); err == nil || !strings.Contains(err.Error(), "WSREADY_BROWSER_BENCH_"+c.name) {
			t.Errorf("%s=%q: %v, want it refused by name", c.name, c.value, err)
		}
	}
}

// TestBrowserBenchChecksAndTables: the slow link's check refuses a visit
// that was not slowed and takes one that was; a file's way from the cache
// reads from its bytes; the tables leave out what a client has not (NaN:
// "-", out of the medians) and pair run k with run k.
func TestBrowserBenchChecksAndTables(t *testing.T) {
	file := func(path string, transfer, body, req, end float64) benchServed {
		return benchServed{Path: path, Transfer: transfer, Body: body, RequestStart: req, ResponseStart: req + 1, ResponseEnd: end}
	}
	// 200,000 bytes at 200 KB/s: 1 s beyond the latency.
	slowed := benchVisit{Served: []benchServed{file("/bench.html", 2000, 1700, 10, 175), file("/wsready.wasm", 200300, 200000, 200, 200+150+1000)}}
	if kbps, err := slowLinkTookEffect(slowed, "/wsready.wasm", true); err != nil || math.Abs(kbps-200) > 0.5 {
		t.Errorf("a slowed visit: %.1f KB/s, %v", kbps, err)
	}
	for name, v := range map[string]benchVisit{
		"HTML at once":         {Served: []benchServed{file("/bench.html", 2000, 1700, 10, 20), slowed.Served[1]}},
		"the wasm too fast":    {Served: []benchServed{slowed.Served[0], file("/wsready.wasm", 200300, 200000, 200, 200+150+500)}},
		"the wasm revalidated": {Served: []benchServed{slowed.Served[0], file("/wsready.wasm", 300, 200000, 200, 360)}},
		"no wasm":              {Served: slowed.Served[:1]},
	} {
		if _, err := slowLinkTookEffect(v, "/wsready.wasm", true); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	if _, err := slowLinkTookEffect(benchVisit{Served: []benchServed{file("/bench.html", 2000, 1700, 10, 175), file("/wsready.wasm", 300, 200000, 200, 360)}}, "/wsready.wasm", false); err != nil {
		t.Errorf("a slowed warm visit: %v", err)
	}
	for _, c := range []struct {
		f    benchServed
		want string
	}{
		{file("/a", 0, 5000, 0, 0), "cache, no request"},
		{file("/a", 300, 5000, 0, 0), "revalidated (304)"},
		{file("/a", 5300, 5000, 0, 0), "fetched in full"},
	} {
		if got := c.f.how(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.f, got, c.want)
		}
	}

	runs := []benchRun{
		{client: "centrifuge-js", firstMs: 100, wasmMiB: math.NaN()},
		{client: "wsready", firstMs: 300, wasmMiB: 4},
		{client: "wsready", firstMs: 200, wasmMiB: 6},
		{client: "centrifuge-js", firstMs: 50, wasmMiB: math.NaN()},
	}
	cols := []benchCol[benchRun]{
		{"first update ms", func(r benchRun) float64 { return r.firstMs }, 0},
		{"wasm MiB", func(r benchRun) float64 { return r.wasmMiB }, 1},
	}
	got := benchTable("t", "run", runs, func(r benchRun) string { return r.client }, cols, []string{"centrifuge-js", "wsready"})
	for _, want := range []string{
		"| 1 | centrifuge-js | 100 | - |",
		"| 2 | wsready | 200 | 6.0 |",
		"| median | centrifuge-js | **75** | - |",
		"| median | wsready | **250** | **5.0** |",
		"| ratio of medians | wsready / centrifuge-js | 3.33x | - |",
		"| median of paired ratios | wsready / centrifuge-js | 3.50x | - |", // 300/100 and 200/50
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table has no %q:\n%s", want, got)
		}
	}
	pages := []memoryPage{
		{client: "wsready", page: 1, early: memorySample{pss: 50, wasm: 4}, late: memorySample{pss: 60, wasm: 8}},
		{client: "centrifuge-js", page: 1, early: memorySample{pss: 40, wasm: math.NaN()}, late: memorySample{pss: 45, wasm: math.NaN()}},
	}
	mt := memoryTable(200, 5*time.Minute, pages, []string{"centrifuge-js", "wsready"})
	for _, want := range []string{"PSS MiB 20s | PSS MiB 5m | PSS MiB growth |", "| 1 | wsready | 50.0 | 60.0 | 10.0 |", "| ratio of medians | wsready / centrifuge-js | 1.25x | 1.33x | - |", "not sensitive to CPU contention"} {
		if !strings.Contains(mt, want) {
			t.Errorf("the memory table has no %q:\n%s", want, mt)
		}
	}
}
