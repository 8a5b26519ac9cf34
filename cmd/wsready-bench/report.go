//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// ServerRun is one server's figures in one trial.
type ServerRun struct {
	Kind  string `json:"kind"`
	Trial int    `json:"trial"`
	Conns int    `json:"conns"`
	// Error is why the run failed; its figures are then left out.
	Error string `json:"error,omitempty"`

	// Subscribed, the feed running: Conns clients subscribed, then a
	// window of -steady.
	BaseRSSBytes          float64 `json:"baseRssBytes"` // before the first client
	BaseGoroutines        float64 `json:"baseGoroutines"`
	BaseHeapInuseBytes    float64 `json:"baseHeapInuseBytes"`
	ConnectSeconds        float64 `json:"connectSeconds"`        // Conns clients connected and subscribed, the feed running
	CPUPerHandshakeFeedUs float64 `json:"cpuPerHandshakeFeedUs"` // the server's CPU while they did, over Conns (the feed's deliveries included)
	Steady                Window  `json:"steady"`
	RSSPerConnBytes       float64 `json:"rssPerConnBytes"`     // (mean RSS through the window - base) / Conns
	RSSPeakPerConnBytes   float64 `json:"rssPeakPerConnBytes"` // (peak RSS - base) / Conns
	HeapInuseBytes        float64 `json:"heapInuseBytes"`      // at the window's end
	GoroutinesMeanPerConn float64 `json:"goroutinesMeanPerConn"`
	GoroutinesPeakPerConn float64 `json:"goroutinesPeakPerConn"` // (peak - base) / Conns
	CPUPerFrameUs         float64 `json:"cpuPerFrameUs"`         // the window's CPU over the messages delivered (updates and pings)
	CPUPerUpdateUs        float64 `json:"cpuPerUpdateUs"`        // the window's CPU over the updates delivered
	UpdatesPerConnPerSec  float64 `json:"updatesPerConnPerSec"`  // 4 when the server keeps up
	PingsPerConnPerSec    float64 `json:"pingsPerConnPerSec"`    // 1
	FramesPerConnPerSec   float64 `json:"framesPerConnPerSec"`   // WebSocket messages (centrifuge batches)
	ServerCores           float64 `json:"serverCores"`           // the window's CPU over its length
	Dropped               int64   `json:"dropped"`               // connections lost by the window's end

	// At rest: Conns clients connected and subscribed with the feed
	// silent, then a window of -steady (pings only).
	RestConnectSeconds        float64 `json:"restConnectSeconds"`
	CPUPerHandshakeUs         float64 `json:"cpuPerHandshakeUs"` // connect + subscribe: the server's CPU from the first dial to the last subscribed, over Conns
	Rest                      Window  `json:"rest"`
	RestRSSPerConnBytes       float64 `json:"restRssPerConnBytes"`
	RestGoroutinesPeakPerConn float64 `json:"restGoroutinesPeakPerConn"`
	RestPingsPerConnPerSec    float64 `json:"restPingsPerConnPerSec"`
	RestDropped               int64   `json:"restDropped"`

	// Connecting many: a fresh server, ConnectMany clients as fast as
	// they dial, until all are subscribed.
	ConnectMany        int     `json:"connectMany"`
	ConnectManySeconds float64 `json:"connectManySeconds"`
	// ConnectManyError: that step alone failed (a client dropped while
	// the fresh server took ConnectMany): its figure is left out, the
	// run's others stand.
	ConnectManyError string `json:"connectManyError,omitempty"`
}

// figureFailed says why run has no value for the figure key: the whole
// run failed, or (connectMany) that step alone; "" when it has one.
func figureFailed(key string, run ServerRun) string {
	switch {
	case run.Error != "":
		return run.Kind + " failed"
	case key == "connectMany" && run.ConnectManyError != "":
		return run.Kind + " dropped clients"
	}
	return ""
}

// IdleRun is the idle row in one trial.
type IdleRun struct {
	Trial          int     `json:"trial"`
	Command        string  `json:"command"`
	Conns          int     `json:"conns"`
	PingSeconds    float64 `json:"pingSeconds"`
	BaseRSSBytes   float64 `json:"baseRssBytes"`
	ConnectSeconds float64 `json:"connectSeconds"`
	Window         Window  `json:"window"` // total RSS (not per connection); goroutines every 5 s
	CPUCores       float64 `json:"cpuCores"`
	PingsPerConn   float64 `json:"pingsPerConn"` // since connecting, to show the pings ran
	Dropped        int64   `json:"dropped"`
	Error          string  `json:"error,omitempty"` // why the run failed; its figures are then left out
}

