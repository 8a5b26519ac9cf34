//go:build !js

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/sim"
)

// child is a process this harness started.
type child struct {
	cmd  *exec.Cmd
	addr string // what it printed: its listen or stats address
}

func startChild(args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
		}
	}()
	select {
	case l, ok := <-line:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("child %v printed nothing", args)
		}
		f := strings.Fields(l)
		return &child{cmd: cmd, addr: f[len(f)-1]}, nil
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("child %v did not start", args)
	}
}

func (c *child) stop() {
	c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

func getJSON(url string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// fleet is the client processes of one phase.
type fleet []*child

func startFleet(url string, n int, srcBase int, extra ...string) (fleet, error) {
	var f fleet
	for left, i := n, 0; left > 0; i++ {
		k := min(left, 9000)
		var srcs []string
		for j := range 4 {
			srcs = append(srcs, fmt.Sprintf("127.0.%d.%d", 1+i, 2+srcBase+j))
		}
		c, err := startChild(append([]string{"clients", "-url", url, "-n", fmt.Sprint(k), "-conc", "200", "-src", strings.Join(srcs, ",")}, extra...)...)
		if err != nil {
			f.stop()
			return nil, err
		}
		f = append(f, c)
		left -= k
	}
	return f, nil
}

func (f fleet) stats() (clientStats, error) {
	var sum clientStats
	for _, c := range f {
		var s clientStats
		if err := getJSON("http://"+c.addr+"/stats", &s); err != nil {
			return sum, err
		}
		sum.Dialed += s.Dialed
		sum.Subscribed += s.Subscribed
		sum.Failed += s.Failed
		sum.Frames += s.Frames
	}
	return sum, nil
}

func (f fleet) stop() {
	var wg sync.WaitGroup
	for _, c := range f {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop() }()
	}
	wg.Wait()
}

// waitSubscribed polls until n connections are subscribed; it returns the
// time taken.
func (f fleet) waitSubscribed(n int, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		s, err := f.stats()
		if err != nil {
			return 0, err
		}
		if s.Subscribed >= int64(n) {
			return time.Since(start), nil
		}
		if s.Failed > 0 {
			return 0, fmt.Errorf("%d dials failed (%d subscribed)", s.Failed, s.Subscribed)
		}
		if time.Since(start) > within {
			return 0, fmt.Errorf("only %d of %d subscribed after %v", s.Subscribed, n, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ServerFigures is one server's measurements.
type ServerFigures struct {
	Kind              string  `json:"kind"`
	Conns             int     `json:"conns"`
	RSSPerConnBytes   float64 `json:"rssPerConnBytes"`
	HeapPerConnBytes  float64 `json:"heapPerConnBytes"`
	GoroutinesPerConn float64 `json:"goroutinesPerConn"`
	CPUPerFrameUs     float64 `json:"cpuPerFrameUs"`
	CPUPerHandshakeUs float64 `json:"cpuPerHandshakeUs"`
	ConnectSeconds    float64 `json:"connectSeconds"` // Conns clients, dialled 200 at a time per process
	// At rest: Conns connections that do not subscribe (pings only).
	RestRSSPerConnBytes   float64 `json:"restRssPerConnBytes"`
	RestGoroutinesPerConn float64 `json:"restGoroutinesPerConn"`
	// CPUPerHandshakeUs is measured at rest (no feed to deliver meanwhile);
	// CPUPerHandshakeFeedUs while connecting subscribers (the feed runs).
	CPUPerHandshakeFeedUs float64 `json:"cpuPerHandshakeFeedUs"`
	ConnectManySeconds    float64 `json:"connectManySeconds"`
	ConnectMany           int     `json:"connectMany"`
	FramesPerSecSteady    float64 `json:"framesPerSecSteady"`
	SteadySeconds         float64 `json:"steadySeconds"`
	ServerCPUPercentAvg   float64 `json:"serverCpuPercentSteady"`
}

func measureServer(kind string, conns, many int, steady time.Duration) (ServerFigures, error) {
	fig := ServerFigures{Kind: kind, Conns: conns, ConnectMany: many, SteadySeconds: steady.Seconds()}
	srv, err := startChild("server", "-kind", kind)
	if err != nil {
		return fig, err
	}
	defer srv.stop()
	statsURL := "http://" + srv.addr + "/bench/stats"
	url := "ws://" + srv.addr + "/ws"
	var s0, s1, s2, s3 procStats
	time.Sleep(500 * time.Millisecond)
	if err := getJSON(statsURL, &s0); err != nil {
		return fig, err
	}
	f, err := startFleet(url, conns, 0)
	if err != nil {
		return fig, err
	}
	took, err := f.waitSubscribed(conns, 3*time.Minute)
	if err != nil {
		f.stop()
		return fig, err
	}
	fig.ConnectSeconds = took.Seconds()
	getJSON(statsURL, &s1)
	fig.CPUPerHandshakeFeedUs = float64(s1.CPUNs-s0.CPUNs) / float64(conns) / 1e3
	time.Sleep(3 * time.Second)
	runtime.GC()
	getJSON(statsURL, &s2)
	fig.RSSPerConnBytes = float64(s2.RSS-s0.RSS) / float64(conns)
	fig.HeapPerConnBytes = float64(s2.HeapInuse-s0.HeapInuse) / float64(conns)
	fig.GoroutinesPerConn = float64(s2.Goroutines-s0.Goroutines) / float64(conns)
	c2, _ := f.stats()
	t2 := time.Now()
	time.Sleep(steady)
	getJSON(statsURL, &s3)
	c3, _ := f.stats()
	el := time.Since(t2).Seconds()
	frames := float64(c3.Frames - c2.Frames)
	fig.FramesPerSecSteady = frames / el
	if frames > 0 {
		fig.CPUPerFrameUs = float64(s3.CPUNs-s2.CPUNs) / frames / 1e3
	}
	fig.ServerCPUPercentAvg = float64(s3.CPUNs-s2.CPUNs) / 1e9 / el * 100
	f.stop()
	srv.stop()

	// At rest: connections that only connect (pings, no feed): the cost of
	// a handshake alone, and of a connection that has nothing to receive.
	{
		srv, err := startChild("server", "-kind", kind)
		if err != nil {
			return fig, err
		}
		statsURL := "http://" + srv.addr + "/bench/stats"
		time.Sleep(500 * time.Millisecond)
		var r0, r1, r2 procStats
		getJSON(statsURL, &r0)
		f, err := startFleet("ws://"+srv.addr+"/ws", conns, 4, "-subscribe=false")
		if err != nil {
			srv.stop()
			return fig, err
		}
		_, err = f.waitSubscribed(conns, 3*time.Minute)
		getJSON(statsURL, &r1)
		time.Sleep(3 * time.Second)
		runtime.GC()
		getJSON(statsURL, &r2)
		f.stop()
		srv.stop()
		if err != nil {
			return fig, fmt.Errorf("%s at rest: %w", kind, err)
		}
		fig.CPUPerHandshakeUs = float64(r1.CPUNs-r0.CPUNs) / float64(conns) / 1e3
		fig.RestRSSPerConnBytes = float64(r2.RSS-r0.RSS) / float64(conns)
		fig.RestGoroutinesPerConn = float64(r2.Goroutines-r0.Goroutines) / float64(conns)
	}

	// Connecting many: a fresh server, many clients as fast as they dial.
	if many > 0 {
		srv2, err := startChild("server", "-kind", kind)
		if err != nil {
			return fig, err
		}
		defer srv2.stop()
		f2, err := startFleet("ws://"+srv2.addr+"/ws", many, 8)
		if err != nil {
			return fig, err
		}
		took, err := f2.waitSubscribed(many, 5*time.Minute)
		f2.stop()
		if err != nil {
			return fig, fmt.Errorf("%s, %d clients: %w", kind, many, err)
		}
		fig.ConnectManySeconds = took.Seconds()
	}
	return fig, nil
}

// SimFigures compares the simulator with the published Python model.
type SimFigures struct {
	Scenario       string    `json:"scenario"`
	PythonSeconds  []float64 `json:"pythonSeconds"`
	SimSeconds     []float64 `json:"simSeconds"`
	Speedup        float64   `json:"speedupMedian"`
	PythonSkipped  string    `json:"pythonSkipped,omitempty"`
	SimJitter99Sec float64   `json:"simJitter99Sec"`
}

// medianFigures is, figure by figure, the median of the trials.
func medianFigures(fs []ServerFigures) ServerFigures {
	m := fs[0]
	pick := func(get func(ServerFigures) float64) float64 {
		xs := make([]float64, len(fs))
		for i, f := range fs {
			xs[i] = get(f)
		}
		return median(xs)
	}
	m.RSSPerConnBytes = pick(func(f ServerFigures) float64 { return f.RSSPerConnBytes })
	m.HeapPerConnBytes = pick(func(f ServerFigures) float64 { return f.HeapPerConnBytes })
	m.GoroutinesPerConn = pick(func(f ServerFigures) float64 { return f.GoroutinesPerConn })
	m.RestRSSPerConnBytes = pick(func(f ServerFigures) float64 { return f.RestRSSPerConnBytes })
	m.RestGoroutinesPerConn = pick(func(f ServerFigures) float64 { return f.RestGoroutinesPerConn })
	m.CPUPerFrameUs = pick(func(f ServerFigures) float64 { return f.CPUPerFrameUs })
	m.CPUPerHandshakeUs = pick(func(f ServerFigures) float64 { return f.CPUPerHandshakeUs })
	m.CPUPerHandshakeFeedUs = pick(func(f ServerFigures) float64 { return f.CPUPerHandshakeFeedUs })
	m.ConnectSeconds = pick(func(f ServerFigures) float64 { return f.ConnectSeconds })
	m.ConnectManySeconds = pick(func(f ServerFigures) float64 { return f.ConnectManySeconds })
	m.FramesPerSecSteady = pick(func(f ServerFigures) float64 { return f.FramesPerSecSteady })
	m.ServerCPUPercentAvg = pick(func(f ServerFigures) float64 { return f.ServerCPUPercentAvg })
	return m
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// measureSim runs the model's scenario (100k clients, 5,000 handshakes/s
// from t=0, base 1 s, cap 60 s; fixed 1 s, exponential, full jitter) in
// the simulator and in ../shared/anchors/fleet_model.py, trials times each.
func measureSim(model string, trials int) (SimFigures, error) {
	fig := SimFigures{Scenario: "100,000 clients, 5,000 handshakes/s from t=0, base 1 s, cap 60 s; fixed 1 s, exponential without jitter, full jitter; all to completion"}
	cfg := sim.DefaultConfig()
	cfg.Clients, cfg.Capacity, cfg.Downtime, cfg.Horizon, cfg.Seed = 100000, 5000, 0, 20*time.Minute, 7
	pp := sim.DefaultPolicyParams()
	pp.Fixed, pp.Base, pp.Cap = time.Second, time.Second, 60*time.Second
	var policies []sim.NamedPolicy
	for _, name := range []string{"fixed", "exponential", "jitter"} {
		p, _ := sim.PolicyByName(name, pp)
		policies = append(policies, p)
	}
	for range trials {
		start := time.Now()
		results := make([]sim.Result, len(policies))
		errs := make([]error, len(policies))
		var wg sync.WaitGroup
		for i, p := range policies {
			wg.Add(1)
			go func() { defer wg.Done(); results[i], errs[i] = sim.Run(cfg, p) }()
		}
		wg.Wait()
		fig.SimSeconds = append(fig.SimSeconds, time.Since(start).Seconds())
		for _, e := range errs {
			if e != nil {
				return fig, e
			}
		}
		if t := results[2].T99Ms; t != nil {
			fig.SimJitter99Sec = float64(*t) / 1000
		}
	}
	if _, err := os.Stat(model); err != nil {
		fig.PythonSkipped = "model not found at " + model
		return fig, nil
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		fig.PythonSkipped = "python3 not found"
		return fig, nil
	}
	for range trials {
		start := time.Now()
		if out, err := exec.Command(py, model).CombinedOutput(); err != nil {
			return fig, fmt.Errorf("python model: %v: %s", err, out)
		}
		fig.PythonSeconds = append(fig.PythonSeconds, time.Since(start).Seconds())
	}
	fig.Speedup = median(fig.PythonSeconds) / median(fig.SimSeconds)
	return fig, nil
}

// Report is docs/bench.json.
type Report struct {
	Date      string                     `json:"date"`
	Command   string                     `json:"command"`
	Go        string                     `json:"go"`
	CPUs      int                        `json:"cpus"`
	Servers   []ServerFigures            `json:"servers"`
	Ratios    map[string]float64         `json:"ratios"`    // wsready / lean, of the medians
	RatioRuns map[string][]float64       `json:"ratioRuns"` // the same, trial by trial
	Trials    map[string][]ServerFigures `json:"trials"`
	Sim       SimFigures                 `json:"sim"`
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	conns := fs.Int("conns", 10000, "subscribed connections for the per-connection figures")
	many := fs.Int("connect", 19000, "clients for the time-to-connect figure (0: skip)")
	steady := fs.Duration("steady", 10*time.Second, "steady-state window for CPU per frame")
	out := fs.String("out", "docs", "directory for bench.md and bench.json")
	model := fs.String("model", "../shared/anchors/fleet_model.py", "the published Python fleet model")
	trials := fs.Int("trials", 3, "runs of each server, of the simulator and of the model")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *conns < 1 || *conns > 18000 || *many < 0 || *many > 19500 || *steady <= 0 || *trials < 1 || *trials > 9 {
		return fmt.Errorf("run: -conns 1..18000, -connect 0..19500, -steady > 0, -trials 1..9")
	}
	rep := Report{Date: time.Now().UTC().Format(time.RFC3339), Command: "make bench (go run ./bench run " + strings.Join(args, " ") + ")",
		Go: runtime.Version(), CPUs: runtime.NumCPU(), Ratios: map[string]float64{}}
	// The two servers take turns, trials times, so the machine's drift
	// falls on both; each figure is the median of its trials.
	runs := map[string][]ServerFigures{}
	for tr := range *trials {
		for _, kind := range []string{"lean", "wsready"} {
			fmt.Fprintf(os.Stderr, "bench: trial %d, %s server, %d connections, then %d\n", tr+1, kind, *conns, *many)
			fig, err := measureServer(kind, *conns, *many, *steady)
			if err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
			runs[kind] = append(runs[kind], fig)
		}
	}
	rep.Servers = []ServerFigures{medianFigures(runs["lean"]), medianFigures(runs["wsready"])}
	rep.Trials = runs
	l, w := rep.Servers[0], rep.Servers[1]
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return math.NaN()
		}
		return math.Round(a/b*100) / 100
	}
	rep.Ratios["rssPerConn"] = ratio(w.RSSPerConnBytes, l.RSSPerConnBytes)
	rep.Ratios["goroutinesPerConn"] = ratio(w.GoroutinesPerConn, l.GoroutinesPerConn)
	rep.Ratios["restRssPerConn"] = ratio(w.RestRSSPerConnBytes, l.RestRSSPerConnBytes)
	rep.Ratios["restGoroutinesPerConn"] = ratio(w.RestGoroutinesPerConn, l.RestGoroutinesPerConn)
	rep.Ratios["cpuPerHandshakeFeed"] = ratio(w.CPUPerHandshakeFeedUs, l.CPUPerHandshakeFeedUs)
	rep.Ratios["cpuPerFrame"] = ratio(w.CPUPerFrameUs, l.CPUPerFrameUs)
	rep.Ratios["cpuPerHandshake"] = ratio(w.CPUPerHandshakeUs, l.CPUPerHandshakeUs)
	rep.Ratios["connectMany"] = ratio(w.ConnectManySeconds, l.ConnectManySeconds)
	// The same ratios trial by trial, to show their spread.
	rep.RatioRuns = map[string][]float64{}
	for i := range *trials {
		lr, wr := runs["lean"][i], runs["wsready"][i]
		rep.RatioRuns["rssPerConn"] = append(rep.RatioRuns["rssPerConn"], ratio(wr.RSSPerConnBytes, lr.RSSPerConnBytes))
		rep.RatioRuns["cpuPerFrame"] = append(rep.RatioRuns["cpuPerFrame"], ratio(wr.CPUPerFrameUs, lr.CPUPerFrameUs))
		rep.RatioRuns["cpuPerHandshake"] = append(rep.RatioRuns["cpuPerHandshake"], ratio(wr.CPUPerHandshakeUs, lr.CPUPerHandshakeUs))
		rep.RatioRuns["connectMany"] = append(rep.RatioRuns["connectMany"], ratio(wr.ConnectManySeconds, lr.ConnectManySeconds))
		rep.RatioRuns["restGoroutinesPerConn"] = append(rep.RatioRuns["restGoroutinesPerConn"], ratio(wr.RestGoroutinesPerConn, lr.RestGoroutinesPerConn))
	}
	fmt.Fprintln(os.Stderr, "bench: simulator against the Python model")
	var err error
	if rep.Sim, err = measureSim(*model, *trials); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "bench.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	md := rep.markdown()
	fmt.Print(md)
	return os.WriteFile(filepath.Join(*out, "bench.md"), []byte(md), 0o644)
}

func (r Report) markdown() string {
	var b strings.Builder
	l, w := r.Servers[0], r.Servers[1]
	fmt.Fprintf(&b, "# Benchmarks: the wsready server against a lean baseline, the simulator against the Python model\n\n")
	fmt.Fprintf(&b, "Made by `%s` on %s: %s, %d CPUs; each figure is the median of %d runs (the servers take turns). The lean baseline (bench/lean.go) speaks the same protocol subset with one goroutine per connection and one shared ticker writing every ping and update; wsready runs with its defaults but for its handshake ceilings, raised so the figures are the server's, not its admission policy's.\n\n", r.Command, r.Date, r.Go, r.CPUs, len(r.Trials["lean"]))
	fmt.Fprintf(&b, "| figure | lean | wsready | wsready / lean | goal |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| RSS per subscribed connection at %d | %.1f KB | %.1f KB | %.2f | <= 0.9 |\n", l.Conns, l.RSSPerConnBytes/1e3, w.RSSPerConnBytes/1e3, r.Ratios["rssPerConn"])
	fmt.Fprintf(&b, "| heap in use per connection | %.1f KB | %.1f KB | %.2f | |\n", l.HeapPerConnBytes/1e3, w.HeapPerConnBytes/1e3, w.HeapPerConnBytes/l.HeapPerConnBytes)
	fmt.Fprintf(&b, "| goroutines per connection, under the feed | %.2f | %.2f | %.2f | wsready <= 1 |\n", l.GoroutinesPerConn, w.GoroutinesPerConn, r.Ratios["goroutinesPerConn"])
	fmt.Fprintf(&b, "| goroutines per connection at rest (connected, not subscribed) | %.2f | %.2f | %.2f | wsready <= 1 |\n", l.RestGoroutinesPerConn, w.RestGoroutinesPerConn, r.Ratios["restGoroutinesPerConn"])
	fmt.Fprintf(&b, "| RSS per connection at rest | %.1f KB | %.1f KB | %.2f | |\n", l.RestRSSPerConnBytes/1e3, w.RestRSSPerConnBytes/1e3, r.Ratios["restRssPerConn"])
	fmt.Fprintf(&b, "| CPU per delivered frame (%.0f s steady, %.0f / %.0f frames/s) | %.2f µs | %.2f µs | %.2f | <= 1.0 |\n", l.SteadySeconds, l.FramesPerSecSteady, w.FramesPerSecSteady, l.CPUPerFrameUs, w.CPUPerFrameUs, r.Ratios["cpuPerFrame"])
	fmt.Fprintf(&b, "| CPU per handshake (connecting %d at rest) | %.0f µs | %.0f µs | %.2f | <= 1.1 |\n", l.Conns, l.CPUPerHandshakeUs, w.CPUPerHandshakeUs, r.Ratios["cpuPerHandshake"])
	fmt.Fprintf(&b, "| CPU per handshake while the feed runs to those connected | %.0f µs | %.0f µs | %.2f | |\n", l.CPUPerHandshakeFeedUs, w.CPUPerHandshakeFeedUs, r.Ratios["cpuPerHandshakeFeed"])
	fmt.Fprintf(&b, "| time to connect %d clients | %.1f s | %.1f s | %.2f | <= 1.5 |\n", l.ConnectMany, l.ConnectManySeconds, w.ConnectManySeconds, r.Ratios["connectMany"])
	fmt.Fprintf(&b, "\nServer CPU in the steady window: lean %.0f%%, wsready %.0f%% of one core.\n", l.ServerCPUPercentAvg, w.ServerCPUPercentAvg)
	fmt.Fprintf(&b, "\nThe ratios run by run: RSS per connection %v, CPU per frame %v, CPU per handshake %v, time to connect %v, goroutines at rest %v.\n",
		r.RatioRuns["rssPerConn"], r.RatioRuns["cpuPerFrame"], r.RatioRuns["cpuPerHandshake"], r.RatioRuns["connectMany"], r.RatioRuns["restGoroutinesPerConn"])
	s := r.Sim
	fmt.Fprintf(&b, "\n## Simulator\n\nScenario: %s.\n\n", s.Scenario)
	if s.PythonSkipped != "" {
		fmt.Fprintf(&b, "Simulator: %v s (median %.3f s). Python model: skipped (%s).\n", fmtSecs(s.SimSeconds), median(s.SimSeconds), s.PythonSkipped)
	} else {
		fmt.Fprintf(&b, "| | runs (s) | median | \n|---|---|---|\n| Python model (`python3 fleet_model.py`) | %s | %.2f s |\n| wsready simulator (the three policies side by side) | %s | %.3f s |\n\nSpeed-up: %.0fx (goal: at least 50x). Full jitter's 99%% connected: %.1f s in the simulator.\n",
			fmtSecs(s.PythonSeconds), median(s.PythonSeconds), fmtSecs(s.SimSeconds), median(s.SimSeconds), s.Speedup, s.SimJitter99Sec)
	}
	return b.String()
}

func fmtSecs(xs []float64) string {
	p := make([]string, len(xs))
	for i, x := range xs {
		p[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(p, ", ")
}
