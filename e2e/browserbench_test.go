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
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
	"github.com/wsready/wsready/server/demo"
)

// The browser bench (make bench-browser): wsready's browser client beside
// centrifuge-js (npm's centrifuge, installed by the make target into
// build/browserbench) in the same headless Chromium, each against its own
// server on loopback publishing one topic at a rate with the publish time in
// the payload ({"ts":<unix ms>,"value":<n>}, 29-31 bytes: both servers'
// feeds make the same bytes). Every run is a cold load (a fresh Chromium
// and profile), the clients alternate (A B B A A B ...), and a run measures
// browserBenchWarm after the first update for the window. Settings by
// environment: WSREADY_BROWSER_BENCH=1 runs it; _RATES (updates a second,
// comma-separated; default 200), _RUNS (per client and rate; default 3),
// _WINDOW (a Go duration; default 20s), _OUT (the markdown written;
// default ../build/browserbench/results.md), _CLIENTS (default
// "centrifuge-js,wsready").
const (
	browserBenchWarm = 3 * time.Second
	// delayBucket is the delay histogram's resolution: 0.1 ms (Chromium's
	// performance.now() is coarsened to 0.1 ms without cross-origin
	// isolation). delayBuckets covers 0-2 s; a longer delay lands in the
	// last bucket (the max is kept apart, exact).
	delayBuckets = 20001
)

// benchRecorder is each page's common part: window.__bench counts the
// updates the client delivers and their delay (now, in unix ms at 0.1 ms,
// less the payload's ts, the server's publish time in whole ms: so every
// delay reads up to 1 ms long, the same for both clients).
const benchRecorder = `<script>
  window.__bench = {
    n: 0, first: 0, max: 0, hist: new Uint32Array(` + "20001" + `), bad: 0,
    rec(ts) {
      const now = performance.now();
      if (this.n++ === 0) this.first = now;
      if (typeof ts !== 'number') { this.bad++; return; }
      const d = performance.timeOrigin + now - ts;
      if (d > this.max) this.max = d;
      this.hist[Math.min(this.hist.length - 1, Math.max(0, Math.round(d * 10)))]++;
    },
    reset() { this.hist.fill(0); this.max = 0; },
    bytes() {
      return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
        .reduce((s, e) => s + (e.transferSize || 0), 0);
    },
  };
</script>
`