// IdleFigures is the idle row: every run, the medians, the goals.
type IdleFigures struct {
	Runs               []IdleRun `json:"runs"`
	MedianPeakRSSBytes float64   `json:"medianPeakRssBytes"`
	MedianCPUCores     float64   `json:"medianCpuCores"`
	GoalRSSBytes       float64   `json:"goalRssBytes"` // total, judged on the peak
	GoalCores          float64   `json:"goalCores"`
	VerdictRSS         string    `json:"verdictRss"`
	VerdictCPU         string    `json:"verdictCpu"`
}

// SSEFigures is the HTTP transport's row (sse.go measures it): on the
// same wsready server config as the WebSocket rows, the same number of
// subscribed clients over WebSocket and over SSE, run by run: CPU per
// delivered frame SSE / WebSocket (goal <= 1.5), RSS per connection
// (goal <= 2.0), and the sessions made per second over HTTP. With -sse 0
// NotMeasured says so, and the report prints it instead of a number.
type SSEFigures struct {
	NotMeasured            string    `json:"notMeasured,omitempty"`
	Conns                  int       `json:"conns"`
	SteadySeconds          float64   `json:"steadySeconds"`
	Runs                   []SSERun  `json:"runs,omitempty"`
	CPUPerFrameRatio       []float64 `json:"cpuPerFrameRatio,omitempty"` // the runs that did not fail, in order
	RSSPerConnRatio        []float64 `json:"rssPerConnRatio,omitempty"`
	HandshakesPerSec       []float64 `json:"handshakesPerSec,omitempty"`
	MedianCPUPerFrameRatio *float64  `json:"medianCpuPerFrameRatio"` // null: not measured
	MedianRSSPerConnRatio  *float64  `json:"medianRssPerConnRatio"`
	MedianHandshakesPerSec *float64  `json:"medianHandshakesPerSec"`
	GoalCPUPerFrameRatio   float64   `json:"goalCpuPerFrameRatio"`
	GoalRSSPerConnRatio    float64   `json:"goalRssPerConnRatio"`
	VerdictCPU             string    `json:"verdictCpu"`
	VerdictRSS             string    `json:"verdictRss"`
	// The long-poll leg's ratios over WebSocket (with -poll; no goal,
	// shown): CPU per delivered update and RSS per connection, the runs
	// that did not fail, in order, and their medians; the stream's CPU per
	// delivered update beside them.
	PollCPUPerUpdateRatio       []float64 `json:"pollCpuPerUpdateRatio,omitempty"`
	PollRSSPerConnRatio         []float64 `json:"pollRssPerConnRatio,omitempty"`
	SSECPUPerUpdateRatio        []float64 `json:"sseCpuPerUpdateRatio,omitempty"`
	MedianPollCPUPerUpdateRatio *float64  `json:"medianPollCpuPerUpdateRatio,omitempty"`
	MedianPollRSSPerConnRatio   *float64  `json:"medianPollRssPerConnRatio,omitempty"`
	MedianSSECPUPerUpdateRatio  *float64  `json:"medianSseCpuPerUpdateRatio,omitempty"`
}

const sseNotMeasured = "not measured: the row was not run (-sse 0)"

// RatioRun is one trial's figure for wsready and the other server.
type RatioRun struct {
	Wsready float64 `json:"wsready"`
	Other   float64 `json:"other"`
	Ratio   float64 `json:"ratio"`            // wsready / other
	Failed  string  `json:"failed,omitempty"` // a server's run failed: no figures
}

// Row is one figure with its goal, run by run.
type Row struct {
	Key    string `json:"key"` // for -findings
	Figure string `json:"figure"`
	Unit   string `json:"unit"`
	// Ratio rows compare wsready with the other server: Goal bounds the
	// median ratio (Stretch a tighter one). Absolute rows (Absolute) bound
	// wsready's own median and show the other's beside it.
	Absolute bool       `json:"absolute,omitempty"`
	Goal     float64    `json:"goal,omitempty"` // 0: no goal, shown for information
	Stretch  float64    `json:"stretch,omitempty"`
	Runs     []RatioRun `json:"runs"`
	Median   float64    `json:"median"` // of the ratios (of wsready's figures on an absolute row)
	Verdict  string     `json:"verdict"`
	Finding  string     `json:"finding,omitempty"`
}

