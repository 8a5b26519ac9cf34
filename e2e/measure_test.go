//go:build !js

package e2e

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/web"
)

// stagesFromEnv reads WSREADY_STAGES (e.g. "2,5"); default all.
func stagesFromEnv() []int {
	s := os.Getenv("WSREADY_STAGES")
	if s == "" {
		return []int{0, 1, 2, 3, 4, 5, 6, 7}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 0 && n <= 7 {
			out = append(out, n)
		}
	}
	return out
}

// TestMeasure runs the full matrix and writes docs/measured/measurements.{md,json}
// and the screenshots. It runs only under make measure (WSREADY_MEASURE=1):
// about ten minutes.
func TestMeasure(t *testing.T) {
	if os.Getenv("WSREADY_MEASURE") == "" {
		t.Skip("set WSREADY_MEASURE=1 (make measure) to run the full matrix")
	}
	plan := FullPlan
	plan.Shots = "../docs/measured"
	var rows []Row
	for _, stage := range stagesFromEnv() {
		row, err := RunStage(stage, plan, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
		t.Logf("stage %d: %+v", stage, Table([]Row{row}))
	}
	// The page loads are TestMeasureLoad's (it runs next, under the same
	// -run TestMeasure): it writes its section into the file this rewrites.
	rep := NewReport(plan, rows)
	if err := rep.Write("../docs/measured"); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + Table(rows))
}

// loadTrials is how many cold loads TestMeasureLoad makes per stage and link.
const loadTrials = 5

// TestMeasureLoad measures page load to READY, cold cache, at stage 7 and
// stage 8, on loopback and on an emulated 10 Mbit/s, 40 ms link, five loads
// each, with the breakdown from the page's timing marks, and writes it into
// docs/measured/measurements.md (its own section). make measure runs it after
// TestMeasure; alone (about four minutes):
//
//	make build example && cd e2e && WSREADY_MEASURE=1 go test -count=1 -run TestMeasureLoad -v ./...
func TestMeasureLoad(t *testing.T) {
	if os.Getenv("WSREADY_MEASURE") == "" {
		t.Skip("set WSREADY_MEASURE=1 (make measure) to measure page loads")
	}
	env, err := StartServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	loadAtStart := loadAverage()
	var md strings.Builder
	fmt.Fprintf(&md, "## Page load to READY\n\nMade by `make build example && cd e2e && WSREADY_MEASURE=1 go test -count=1 -run TestMeasureLoad -v ./...` (make measure runs it too) on %s, %s, %s, %d CPUs shared with other work: the demo at `?stage=N` in a fresh headless Chromium profile per load (a cold cache), navigated once the browser has settled (e2e/settle.go: a user's browser is running before they open a page), %d loads per row, times in ms from navigation start to the page's marks (`performance.mark`, `wsready:*`, from web/static/wsready.js; the wasm's download from its resource timing). Goals: READY within 300 ms on loopback and 1.0 s on the emulated link (medians).\n", time.Now().UTC().Format(time.RFC3339), runtime.Version(), chromiumVersion(), runtime.NumCPU(), loadTrials)
	for _, stage := range []int{7, 8} {
		fast, err := LoadBreakdown(env, Link{}, stage, loadTrials)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := LoadBreakdown(env, TenMbit40ms, stage, loadTrials)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range append(slices.Clone(fast), slow...) {
			if err := l.check(); err != nil {
				t.Errorf("stage %d: %v", stage, err)
			}
		}
		fm, fw := medianWorst(readyMs(fast))
		sm, sw := medianWorst(readyMs(slow))
		fmt.Fprintf(&md, "\n### Stage %d\n\nREADY on loopback: median %d ms, worst %d ms (%v), goal 300 ms: %s. On 10 Mbit/s, 40 ms: median %d ms, worst %d ms (%v), goal 1.0 s: %s. The wasm: %.0f bytes on the wire.\n\n", stage, fm, fw, readyMs(fast), metOrMissed(fm, 300), sm, sw, readyMs(slow), metOrMissed(sm, 1000), fast[0]["wasm:bytes"])
		md.WriteString(BreakdownTable(LoadRun{"loopback", fast}) + "\n" + BreakdownTable(LoadRun{"10 Mbit/s, 40 ms", slow}))
	}
	floor, err := measureFloorLoad()
	if err != nil {
		t.Fatal(err)
	}
	md.WriteString(floor)
	// Two floors under it (floor_go_test.go): what of it is not wsready's.
	noWasm, err := measureNoWasmLoad()
	if err != nil {
		t.Fatal(err)
	}
	md.WriteString(noWasm)
	hello, err := measureHelloLoad()
	if err != nil {
		t.Fatal(err)
	}
	md.WriteString(hello)
	// make measure does not build the example: without it the section says so.
	if _, err := os.Stat(viteDist + "/index.html"); err != nil {
		md.WriteString("\n### The Vite example\n\nNot measured in this run: examples/vite/dist is missing (make example builds it).\n")
	} else {
		vite, err := measureViteLoad()
		if err != nil {
			t.Fatal(err)
		}
		md.WriteString(vite)
	}
	fmt.Fprintf(&md, "\nThe machine's load average (1 min) was %s when this started and %s when it ended: with more than about 2 (its CPUs) every step above is stretched by the wait for a CPU.\n", loadAtStart, loadAverage())
	t.Log("\n" + md.String())
	if err := writeLoadSection("../docs/measured/measurements.md", md.String()); err != nil {
		t.Fatal(err)
	}
}

