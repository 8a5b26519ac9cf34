//go:build !js

package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/wsready/wsready/server/demo"
)

// Where the browser client's main-thread time goes (make profile-browser):
// the bench's wsready page (or, WSREADY_BROWSER_PROFILE_CLIENT=centrifuge-js,
// its centrifuge-js page, for comparison) (connect() with the defaults, one subscribe) fed
// at a rate, V8's sampling profiler on for a window after the warm-up, and
// the samples' self time summed by what ran: Chromium's own work
// ((program)), the collector, each script (wsready.js, wasm_exec.js, the
// page), JavaScript's built-ins (TextEncoder's encodeInto, JSON.parse...)
// and, in the wasm, each Go package, then the functions with the most.
// The wasm served is WSREADY_BROWSER_PROFILE_WASM (required): make
// profile-browser builds it as make wasm does but keeps its name section,
// so Go's functions have their names. _RATE (updates a second, default
// 200), _WINDOW (default 10s), _INTERVAL (the sampling interval, default
// 100us); the table goes to _OUT (default ../build/browserprofile/
// profile.md), the profile itself beside it (the same name, .cpuprofile:
// Chromium's DevTools open it).
func TestBrowserProfile(t *testing.T) {
	if os.Getenv("WSREADY_BROWSER_PROFILE") != "1" {
		t.Skip("set WSREADY_BROWSER_PROFILE=1 (make profile-browser)")
	}
	client := cmp.Or(os.Getenv("WSREADY_BROWSER_PROFILE_CLIENT"), "wsready")
	if client != "wsready" && client != "centrifuge-js" {
		t.Fatalf("WSREADY_BROWSER_PROFILE_CLIENT: %q is neither wsready nor centrifuge-js", client)
	}
	wasm := os.Getenv("WSREADY_BROWSER_PROFILE_WASM")
	if client == "wsready" {
		if wasm == "" {
			t.Fatal("WSREADY_BROWSER_PROFILE_WASM: the wasm to serve, built with its names (make profile-browser)")
		}
		if _, err := os.Stat(wasm); err != nil {
			t.Fatalf("WSREADY_BROWSER_PROFILE_WASM: %v", err)
		}
	}
	rate := 200
	if s := os.Getenv("WSREADY_BROWSER_PROFILE_RATE"); s != "" {
		r, err := strconv.Atoi(s)
		if err != nil || r < 1 || r > 1000 {
			t.Fatalf("WSREADY_BROWSER_PROFILE_RATE: %q is not a rate in 1..1000", s)
		}
		rate = r
	}
	window := 10 * time.Second
	if s := os.Getenv("WSREADY_BROWSER_PROFILE_WINDOW"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > 5*time.Minute {
			t.Fatalf("WSREADY_BROWSER_PROFILE_WINDOW: %q is not a duration in 1s..5m", s)
		}
		window = d
	}
	interval := 100 * time.Microsecond
	if s := os.Getenv("WSREADY_BROWSER_PROFILE_INTERVAL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 50*time.Microsecond || d > 10*time.Millisecond {
			t.Fatalf("WSREADY_BROWSER_PROFILE_INTERVAL: %q is not a duration in 50us..10ms", s)
		}
		interval = d
	}
	out := os.Getenv("WSREADY_BROWSER_PROFILE_OUT")
	if out == "" {
		out = filepath.Join("..", "build", "browserprofile", "profile.md")
	}

	var base string
	if client == "wsready" {
		env, err := startDemoServer(nil, &demo.Options{FeedInterval: time.Second / time.Duration(rate)}, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		mux := http.NewServeMux()
		mux.Handle("/bench.html", htmlPage(wsreadyBenchPage))
		mux.HandleFunc("/wsready.wasm", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/wasm")
			w.Header().Set("Cache-Control", "no-store")
			http.ServeFile(w, r, wasm)
		})
		mux.Handle("/", env.Demo.Handler())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := env.Srv.HTTPServer(mux)
		go hs.Serve(ln)
		defer hs.Close()
		base = "http://" + ln.Addr().String()
	} else {
		cjs := filepath.Join("..", "build", "browserbench", "node_modules", "centrifuge", "dist", "centrifuge.js")
		if _, err := os.Stat(cjs); err != nil {
			t.Fatalf("centrifuge-js is missing (%v): make profile-browser PROFILE_CLIENT=centrifuge-js installs it", err)
		}
		addr, stop, err := startCentrifuge(t, time.Second/time.Duration(rate), cjs)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		base = "http://" + addr
	}

	ctx, cancel := context.WithTimeout(context.Background(), window+2*time.Minute)
	defer cancel()
	b, err := NewBrowser(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := b.Settle(); err != nil {
		t.Fatal(err)
	}
	if err := b.Navigate(base + "/bench.html"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.__bench && window.__bench.n > 0", 30*time.Second); err != nil {
		t.Fatalf("no update: %v", err)
	}
	browserRuns(browserBenchWarm)
	if _, err := chromedp.Call(b.Ctx, profiler.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.Ctx, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: interval.Microseconds()}); err != nil {
		t.Fatal(err)
	}
	n0, err := Eval[int64](b, "window.__bench.n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.Ctx, profiler.Start, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	browserRuns(window)
	res, err := chromedp.Call(b.Ctx, profiler.Stop, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	n1, err := Eval[int64](b, "window.__bench.n")
	if err != nil {
		t.Fatal(err)
	}
	updates := n1 - n0
	if res.Profile == nil || len(res.Profile.Samples) == 0 {
		t.Fatal("the profile has no sample")
	}
	if updates <= 0 {
		t.Fatal("no update in the window")
	}
	p := summarizeProfile(res.Profile)
	if client == "wsready" && p.wasmNamed == 0 {
		var seen []string
		for _, n := range res.Profile.Nodes {
			if n.CallFrame != nil && len(seen) < 20 {
				seen = append(seen, strconv.Quote(n.CallFrame.FunctionName)+" "+n.CallFrame.URL)
			}
		}
		t.Fatalf("no Go function named in the profile (is %s built with its name section?); frames: %s", wasm, strings.Join(seen, "; "))
	}
	var md strings.Builder
	fmt.Fprintf(&md, "Made by `make profile-browser` on %s, %s, %s, %d CPUs, load average %s: %s's bench page (make bench-browser's), %d updates a second, V8's sampling profiler at %v for %v after %v of updates; %d updates in the window.\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.Version(), chromiumVersion(), runtime.NumCPU(), loadAverage(), client, rate, interval, window, browserBenchWarm, updates)
	busy := p.total - p.byCat["(idle)"]
	fmt.Fprintf(&md, "The main thread was busy %.1f%% of the window: %.0f us per update.\n\n", 100*busy/p.total, busy/float64(updates))
	md.WriteString("| what | us per update | share of busy time |\n|---|---:|---:|\n")
	for _, c := range sortedByValue(p.byCat) {
		if c.k == "(idle)" {
			continue
		}
		fmt.Fprintf(&md, "| %s | %.1f | %.1f%% |\n", c.k, c.v/float64(updates), 100*c.v/busy)
	}
	md.WriteString("\nThe functions with the most self time:\n\n| function | where | us per update | share of busy time |\n|---|---|---:|---:|\n")
	for i, c := range sortedByValue(p.byFunc) {
		if i == 30 {
			break
		}
		name, where, _ := strings.Cut(c.k, "\x00")
		if name == "(idle)" {
			continue
		}
		fmt.Fprintf(&md, "| %s | %s | %.1f | %.1f%% |\n", strings.ReplaceAll(name, "|", `\|`), where, c.v/float64(updates), 100*c.v/busy)
	}
	t.Log("\n" + md.String())
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(res.Profile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(out, ".md")+".cpuprofile", raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("written to %s", out)
}

// profileSummary is a profile's self time (us) by category and by
// function ("name\x00where"), the window's total, and how many samples
// fell in a named Go function.
type profileSummary struct {
	total     float64
	byCat     map[string]float64
	byFunc    map[string]float64
	wasmNamed int
}

// summarizeProfile sums each sample's time (the delta to the next sample;
// the last one's to the profile's end) onto the node it hit.
func summarizeProfile(p *profiler.Profile) profileSummary {
	nodes := map[int64]*profiler.ProfileNode{}
	for _, n := range p.Nodes {
		nodes[n.ID] = n
	}
	s := profileSummary{byCat: map[string]float64{}, byFunc: map[string]float64{}}
	at := p.StartTime
	for i, id := range p.Samples {
		if i < len(p.TimeDeltas) {
			at += float64(p.TimeDeltas[i])
		}
		next := p.EndTime
		if i+1 < len(p.TimeDeltas) {
			next = at + float64(p.TimeDeltas[i+1])
		}
		d := max(0, next-at)
		s.total += d
		n := nodes[id]
		if n == nil || n.CallFrame == nil {
			s.byCat["(unknown)"] += d
			continue
		}
		cat, where, goFunc := profileCategory(n.CallFrame)
		if goFunc {
			s.wasmNamed++
		}
		s.byCat[cat] += d
		s.byFunc[strings.TrimPrefix(n.CallFrame.FunctionName, "$")+"\x00"+where] += d
	}
	return s
}

// profileCategory is what a frame is counted as: V8's own pseudo-frames as
// they are, its JS/wasm transition frames together, a Go function in the
// wasm as its package (goFunc), the wasm's exports' own wrappers by name, a
// script as its file's name, a frame with no script as a built-in. Chromium
// names a wasm function from the name section with '/' and '-' made '_'
// ("syscall_js.Value.Invoke", "github.com_hack_pad_safejs.Value.Invoke").
func profileCategory(cf *cdpruntime.CallFrame) (cat, where string, goFunc bool) {
	name := strings.TrimPrefix(cf.FunctionName, "$")
	u := cf.URL
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch {
	case strings.HasPrefix(name, "(") && strings.HasSuffix(name, ")"):
		return name, "", false
	case strings.HasPrefix(name, "js-to-wasm") || strings.HasPrefix(name, "wasm-to-js"):
		return "V8: JS/wasm transitions", "", false
	case strings.HasPrefix(u, "wasm://") || strings.HasSuffix(u, ".wasm"):
		if pkg := goPackage(name); pkg != "" {
			return "Go: " + pkg, "wasm", true
		}
		return "wasm: " + cmp.Or(name, "(unnamed)"), "wasm", false
	case u != "":
		return "script: " + path.Base(u), path.Base(u), false
	default:
		return "JS built-in: " + cmp.Or(name, "(anonymous)"), "built-in", false
	}
}

// goPackage is the package of a Go symbol as Chromium names it
// ("github.com_x_y_client.__Core_.Received" -> "github.com_x_y_client",
// "runtime.mallocgc" -> "runtime"), "" for a name that is not one (an
// export's wrapper, "wasm-function[N]" without a name section).
func goPackage(sym string) string {
	if sym == "" || strings.HasPrefix(sym, "wasm-function[") {
		return ""
	}
	prefix, rest := "", sym
	if i := strings.IndexByte(sym, '_'); i > 0 {
		// A module path's host ("github.com"): its dot is not the package's end.
		if d := sym[:i]; strings.Contains(d, ".") && !strings.HasSuffix(d, ".") && !strings.ContainsAny(d, "()*") {
			prefix, rest = d, sym[i:]
		}
	}
	dot := strings.IndexByte(rest, '.')
	if dot <= 0 {
		return ""
	}
	return prefix + rest[:dot]
}

type kv struct {
	k string
	v float64
}

// sortedByValue is m's entries, the largest value first (then by key).
func sortedByValue(m map[string]float64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	slices.SortFunc(out, func(a, b kv) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		return strings.Compare(a.k, b.k)
	})
	return out
}

// The profile's categories: V8's pseudo-frames, Go packages from the
// wasm's names, scripts by file, built-ins; and a sample's time is the
// delta to the next one.
func TestProfileSummary(t *testing.T) {
	for _, c := range []struct {
		cf         cdpruntime.CallFrame
		cat        string
		goFunction bool
	}{
		{cdpruntime.CallFrame{FunctionName: "(program)"}, "(program)", false},
		{cdpruntime.CallFrame{FunctionName: "(garbage collector)"}, "(garbage collector)", false},
		{cdpruntime.CallFrame{FunctionName: "github.com_wsready_wsready_client.__Core_.Received", URL: "http://127.0.0.1:1/wsready.wasm"}, "Go: github.com_wsready_wsready_client", true},
		{cdpruntime.CallFrame{FunctionName: "main.__driver_.stepNow", URL: "http://127.0.0.1:1/wsready.wasm"}, "Go: main", true},
		{cdpruntime.CallFrame{FunctionName: "runtime.mallocgc", URL: "wasm://wasm/abc"}, "Go: runtime", true},
		{cdpruntime.CallFrame{FunctionName: "syscall_js.valueInvoke", URL: "http://127.0.0.1:1/wsready.wasm"}, "Go: syscall_js", true},
		{cdpruntime.CallFrame{FunctionName: "wsreadyFrame", URL: "http://127.0.0.1:1/wsready.wasm"}, "wasm: wsreadyFrame", false},
		{cdpruntime.CallFrame{FunctionName: "wasm-function[12]", URL: "wasm://wasm/abc"}, "wasm: wasm-function[12]", false},
		{cdpruntime.CallFrame{FunctionName: "js-to-wasm:ii:i", URL: "http://127.0.0.1:1/wsready.wasm"}, "V8: JS/wasm transitions", false},
		{cdpruntime.CallFrame{FunctionName: "wasm-to-js"}, "V8: JS/wasm transitions", false},
		{cdpruntime.CallFrame{FunctionName: "syscall/js.valueInvoke", URL: "http://127.0.0.1:1/wasm_exec.js"}, "script: wasm_exec.js", false},
		{cdpruntime.CallFrame{FunctionName: "h", URL: "http://127.0.0.1:1/wsready.js?v=1"}, "script: wsready.js", false},
		{cdpruntime.CallFrame{FunctionName: "encodeInto"}, "JS built-in: encodeInto", false},
		{cdpruntime.CallFrame{FunctionName: ""}, "JS built-in: (anonymous)", false},
	} {
		cat, _, g := profileCategory(&c.cf)
		if cat != c.cat || g != c.goFunction {
			t.Errorf("%+v: %q (Go %v), want %q (Go %v)", c.cf, cat, g, c.cat, c.goFunction)
		}
	}
	p := &profiler.Profile{
		Nodes: []*profiler.ProfileNode{
			{ID: 1, CallFrame: &cdpruntime.CallFrame{FunctionName: "(root)"}},
			{ID: 2, CallFrame: &cdpruntime.CallFrame{FunctionName: "(idle)"}},
			{ID: 3, CallFrame: &cdpruntime.CallFrame{FunctionName: "runtime.mallocgc", URL: "wasm://wasm/x"}},
		},
		StartTime: 1000, EndTime: 1400,
		Samples:    []int64{2, 3, 3, 2},
		TimeDeltas: []int64{0, 100, 50, 200},
	}
	s := summarizeProfile(p)
	if s.total != 400 || s.byCat["(idle)"] != 150 || s.byCat["Go: runtime"] != 250 || s.wasmNamed != 2 {
		t.Fatalf("summary %+v, want 400 us in all, 150 idle, 250 in Go's runtime, 2 named samples", s)
	}
}