// wsreadyBenchPage is wsready with the library's defaults (connect() with
// no option: stage 8, tabs on) and one subscribe, served by the demo
// server that carries the feed.
const wsreadyBenchPage = `<!doctype html>
<meta charset="utf-8">
<title>wsready bench</title>
` + benchRecorder + `<script type="module">
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

// benchRun is one cold load's figures.
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
	p50, p99  float64 // delivery delay, ms
	maxMs     float64
	badUpdate int64 // updates whose payload had no numeric ts
}

func TestBrowserBench(t *testing.T) {
	if os.Getenv("WSREADY_BROWSER_BENCH") != "1" {
		t.Skip("set WSREADY_BROWSER_BENCH=1 (make bench-browser)")
	}
	rates := []int{200}
	if s := os.Getenv("WSREADY_BROWSER_BENCH_RATES"); s != "" {
		rates = nil
		for _, f := range strings.Split(s, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || r < 1 || r > 1000 {
				t.Fatalf("WSREADY_BROWSER_BENCH_RATES: %q is not a rate in 1..1000", f)
			}
			rates = append(rates, r)
		}
	}
	runs := 3
	if s := os.Getenv("WSREADY_BROWSER_BENCH_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 50 {
			t.Fatalf("WSREADY_BROWSER_BENCH_RUNS: %q is not 1..50", s)
		}
		runs = n
	}
	window := 20 * time.Second
	if s := os.Getenv("WSREADY_BROWSER_BENCH_WINDOW"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > 10*time.Minute {
			t.Fatalf("WSREADY_BROWSER_BENCH_WINDOW: %q is not a duration in 1s..10m", s)
		}
		window = d
	}
	clients := []string{"centrifuge-js", "wsready"}
	if s := os.Getenv("WSREADY_BROWSER_BENCH_CLIENTS"); s != "" {
		clients = strings.Split(s, ",")
		for _, c := range clients {
			if c != "centrifuge-js" && c != "wsready" {
				t.Fatalf("WSREADY_BROWSER_BENCH_CLIENTS: %q is neither centrifuge-js nor wsready", c)
			}
		}
	}
	out := os.Getenv("WSREADY_BROWSER_BENCH_OUT")
	if out == "" {
		out = filepath.Join("..", "build", "browserbench", "results.md")
	}
	cjs := filepath.Join("..", "build", "browserbench", "node_modules", "centrifuge", "dist", "centrifuge.js")
	if slices.Contains(clients, "centrifuge-js") {
		if _, err := os.Stat(cjs); err != nil {
			t.Fatalf("centrifuge-js is missing (%v): make bench-browser installs it", err)
		}
	}

	var md strings.Builder
	fmt.Fprintf(&md, "Made by `make bench-browser` on %s, %s, %s, %d CPUs, load average %s at the start: %d runs per client and rate, each a cold load (a fresh Chromium and profile), alternating, %v window after %v of updates.\n", time.Now().UTC().Format(time.RFC3339), runtime.Version(), chromiumVersion(), runtime.NumCPU(), loadAverage(), runs, window, browserBenchWarm)
	for _, rate := range rates {
		all, err := benchRate(t, rate, runs, window, clients, cjs)
		if err != nil {
			t.Fatalf("%d/s: %v", rate, err)
		}
		md.WriteString(benchTable(rate, all, clients))
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
	}
	fmt.Fprintf(&md, "\nLoad average at the end: %s.\n", loadAverage())
	t.Log("\n" + md.String())
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("written to %s", out)
}

// benchRate starts both servers feeding rate updates a second and runs
// each client runs times, alternating.
func benchRate(t *testing.T, rate, runs int, window time.Duration, clients []string, cjs string) ([]benchRun, error) {
	interval := time.Second / time.Duration(rate)
	base := map[string]string{}
	if slices.Contains(clients, "wsready") {
		env, err := startDemoServer(nil, &demo.Options{FeedInterval: interval}, true, nil)
		if err != nil {
			return nil, err
		}
		defer env.Close()
		mux := http.NewServeMux()
		mux.Handle("/bench.html", htmlPage(wsreadyBenchPage))
		mux.Handle("/", env.Demo.Handler())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("failed to listen: %w", err)
		}
		hs := env.Srv.HTTPServer(mux)
		go hs.Serve(ln)
		defer hs.Close()
		base["wsready"] = "http://" + ln.Addr().String()
	}
	if slices.Contains(clients, "centrifuge-js") {
		addr, stop, err := startCentrifuge(t, interval, cjs)
		if err != nil {
			return nil, err
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
				return nil, fmt.Errorf("%s run %d: %w", c, i+1, err)
			}
			t.Logf("%d/s %s run %d: %+v", rate, c, i+1, r)
			all = append(all, r)
		}
	}
	return all, nil
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

// benchOne is one cold load of url in a fresh Chromium.
func benchOne(client, url string, window time.Duration) (benchRun, error) {
	r := benchRun{client: client}
	ctx, cancel := context.WithTimeout(context.Background(), window+2*time.Minute)
	defer cancel()
	b, err := NewBrowser(ctx)
	if err != nil {
		return r, err
	}
	defer b.Close()
	if _, _, err := b.Settle(); err != nil {
		return r, err
	}
	if _, err := chromedp.Call(b.Ctx, performance.Enable, performance.EnableParams{}); err != nil {
		return r, fmt.Errorf("failed to enable Performance: %w", err)
	}
	if err := b.Navigate(url); err != nil {
		return r, err
	}
	if err := WaitJS(b, "window.__bench && window.__bench.n > 0", 30*time.Second); err != nil {
		return r, fmt.Errorf("no update: %w", err)
	}
	browserRuns(browserBenchWarm) // the warm-up
	m0, err := metrics(b)
	if err != nil {
		return r, err
	}
	n0, err := Eval[int64](b, "(window.__bench.reset(), window.__bench.n)")
	if err != nil {
		return r, err
	}
	start := time.Now()
	browserRuns(window) // the measured window
	n1, err := Eval[int64](b, "window.__bench.n")
	if err != nil {
		return r, err
	}
	took := time.Since(start)
	m1, err := metrics(b)
	if err != nil {
		return r, err
	}
	type page struct {
		First float64  `json:"first"`
		Max   float64  `json:"max"`
		Bad   int64    `json:"bad"`
		Bytes float64  `json:"bytes"`
		Hist  []uint32 `json:"hist"`
	}
	p, err := Eval[page](b, "({ first: __bench.first, max: __bench.max, bad: __bench.bad, bytes: __bench.bytes(), hist: Array.from(__bench.hist) })")
	if err != nil {
		return r, err
	}
	r.updates = n1 - n0
	if r.updates <= 0 {
		return r, errors.New("no update in the window")
	}
	n := float64(r.updates)
	r.rate = n / took.Seconds()
	r.taskUs = (m1["TaskDuration"] - m0["TaskDuration"]) * 1e6 / n
	r.scriptUs = (m1["ScriptDuration"] - m0["ScriptDuration"]) * 1e6 / n
	r.threadUs = (m1["ThreadTime"] - m0["ThreadTime"]) * 1e6 / n
	r.heapMiB = m1["JSHeapUsedSize"] / (1 << 20)
	r.firstMs, r.maxMs, r.badUpdate, r.bytes = p.First, p.Max, p.Bad, p.Bytes
	r.p50, r.p99 = histQuantile(p.Hist, 0.5), histQuantile(p.Hist, 0.99)
	r.pssMiB = rendererPSS(b)
	// What the page holds: JSHeapUsedSize moves with when V8 last
	// collected (a client that leaves the main thread idle more often gets
	// collected at other moments).
	gctx, gcancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer gcancel()
	if _, err := chromedp.Call(gctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
		return r, fmt.Errorf("failed to collect garbage: %w", err)
	}
	m2, err := metrics(b)
	if err != nil {
		return r, err
	}
	r.liveMiB = m2["JSHeapUsedSize"] / (1 << 20)
	return r, nil
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

// benchCols are the table's figures: name, unit and the run's value.
var benchCols = []struct {
	head string
	val  func(r benchRun) float64
	prec int
}{
	{"task us/update", func(r benchRun) float64 { return r.taskUs }, 0},
	{"script us/update", func(r benchRun) float64 { return r.scriptUs }, 0},
	{"thread us/update", func(r benchRun) float64 { return r.threadUs }, 0},
	{"first update ms", func(r benchRun) float64 { return r.firstMs }, 0},
	{"KB loaded", func(r benchRun) float64 { return r.bytes / 1000 }, 0},
	{"PSS MiB", func(r benchRun) float64 { return r.pssMiB }, 1},
	{"JS heap MiB", func(r benchRun) float64 { return r.heapMiB }, 2},
	{"after GC MiB", func(r benchRun) float64 { return r.liveMiB }, 2},
	{"delay p50 ms", func(r benchRun) float64 { return r.p50 }, 1},
	{"delay p99 ms", func(r benchRun) float64 { return r.p99 }, 1},
	{"delay max ms", func(r benchRun) float64 { return r.maxMs }, 1},
	{"updates/s", func(r benchRun) float64 { return r.rate }, 0},
}

// benchTable is every run, then each client's medians and, with both
// clients, wsready's median over centrifuge-js's.
func benchTable(rate int, all []benchRun, clients []string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "\n### %d updates a second\n\n| run | client |", rate)
	for _, c := range benchCols {
		s.WriteString(" " + c.head + " |")
	}
	s.WriteString("\n|---|---|" + strings.Repeat("---:|", len(benchCols)) + "\n")
	seen := map[string]int{}
	for _, r := range all {
		seen[r.client]++
		fmt.Fprintf(&s, "| %d | %s |", seen[r.client], r.client)
		for _, c := range benchCols {
			fmt.Fprintf(&s, " %.*f |", c.prec, c.val(r))
		}
		s.WriteString("\n")
	}
	med := map[string][]float64{}
	for _, cl := range clients {
		fmt.Fprintf(&s, "| median | %s |", cl)
		for _, c := range benchCols {
			var xs []float64
			for _, r := range all {
				if r.client == cl {
					xs = append(xs, c.val(r))
				}
			}
			m := medianF(xs)
			med[cl] = append(med[cl], m)
			fmt.Fprintf(&s, " **%.*f** |", c.prec, m)
		}
		s.WriteString("\n")
	}
	if len(clients) == 2 {
		s.WriteString("| ratio of medians | wsready / centrifuge-js |")
		for i := range benchCols {
			fmt.Fprintf(&s, " %.2fx |", med["wsready"][i]/med["centrifuge-js"][i])
		}
		// Run k of one beside run k of the other (adjacent in time: A B,
		// B A, ...), so a busy spell of the machine weighs on both.
		s.WriteString("\n| median of paired ratios | wsready / centrifuge-js |")
		var w, c []benchRun
		for _, r := range all {
			if r.client == "wsready" {
				w = append(w, r)
			} else {
				c = append(c, r)
			}
		}
		for _, col := range benchCols {
			var xs []float64
			for k := range min(len(w), len(c)) {
				xs = append(xs, col.val(w[k])/col.val(c[k]))
			}
			fmt.Fprintf(&s, " %.2fx |", medianF(xs))
		}
		s.WriteString("\n")
	}
	return s.String()
}

// medianF is the median of xs (the mean of the middle two for an even
// count), NaN for none.
func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