// viteDist is the Vite example's build, from the e2e directory.
const viteDist = "../examples/vite/dist"

// measureViteLoad loads the Vite example (make example builds it from the
// npm tarball) as TestMeasureLoad loads the demo, served from its own
// origin by precompressedStatic, against the demo server on another.
func measureViteLoad() (string, error) {
	if _, err := os.Stat(viteDist + "/index.html"); err != nil {
		return "", errors.New("examples/vite/dist is missing: run make example first")
	}
	env, err := StartServer(&server.Options{OriginPatterns: []string{"127.0.0.1:*"}})
	if err != nil {
		return "", err
	}
	defer env.Close()
	base, stop, err := serveApp(precompressedStatic(viteDist))
	if err != nil {
		return "", err
	}
	defer stop()
	url := base + "/?ws=ws" + env.Base[len("http"):] + "/ws"
	fast, err := LoadBreakdownURL(url, Link{}, loadTrials)
	if err != nil {
		return "", err
	}
	slow, err := LoadBreakdownURL(url, TenMbit40ms, loadTrials)
	if err != nil {
		return "", err
	}
	for _, l := range append(slices.Clone(fast), slow...) {
		if err := l.check(); err != nil {
			return "", fmt.Errorf("the Vite example: %w", err)
		}
	}
	fm, fw := medianWorst(readyMs(fast))
	sm, sw := medianWorst(readyMs(slow))
	var md strings.Builder
	fmt.Fprintf(&md, "\n### The Vite example\n\nexamples/vite built by `make example` (the npm tarball through Vite; the package's default stage, 8; no token; its vite.config.js uses the package's plugin, wsready/vite, which adds a preload link for the wasm and writes each .wasm, .js and .html precompressed), served from its own origin as a static host that serves precompressed files does (brotli here, as the demo server sends; Caddy's `precompressed br gzip`, nginx's `brotli_static`), the demo server on another. READY on loopback: median %d ms, worst %d ms (%v), goal 300 ms: %s. On 10 Mbit/s, 40 ms: median %d ms, worst %d ms (%v), goal 1.0 s: %s. The wasm: %.0f bytes on the wire.\n\n", fm, fw, readyMs(fast), metOrMissed(fm, 300), sm, sw, readyMs(slow), metOrMissed(sm, 1000), fast[0]["wasm:bytes"])
	md.WriteString(BreakdownTable(LoadRun{"loopback", fast}) + "\n" + BreakdownTable(LoadRun{"10 Mbit/s, 40 ms", slow}))
	return md.String(), nil
}