// finite is x, or nil (null in JSON, which has no NaN) when x is NaN or
// infinite: a ratio with nothing to compare.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON writes a ratio that does not exist as null.
func (r RatioRun) MarshalJSON() ([]byte, error) {
	type plain RatioRun
	return json.Marshal(struct {
		plain
		Ratio *float64 `json:"ratio"`
	}{plain(r), finite(r.Ratio)})
}

// MarshalJSON writes a median that does not exist as null.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return json.Marshal(struct {
		plain
		Median *float64 `json:"median"`
	}{plain(r), finite(r.Median)})
}

// Comparison is wsready against one other server.
type Comparison struct {
	Against string `json:"against"`
	Rows    []Row  `json:"rows"`
}

// Machine names where the figures were made.
type Machine struct {
	CPU       string  `json:"cpu"`
	CPUs      int     `json:"cpus"`
	MemoryGB  float64 `json:"memoryGB"`
	Kernel    string  `json:"kernel"`
	LoadStart string  `json:"loadStart"` // /proc/loadavg's three averages
	LoadEnd   string  `json:"loadEnd"`
}

// Report is docs/measured/bench.json.
type Report struct {
	Date         string                 `json:"date"`
	Command      string                 `json:"command"`
	Go           string                 `json:"go"`
	Machine      Machine                `json:"machine"`
	Minutes      float64                `json:"minutes"` // how long the run took
	Params       params                 `json:"params"`
	Comparisons  []Comparison           `json:"comparisons"`
	Servers      map[string][]ServerRun `json:"servers"` // every run, by server
	Idle         IdleFigures            `json:"idle"`
	SSE          SSEFigures             `json:"sse"`
	Sim          SimFigures             `json:"sim"`
	FindingsNote string                 `json:"findingsNote,omitempty"`
}

func newReport(args []string, p params) *Report {
	return &Report{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Command: "go run ./cmd/wsready-bench run " + strings.Join(args, " "),
		Go:      runtime.Version(), Machine: machine(), Params: p,
		Idle: IdleFigures{GoalRSSBytes: 450e6, GoalCores: 0.1},
		SSE:  newSSEFigures(p),
	}
}

// figure reads one figure of a run.
type figure struct {
	key, label, unit string
	get              func(ServerRun) float64
}

func figures(p params) map[string]figure {
	fs := []figure{
		{"rssPerConn", fmt.Sprintf("RSS per subscribed connection at %s (mean through the %s window)", thousands(p.Conns), secs(p.SteadySeconds)), "KB", func(r ServerRun) float64 { return r.RSSPerConnBytes / 1e3 }},
		{"rssPeakPerConn", "RSS per subscribed connection, at the window's peak", "KB", func(r ServerRun) float64 { return r.RSSPeakPerConnBytes / 1e3 }},
		{"restRssPerConn", "RSS per connection at rest (subscribed, the feed silent; mean through the window)", "KB", func(r ServerRun) float64 { return r.RestRSSPerConnBytes / 1e3 }},
		{"heapPerConn", "heap in use per connection at the window's end (less the heap before the first client)", "KB", func(r ServerRun) float64 {
			return (r.HeapInuseBytes - r.BaseHeapInuseBytes) / float64(r.Conns) / 1e3
		}},
		{"cpuPerFrame", "CPU per delivered frame (updates and pings)", "µs", func(r ServerRun) float64 { return r.CPUPerFrameUs }},
		{"cpuPerUpdate", "CPU per delivered update (all the window's CPU over the updates)", "µs", func(r ServerRun) float64 { return r.CPUPerUpdateUs }},
		{"cpuPerHandshake", "CPU per handshake (connect + subscribe, the feed silent)", "µs", func(r ServerRun) float64 { return r.CPUPerHandshakeUs }},
		{"cpuPerHandshakeFeed", "CPU per handshake while the feed runs to those already in", "µs", func(r ServerRun) float64 { return r.CPUPerHandshakeFeedUs }},
		{"connectMany", fmt.Sprintf("time to connect and subscribe %s clients", thousands(p.Connect)), "s", func(r ServerRun) float64 { return r.ConnectManySeconds }},
		{"connect", fmt.Sprintf("time to connect and subscribe %s clients, the feed running", thousands(p.Conns)), "s", func(r ServerRun) float64 { return r.ConnectSeconds }},
		{"goroutinesPeakPerConn", "peak goroutines per connection through the window (the server's high-water mark, base taken off)", "", func(r ServerRun) float64 { return r.GoroutinesPeakPerConn }},
		{"goroutinesMeanPerConn", "mean goroutines per connection through the window", "", func(r ServerRun) float64 { return r.GoroutinesMeanPerConn }},
		{"restGoroutinesPeakPerConn", "peak goroutines per connection at rest", "", func(r ServerRun) float64 { return r.RestGoroutinesPeakPerConn }},
		{"updatesPerConnPerSec", "updates delivered per connection per second (4 if the server keeps up)", "", func(r ServerRun) float64 { return r.UpdatesPerConnPerSec }},
		{"pingsPerConnPerSec", "pings delivered per connection per second (1)", "", func(r ServerRun) float64 { return r.PingsPerConnPerSec }},
		{"framesPerConnPerSec", "WebSocket frames per connection per second", "", func(r ServerRun) float64 { return r.FramesPerConnPerSec }},
		{"serverCores", "server CPU through the window", "cores", func(r ServerRun) float64 { return r.ServerCores }},
		{"dropped", "connections dropped (with the feed / at rest)", "", func(r ServerRun) float64 { return float64(r.Dropped + r.RestDropped) }},
	}
	m := map[string]figure{}
	for i, f := range fs {
		m[f.key] = f
		m[fmt.Sprint(i)] = f // the order, for the every-figure tables
	}
	return m
}