// floorPage is the least a page can do to be READY: no UI, no token, no
// other request; the wasm fetched and compiled from an inline script in
// the head (as the demo's index.html does), then wsready.js's connect()
// from a module script (which, by default, opens its first socket while
// the wasm loads: preconnect). The demo also preloads the wasm, starts Go
// and preconnects from its inline script; this page does none of that, so
// it stays what it was in the rounds before but for connect()'s default
// (with no other file on the link, the preload's gain is not there to
// have).
const floorPage = `<!doctype html>
<meta charset="utf-8">
<title>wsready: the floor</title>
<script>
  window.wsreadyWasm = WebAssembly.compileStreaming(fetch('wsready.wasm').then((r) => { performance.mark('wsready:wasm-response'); return r; }));
  window.wsreadyWasm.catch(() => {});
</script>
<script type="module">
  import { load, connect } from './wsready.js';
  const q = new URLSearchParams(location.search);
  load({ module: window.wsreadyWasm });
  await connect({ url: q.get('ws'), stage: Number(q.get('stage')), topic: 'feed' });
</script>
`

// measureFloorLoad loads floorPage as TestMeasureLoad loads the demo, at
// stage 7 and 8: the wsready files from StaticHandler (brotli, as the demo
// server sends them) on one origin, the demo server's endpoint on another.
// What the demo's rows spend beyond these is the demo page's own.
func measureFloorLoad() (string, error) {
	env, err := StartServer(&server.Options{OriginPatterns: []string{"127.0.0.1:*"}})
	if err != nil {
		return "", err
	}
	defer env.Close()
	mux := http.NewServeMux()
	mux.Handle("/floor.html", htmlPage(floorPage))
	mux.Handle("/", env.Srv.StaticHandler(web.FS()))
	base, stop, err := serveApp(mux)
	if err != nil {
		return "", err
	}
	defer stop()
	var md strings.Builder
	md.WriteString("\n### The floor\n\nAn empty page (e2e's floorPage: no UI, no token, no other request): an inline script in its head fetches and compiles the wasm (streaming) as the demo's index.html does, then a module imports wsready.js and calls connect() with the demo's topic; the files from StaticHandler (brotli) on one origin, the demo server's endpoint on another. The \"Go started\" row is the floor of the wasm alone, the READY row the floor of READY: what the demo spends beyond them is its own page.\n")
	for _, stage := range []int{7, 8} {
		url := fmt.Sprintf("%s/floor.html?stage=%d&ws=ws%s/ws", base, stage, env.Base[len("http"):])
		fast, err := LoadBreakdownURL(url, Link{}, loadTrials)
		if err != nil {
			return "", err
		}
		slow, err := LoadBreakdownURL(url, TenMbit40ms, loadTrials)
		if err != nil {
			return "", err
		}
		for _, l := range append(slices.Clone(fast), slow...) {
			if err := l.check(); err != nil {
				return "", fmt.Errorf("the floor page: %w", err)
			}
		}
		fm, fw := medianWorst(readyMs(fast))
		sm, sw := medianWorst(readyMs(slow))
		fmt.Fprintf(&md, "\nStage %d: READY on loopback: median %d ms, worst %d ms (%v); on 10 Mbit/s, 40 ms: median %d ms, worst %d ms (%v).\n\n", stage, fm, fw, readyMs(fast), sm, sw, readyMs(slow))
		md.WriteString(BreakdownTable(LoadRun{fmt.Sprintf("floor, stage %d, loopback", stage), fast}) + "\n" + BreakdownTable(LoadRun{fmt.Sprintf("floor, stage %d, 10 Mbit/s, 40 ms", stage), slow}))
	}
	return md.String(), nil
}

// serveApp serves h from a loopback port of its own (a page's origin,
// apart from the demo server's) and returns its base URL and the func
// that stops it.
func serveApp(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("failed to listen: %w", err)
	}
	app := &http.Server{Handler: h}
	go app.Serve(ln)
	return "http://" + ln.Addr().String(), func() { app.Close() }, nil
}

// htmlPage serves page as an HTML document.
func htmlPage(page string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}
}

// loadAverage is the 1-minute load average (/proc/loadavg), or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

func metOrMissed(ms, goal int64) string {
	if ms <= goal {
		return "met"
	}
	return "missed"
}

// chromiumVersion is what chromium --version prints, or "Chromium".
func chromiumVersion() string {
	p, err := ChromiumPath()
	if err != nil {
		return "Chromium"
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		return "Chromium"
	}
	return strings.TrimSpace(string(out))
}