// goals are the ratios the README holds the server to (against the lean
// baseline and against centrifuge), in the order the tables print them.
var goals = map[string][]struct {
	key           string
	goal, stretch float64
	absolute      bool
}{
	"lean": {
		{key: "rssPerConn", goal: 1.0, stretch: 0.9},
		{key: "restRssPerConn", goal: 1.0},
		{key: "cpuPerFrame", goal: 1.0},
		{key: "cpuPerHandshake", goal: 1.1},
		{key: "connectMany", goal: 1.5},
		{key: "goroutinesPeakPerConn"},
	},
	"centrifuge": {
		{key: "rssPerConn", goal: 1.0},
		{key: "restRssPerConn", goal: 1.0},
		{key: "cpuPerUpdate", goal: 1.0},
		{key: "cpuPerHandshake", goal: 1.0},
		{key: "goroutinesPeakPerConn", goal: 1.1, absolute: true},
		{key: "connectMany"},
		{key: "cpuPerFrame"},
	},
}

// finish computes the comparisons, the medians and the verdicts.
func (r *Report) finish(runs map[string][]ServerRun, notes map[string]string) {
	r.Servers = runs
	figs := figures(r.Params)
	for _, other := range []string{"lean", "centrifuge"} {
		if len(runs[other]) == 0 {
			continue
		}
		c := Comparison{Against: other}
		for _, g := range goals[other] {
			if g.key == "connectMany" && r.Params.Connect == 0 {
				continue
			}
			f := figs[g.key]
			row := Row{Key: other + "." + g.key, Figure: f.label, Unit: f.unit, Absolute: g.absolute, Goal: g.goal, Stretch: g.stretch}
			var xs []float64
			for i := range runs["wsready"] {
				wr, or := runs["wsready"][i], runs[other][i]
				wf, of := figureFailed(g.key, wr), figureFailed(g.key, or)
				if wf != "" || of != "" && !g.absolute {
					row.Runs = append(row.Runs, RatioRun{Ratio: math.NaN(), Failed: joinFailed(wf, of)})
					continue
				}
				w, o := f.get(wr), f.get(or)
				rr := RatioRun{Wsready: w, Other: o, Ratio: ratio(w, o)}
				if of != "" {
					rr.Ratio, rr.Failed = math.NaN(), of
				}
				row.Runs = append(row.Runs, rr)
				if g.absolute {
					xs = append(xs, w)
				} else {
					xs = append(xs, rr.Ratio)
				}
			}
			row.Median = median(xs)
			row.Verdict = verdictAtMost(row.Median, row.Goal, row.Stretch)
			row.Finding = notes[row.Key]
			c.Rows = append(c.Rows, row)
		}
		r.Comparisons = append(r.Comparisons, c)
	}
	if n := len(r.Idle.Runs); n > 0 {
		var rss, cores []float64
		for _, x := range r.Idle.Runs {
			if x.Error == "" {
				rss, cores = append(rss, x.Window.RSS.Peak), append(cores, x.CPUCores)
			}
		}
		r.Idle.MedianPeakRSSBytes, r.Idle.MedianCPUCores = median(rss), median(cores)
		r.Idle.VerdictRSS = verdictAtMost(r.Idle.MedianPeakRSSBytes, r.Idle.GoalRSSBytes, 0)
		r.Idle.VerdictCPU = verdictAtMost(r.Idle.MedianCPUCores, r.Idle.GoalCores, 0)
	}
	r.SSE.finish()
}

// joinFailed joins figureFailed's answers for two runs.
func joinFailed(a, b string) string {
	if a != "" && b != "" {
		return a + "; " + b
	}
	return a + b
}

// ratio is a / b to two places; NaN when b is 0 (nothing to compare).
func ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return round2(a / b)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// median of xs, NaN for none; with an even count, the mean of the middle
// two.
func median(xs []float64) float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// verdictAtMost judges x against an upper bound (and a stretch bound).
func verdictAtMost(x, goal, stretch float64) string {
	switch {
	case goal == 0:
		return ""
	case math.IsNaN(x):
		return "not measured"
	case stretch > 0 && x <= stretch:
		return "met, stretch too"
	case x <= goal:
		return "met"
	default:
		return "missed"
	}
}

// verdictAtLeast judges x against a lower bound.
func verdictAtLeast(x, goal float64) string {
	switch {
	case math.IsNaN(x) || x == 0:
		return "not measured"
	case x >= goal:
		return "met"
	default:
		return "missed"
	}
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), LoadStart: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %g kB", &kb); err == nil {
			m.MemoryGB = round2(kb * 1024 / 1e9)
		}
	}
	return m
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// thousands writes n with commas: 19,500.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func secs(s float64) string { return fmt.Sprintf("%g s", s) }

// num writes a figure in its unit with sensible places.
func num(x float64, unit string) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	var v string
	switch {
	case unit == "s" || unit == "cores" || math.Abs(x) < 10:
		v = fmt.Sprintf("%.2f", x)
	case math.Abs(x) < 100:
		v = fmt.Sprintf("%.1f", x)
	default:
		v = fmt.Sprintf("%.0f", x)
	}
	if unit == "" {
		return v
	}
	return v + " " + unit
}

func ratioText(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", x)
}

func (r *Report) markdown() string {
	var b strings.Builder
	p := r.Params
	m := r.Machine
	others := strings.Join(slices.DeleteFunc(slices.Clone(p.Servers), func(s string) bool { return s == "wsready" }), " and ")
	fmt.Fprintf(&b, "# Benchmarks: the wsready server beside %s; the simulator beside the Python model\n\n", others)
	b.WriteString("The browser client beside centrifuge-js in one Chromium: [browser-bench.md](../browser-bench.md) (make bench-browser).\n\n")
	fmt.Fprintf(&b, "Made by `%s` (make bench) on %s in %.1f minutes. Machine: %s, %d CPUs, %.0f GB, %s, %s; load average %s at the start, %s at the end. Clients and servers share the machine.\n\n",
		r.Command, r.Date, r.Minutes, m.CPU, m.CPUs, m.MemoryGB, m.Kernel, r.Go, m.LoadStart, m.LoadEnd)
	fmt.Fprintf(&b, "Every figure is measured in %d runs, the servers taking turns (their order turning each run). A ratio is wsready's figure over the other server's in the same run; its median is the median of the runs' ratios, and the goal is judged on it. KB and MB are 1,000 and 1,000,000 bytes.\n\n", p.Trials)
	b.WriteString("How: each server runs in a process of its own and the clients in others (at most 9,000 connections each, several loopback source addresses). ")
	fmt.Fprintf(&b, "RSS is VmRSS from /proc/PID/status, sampled every %g ms through the window; RSS per connection is the **mean** through the window less the RSS before the first client, over the connections. ", p.SampleMs)
	fmt.Fprintf(&b, "Goroutines are read from the server every %g ms (mean and end); the peak is the server's own high-water mark, which it takes every millisecond, so a burst between two samples counts; per connection it is the peak less the count before the first client, over the connections. ", p.SampleMs)
	b.WriteString("CPU is user + system from /proc/PID/stat (10 ms resolution): per delivered frame it is the window's CPU over the protocol messages the clients received in it (updates and pings; centrifuge puts several in a WebSocket frame, each is counted); per handshake it is the CPU from the first dial until every client is connected and subscribed with the feed silent, over the clients. ")
	ping := time.Duration(p.PingSecs * float64(time.Second))
	if ping <= 0 {
		ping = time.Second // a report from before -ping
	}
	fmt.Fprintf(&b, "Every server pings every connection every %v and publishes an update every 250 ms to one channel that all %s clients subscribe to. ", ping, thousands(p.Conns))
	fmt.Fprintf(&b, "The lean baseline (cmd/wsready-bench/lean.go) speaks wsready's protocol subset with one goroutine per connection and one goroutine writing every ping and update; wsready is package server with its defaults but its handshake ceilings raised; centrifuge is github.com/centrifugal/centrifuge v0.40.1 (cmd/wsready-bench/centrifuge) with its JSON protocol, anonymous connections, its app-level ping every %v and a pong timeout of %v.\n", ping, ping*4/5)
	if r.FindingsNote != "" {
		fmt.Fprintf(&b, "\nFindings: %s.\n", r.FindingsNote)
	}

	for _, c := range r.Comparisons {
		fmt.Fprintf(&b, "\n## wsready / %s\n\n", c.Against)
		hasFinding := false
		for _, row := range c.Rows {
			hasFinding = hasFinding || row.Finding != ""
		}
		b.WriteString("| figure | goal |")
		for i := range p.Trials {
			fmt.Fprintf(&b, " run %d |", i+1)
		}
		b.WriteString(" median | |")
		if hasFinding {
			b.WriteString(" finding |")
		}
		b.WriteString("\n|---|---|" + strings.Repeat("---|", p.Trials) + "---|---|")
		if hasFinding {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, row := range c.Rows {
			goal := "shown"
			switch {
			case row.Absolute:
				goal = fmt.Sprintf("wsready <= %.1f", row.Goal)
			case row.Goal > 0 && row.Stretch > 0:
				goal = fmt.Sprintf("<= %.1f (stretch %.1f)", row.Goal, row.Stretch)
			case row.Goal > 0:
				goal = fmt.Sprintf("<= %.1f", row.Goal)
			}
			label := row.Figure
			if row.Absolute {
				label += " (wsready's own figure, not a ratio; " + c.Against + "'s beside it)"
			}
			fmt.Fprintf(&b, "| %s | %s |", label, goal)
			for _, rr := range row.Runs {
				if rr.Failed != "" {
					if row.Absolute && !strings.HasPrefix(rr.Failed, "wsready") {
						fmt.Fprintf(&b, " %s (%s failed) |", num(rr.Wsready, row.Unit), c.Against)
					} else {
						fmt.Fprintf(&b, " %s |", rr.Failed)
					}
					continue
				}
				if row.Absolute {
					fmt.Fprintf(&b, " %s (%s %s) |", num(rr.Wsready, row.Unit), c.Against, num(rr.Other, row.Unit))
				} else {
					fmt.Fprintf(&b, " %s (%s / %s) |", ratioText(rr.Ratio), num(rr.Wsready, row.Unit), num(rr.Other, row.Unit))
				}
			}
			med := ratioText(row.Median)
			if row.Absolute {
				med = num(row.Median, row.Unit)
			}
			fmt.Fprintf(&b, " **%s** | %s |", med, row.Verdict)
			if hasFinding {
				fmt.Fprintf(&b, " %s |", row.Finding)
			}
			b.WriteString("\n")
		}
	}

	b.WriteString("\n## Every figure, every run\n")
	figs := figures(p)
	for _, kind := range p.Servers {
		runs := r.Servers[kind]
		if len(runs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n| figure |", kind)
		for i := range runs {
			fmt.Fprintf(&b, " run %d |", i+1)
		}
		b.WriteString(" median |\n|---|" + strings.Repeat("---|", len(runs)) + "---|\n")
		for i := 0; ; i++ {
			f, ok := figs[fmt.Sprint(i)]
			if !ok {
				break
			}
			if f.key == "connectMany" && p.Connect == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s |", f.label)
			var xs []float64
			for _, run := range runs {
				if why := figureFailed(f.key, run); why != "" {
					b.WriteString(" " + strings.TrimPrefix(why, run.Kind+" ") + " |")
					continue
				}
				x := f.get(run)
				xs = append(xs, x)
				fmt.Fprintf(&b, " %s |", num(x, f.unit))
			}
			fmt.Fprintf(&b, " %s |\n", num(median(xs), f.unit))
		}
		b.WriteString("| RSS through the window, mean / peak / end |")
		for _, run := range runs {
			fmt.Fprintf(&b, " %.0f / %.0f / %.0f MB |", run.Steady.RSS.Mean/1e6, run.Steady.RSS.Peak/1e6, run.Steady.RSS.End/1e6)
		}
		b.WriteString(" |\n| goroutines sampled through the window, mean / peak / end; the server's high-water mark |")
		for _, run := range runs {
			fmt.Fprintf(&b, " %.0f / %.0f / %.0f; %.0f |", run.Steady.Goroutines.Mean, run.Steady.Goroutines.Peak, run.Steady.Goroutines.End, run.Steady.GoroutinesPeak)
		}
		b.WriteString(" |\n")
		for _, run := range runs {
			if run.Error != "" {
				fmt.Fprintf(&b, "\nRun %d failed: %s\n", run.Trial, run.Error)
			} else if run.ConnectManyError != "" {
				fmt.Fprintf(&b, "\nRun %d's connect of %s clients to a fresh server failed (its other figures stand): %s\n", run.Trial, thousands(run.ConnectMany), run.ConnectManyError)
			}
		}
	}

	if len(r.Idle.Runs) > 0 {
		x := r.Idle.Runs[0]
		fmt.Fprintf(&b, "\n## Idle: %s connections at %g s pings, no feed (wsready serve)\n\n", thousands(x.Conns), x.PingSeconds)
		fmt.Fprintf(&b, "`%s`, the clients connected and subscribed to nothing (with no feed there is no topic); then %g s sampled: RSS every %g ms, goroutines every 5 s (a /metrics scrape costs the server CPU, which this row measures). The RSS goal is judged on the peak: a memory budget is a high-water mark.\n\n",
			x.Command, r.Params.IdleWindowSecs, p.SampleMs)
		b.WriteString("| run | total RSS, mean / peak / end | before the clients | server CPU through the window | goroutines, peak | pings per connection | dropped |\n|---|---|---|---|---|---|---|\n")
		for _, x := range r.Idle.Runs {
			if x.Error != "" {
				fmt.Fprintf(&b, "| %d | failed: %s | | | | | |\n", x.Trial, x.Error)
				continue
			}
			fmt.Fprintf(&b, "| %d | %.0f / %.0f / %.0f MB | %.0f MB | %.3f cores | %.0f | %.1f | %d |\n", x.Trial, x.Window.RSS.Mean/1e6, x.Window.RSS.Peak/1e6, x.Window.RSS.End/1e6,
				x.BaseRSSBytes/1e6, x.CPUCores, x.Window.Goroutines.Peak, x.PingsPerConn, x.Dropped)
		}
		fmt.Fprintf(&b, "| **median** | peak **%.0f MB** (goal <= %.0f MB: %s) | | **%.3f cores** (goal <= %g core: %s) | | | |\n",
			r.Idle.MedianPeakRSSBytes/1e6, r.Idle.GoalRSSBytes/1e6, r.Idle.VerdictRSS, r.Idle.MedianCPUCores, r.Idle.GoalCores, r.Idle.VerdictCPU)
	}

	b.WriteString("\n" + r.SSE.markdown())
	b.WriteString("\n")
	b.WriteString(r.Sim.markdown())
	return b.String()
}

// markdown is the simulator's section of the report: every run of both
// processes, the speed-ups, and the figures side by side.
func (s SimFigures) markdown() string {
	var b strings.Builder
	b.WriteString("## The simulator beside the Python model, as whole processes\n\n")
	if s.Error != "" {
		fmt.Fprintf(&b, "**The comparison failed: %s.** What it measured before is below.\n\n", s.Error)
	}
	fmt.Fprintf(&b, "Scenario: %s. The simulator: `%s` (the built binary; the model's three policies, side by side on the machine's cores). ", s.Scenario, s.SimCommand)
	if s.NotMeasured != "" {
		fmt.Fprintf(&b, "The Python model: **not measured: %s**.\n\n", s.NotMeasured)
		b.WriteString("| | ")
		for i := range s.SimRuns {
			fmt.Fprintf(&b, "run %d | ", i+1)
		}
		b.WriteString("median |\n|---|" + strings.Repeat("---|", len(s.SimRuns)+1) + "\n| wsready sim, wall |")
		var w []float64
		for _, x := range s.SimRuns {
			w = append(w, x.WallSeconds)
			fmt.Fprintf(&b, " %.3f s |", x.WallSeconds)
		}
		fmt.Fprintf(&b, " %.3f s |\n\nSpeed-up: not measured (goal >= %gx).\n", median(w), s.Goal)
		return b.String()
	}
	fmt.Fprintf(&b, "The model: `python3 %s`. Each run starts the process and waits for its end; the two take turns.\n\n| | ", s.ModelPath)
	cols := max(len(s.SimRuns), len(s.ModelRuns))
	for i := range cols {
		fmt.Fprintf(&b, "run %d | ", i+1)
	}
	b.WriteString("median |\n|---|" + strings.Repeat("---|", cols+1) + "\n")
	line := func(label string, get func(ProcRun) float64, runs []ProcRun, unit string, places int) {
		fmt.Fprintf(&b, "| %s |", label)
		var xs []float64
		for _, x := range runs {
			xs = append(xs, get(x))
			fmt.Fprintf(&b, " %.*f %s |", places, get(x), unit)
		}
		fmt.Fprintf(&b, " %.*f %s |\n", places, median(xs), unit)
	}
	line("python3 fleet_model.py, wall", func(x ProcRun) float64 { return x.WallSeconds }, s.ModelRuns, "s", 2)
	line("wsready sim, wall", func(x ProcRun) float64 { return x.WallSeconds }, s.SimRuns, "s", 3)
	b.WriteString("| **speed-up, wall** |")
	for _, x := range s.SpeedupRuns {
		fmt.Fprintf(&b, " %.1fx |", x)
	}
	fmt.Fprintf(&b, " **%.1fx** (goal >= %gx: %s) |\n", s.Speedup, s.Goal, s.Verdict)
	line("python3, CPU time", func(x ProcRun) float64 { return x.CPUSeconds }, s.ModelRuns, "s", 2)
	line("wsready sim, CPU time (its policies run in parallel)", func(x ProcRun) float64 { return x.CPUSeconds }, s.SimRuns, "s", 3)
	fmt.Fprintf(&b, "| speed-up, CPU time (of the medians) |%s %.1fx |\n", strings.Repeat(" |", len(s.SimRuns)), s.SpeedupCPU)
	line("wsready sim, in-process (its own elapsedMs)", func(x ProcRun) float64 { return x.InProcessSeconds }, s.SimRuns, "s", 3)
	line("wsready version (the binary's start and exit alone), wall", func(x ProcRun) float64 { return x.WallSeconds }, s.StartRuns, "s", 3)
	line("wsready version, CPU time", func(x ProcRun) float64 { return x.CPUSeconds }, s.StartRuns, "s", 3)
	// The machine may be shared: its load as each process started.
	b.WriteString("| load average (1, 5, 15 min) as the model / the simulator started |")
	for i := range cols {
		var m, w string
		if i < len(s.ModelRuns) {
			m = s.ModelRuns[i].Load
		}
		if i < len(s.SimRuns) {
			w = s.SimRuns[i].Load
		}
		fmt.Fprintf(&b, " %s / %s |", m, w)
	}
	b.WriteString(" |\n")
	b.WriteString("\nThe figures side by side (the same scenario; model / simulator):\n\n| policy | rejected handshakes | attempts per client | 99% connected at | peak attempts in one second | |\n|---|---|---|---|---|---|\n")
	for _, f := range s.Figures {
		same := "identical"
		if !f.Equal {
			same = "differ"
			if f.Policy == "exp_full_jitter" {
				same = "differ: the random sources differ (Python's Mersenne Twister, the simulator's PCG, both seeded 7)"
			}
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %.2f / %.2f | %.1f / %.1f s | %d / %d | %s |\n", f.Policy, f.Model.Rejected, f.Sim.Rejected,
			f.Model.AttemptsPerClient, f.Sim.AttemptsPerClient, f.Model.T99Seconds, f.Sim.T99Seconds, f.Model.PeakPerSecond, f.Sim.PeakPerSecond, same)
	}
	return b.String()
}

// handWritten starts the part of bench.md written by hand (findings from
// earlier runs, profiles, before-and-after tables): make bench rewrites
// the page above it and keeps everything from it on.
const handWritten = "<!-- written by hand below: make bench keeps this part as it is -->"

// keepHandWritten appends prev's hand-written part, if it has one, to md.
func keepHandWritten(md, prev string) string {
	i := strings.Index(prev, handWritten)
	if i < 0 {
		return md
	}
	return strings.TrimRight(md, "\n") + "\n\n" + prev[i:]
}
