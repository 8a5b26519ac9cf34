//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// params are the run's settings (the flags of run).
type params struct {
	Conns          int      `json:"conns"`
	Connect        int      `json:"connect"`
	SteadySeconds  float64  `json:"steadySeconds"`
	Idle           int      `json:"idle"`
	IdleWindowSecs float64  `json:"idleWindowSeconds"`
	IdlePingSecs   float64  `json:"idlePingSeconds"`
	SampleMs       float64  `json:"sampleMs"`
	PingSecs       float64  `json:"pingSeconds"`
	Trials         int      `json:"trials"`
	Servers        []string `json:"servers"`
	SSEConns       int      `json:"sseConns"` // the HTTP transport's row (sse.go); 0: skipped
	SSEPoll        bool     `json:"ssePoll"`  // the row also runs a long-poll leg (poll.go); the sse command's -poll

	steady, idleWindow, idlePing, sample, ping time.Duration
}

// Phase timings and bounds.
const (
	settle        = 3 * time.Second // after the last client is ready, before a window
	serverSettle  = 500 * time.Millisecond
	readyWithin   = 3 * time.Minute // for -conns clients
	manyWithin    = 5 * time.Minute // for -connect or -idle clients
	idleGoroutine = 5 * time.Second // goroutine sampling in the idle row: a /metrics scrape costs the server CPU
	buildTimeout  = 10 * time.Minute
)

var allServers = []string{"lean", "wsready", "centrifuge"}

// env is what the phases need: the binaries and the settings.
type env struct {
	self, wsreadyBin, peerBin string
	p                         params
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	conns := fs.Int("conns", 10000, "subscribed connections for the per-connection figures (1..18000)")
	connect := fs.Int("connect", 19000, "clients for the time-to-connect figure (0: skip it; at most 19500)")
	steady := fs.Duration("steady", 10*time.Second, "the sampled window, with the feed running and at rest (1s..10m)")
	idle := fs.Int("idle", 19500, "idle connections for the wsready serve idle row (0: skip it; at most 19500)")
	idleWindow := fs.Duration("idle-window", 60*time.Second, "the idle row's sampled window (1s..30m)")
	idlePing := fs.Duration("idle-ping", 25*time.Second, "the idle row's server ping interval (1s..1h)")
	ping := fs.Duration("ping", time.Second, "every server's heartbeat in the per-connection phases (1s..1h; centrifuge's pong timeout is 4/5 of it)")
	sample := fs.Duration("sample", 100*time.Millisecond, "how often RSS and goroutines are sampled through a window (10ms..1s)")
	sseConns := fs.Int("sse", 5000, "subscribed connections in each leg of the HTTP transport's row, WebSocket and SSE on wsready (0: skip it; at most 9000)")
	trials := fs.Int("trials", 3, "runs of every server, of the idle row, of the simulator and of the model (1..9)")
	servers := fs.String("servers", strings.Join(allServers, ","), "the servers to run, comma-separated: wsready and at least one of lean, centrifuge")
	out := fs.String("out", "docs/measured", "directory for bench.md and bench.json (it must exist)")
	model := fs.String("model", "", "the Python fleet model (fleet_model.py); empty or missing: the report says the model was not measured")
	only := fs.String("only", "", "run one row alone, -trials times: idle (the wsready serve idle row) or connect (the time to connect -connect clients, wsready beside lean, the ratio's median); its runs, with the load average around each, go to stdout and -out/bench-only.json, and bench.md and bench.json are not written (empty: the whole benchmark)")
	profiles := fs.String("profile", "", "with -only connect: a directory where the wsready server of each run writes its CPU profile, connect-N.prof (empty: none)")
	findings := fs.String("findings", "", "a JSON object of findings by row key, printed beside each figure (empty: none; a path that does not exist: none, and the report says so)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("run: unexpected argument %q", fs.Arg(0))
	}
	p := params{Conns: *conns, Connect: *connect, Idle: *idle, Trials: *trials, SSEConns: *sseConns,
		steady: *steady, idleWindow: *idleWindow, idlePing: *idlePing, sample: *sample, ping: *ping}
	p.PingSecs = ping.Seconds()
	p.SteadySeconds, p.IdleWindowSecs, p.IdlePingSecs, p.SampleMs = steady.Seconds(), idleWindow.Seconds(), idlePing.Seconds(), float64(sample.Milliseconds())
	switch {
	case p.Conns < 1 || p.Conns > 18000:
		return usagef("run: -conns must be 1..18000, not %d", p.Conns)
	case p.Connect < 0 || p.Connect > 19500:
		return usagef("run: -connect must be 0..19500, not %d", p.Connect)
	case p.Idle < 0 || p.Idle > 19500:
		return usagef("run: -idle must be 0..19500, not %d", p.Idle)
	case *steady < time.Second || *steady > 10*time.Minute:
		return usagef("run: -steady must be 1s..10m, not %v", *steady)
	case *idleWindow < time.Second || *idleWindow > 30*time.Minute:
		return usagef("run: -idle-window must be 1s..30m, not %v", *idleWindow)
	case *ping < time.Second || *ping > time.Hour:
		return usagef("run: -ping must be 1s..1h, not %v", *ping)
	case *idlePing < time.Second || *idlePing > time.Hour:
		return usagef("run: -idle-ping must be 1s..1h, not %v", *idlePing)
	case *sample < 10*time.Millisecond || *sample > time.Second:
		return usagef("run: -sample must be 10ms..1s, not %v", *sample)
	case p.SSEConns < 0 || p.SSEConns > maxClientsPerProcess:
		return usagef("run: -sse must be 0..%d, not %d", maxClientsPerProcess, p.SSEConns)
	case p.Trials < 1 || p.Trials > 9:
		return usagef("run: -trials must be 1..9, not %d", p.Trials)
	case *only != "" && *only != "idle" && *only != "connect":
		return usagef("run: -only takes idle or connect, not %q", *only)
	case *only == "idle" && p.Idle == 0:
		return usagef("run: -only idle needs -idle above 0")
	case *only == "connect" && p.Connect == 0:
		return usagef("run: -only connect needs -connect above 0")
	case *profiles != "" && *only != "connect":
		return usagef("run: -profile is for -only connect")
	}
	if *profiles != "" {
		if st, err := os.Stat(*profiles); err != nil || !st.IsDir() {
			return usagef("run: -profile %q is not a directory", *profiles)
		}
	}
	seen := map[string]bool{}
	for _, s := range strings.Split(*servers, ",") {
		s = strings.TrimSpace(s)
		if s != "wsready" && s != "lean" && s != "centrifuge" {
			return usagef("run: -servers takes wsready, lean and centrifuge, not %q", s)
		}
		if !seen[s] {
			seen[s] = true
		}
	}
	if !seen["wsready"] || len(seen) < 2 {
		return usagef("run: -servers must name wsready and at least one of lean, centrifuge")
	}
	for _, s := range allServers {
		if seen[s] {
			p.Servers = append(p.Servers, s)
		}
	}
	if st, err := os.Stat(*out); err != nil || !st.IsDir() {
		return usagef("run: -out %q is not a directory", *out)
	}
	if err := checkDescriptors(max(p.Conns, p.Connect, p.Idle, p.SSEConns)); err != nil {
		return err
	}
	notes, findingsNote, err := loadFindings(*findings)
	if err != nil {
		return err
	}

	started := time.Now()
	rep := newReport(args, p)
	rep.FindingsNote = findingsNote
	e, cleanup, err := build(p)
	if err != nil {
		return err
	}
	defer cleanup()
	logf("built in %v", time.Since(started).Round(time.Second))
	if *only != "" {
		return runOnly(e, args, *only, *out, *profiles)
	}

	// The servers take turns, their order turning by one every trial, so
	// the machine's drift falls on each alike.
	runs := map[string][]ServerRun{}
	var failures []error
	for tr := range p.Trials {
		for i := range p.Servers {
			kind := p.Servers[(i+tr)%len(p.Servers)]
			logf("trial %d/%d: %s, %d connections, then %d", tr+1, p.Trials, kind, p.Conns, p.Connect)
			// A run that fails is recorded as failed (its figures
			// dropped) and the others go on: one bad run must not cost
			// the other twenty minutes.
			r, err := e.measureServer(kind, tr+1)
			if err != nil {
				failures = append(failures, fmt.Errorf("failed to measure %s (trial %d): %w", kind, tr+1, err))
				logf("%v", failures[len(failures)-1])
				r = ServerRun{Kind: kind, Trial: tr + 1, Conns: p.Conns, ConnectMany: p.Connect, Error: err.Error()}
			} else if r.ConnectManyError != "" {
				// The connect step alone failed. Centrifuge's is a figure
				// shown beside ours, no goal of ours: noted in the report
				// (its clients drop at times while 19,000 connect on this
				// machine), not a failure of the bench.
				err := fmt.Errorf("%s (trial %d): the connect of %d clients failed, its other figures stand: %s", kind, tr+1, p.Connect, r.ConnectManyError)
				if kind != "centrifuge" {
					failures = append(failures, err)
				}
				logf("%v", err)
			}
			runs[kind] = append(runs[kind], r)
		}
		if p.Idle > 0 {
			logf("trial %d/%d: wsready serve, %d idle connections at %v pings, %v window", tr+1, p.Trials, p.Idle, p.idlePing, p.idleWindow)
			r, err := e.measureIdle(tr + 1)
			if err != nil {
				failures = append(failures, fmt.Errorf("failed to measure the idle row (trial %d): %w", tr+1, err))
				logf("%v", failures[len(failures)-1])
				r = IdleRun{Trial: tr + 1, Conns: p.Idle, PingSeconds: p.idlePing.Seconds(), Command: r.Command, Error: err.Error()}
			}
			rep.Idle.Runs = append(rep.Idle.Runs, r)
		}
		if p.SSEConns > 0 {
			r, err := e.sseTrial(tr+1, p.Trials)
			if err != nil {
				failures = append(failures, err)
			}
			rep.SSE.Runs = append(rep.SSE.Runs, r)
		}
	}
	logf("the simulator beside the Python model")
	if rep.Sim, err = measureSim(e.wsreadyBin, *model, p.Trials); err != nil {
		failures = append(failures, err)
		logf("%v", err)
		rep.Sim.Error = err.Error()
	}
	rep.finish(runs, notes)
	rep.Machine.LoadEnd = loadAverage()
	rep.Minutes = round2(time.Since(started).Minutes())

	md := rep.markdown()
	fmt.Print(md)
	mdPath := filepath.Join(*out, "bench.md")
	if prev, err := os.ReadFile(mdPath); err == nil {
		md = keepHandWritten(md, string(prev))
	}
	if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
		return fmt.Errorf("failed to write bench.md: %w", err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to encode the report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "bench.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("failed to write bench.json: %w", err)
	}
	logf("done in %v", time.Since(started).Round(time.Second))
	if len(failures) > 0 {
		return fmt.Errorf("%d measurements failed (the report shows which): %w", len(failures), errors.Join(failures...))
	}
	return nil
}

// loadFindings reads the -findings file: a JSON object from row keys
// (lean.rssPerConn, centrifuge.cpuPerUpdate, ...: the keys in bench.json)
// to the finding printed beside the figure. No path: none; a path with no
// file: none, and a note saying so.
func loadFindings(path string) (map[string]string, string, error) {
	if path == "" {
		return nil, "", nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "no findings file at " + path, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("failed to read -findings: %w", err)
	}
	var notes map[string]string
	if err := json.Unmarshal(b, &notes); err != nil {
		return nil, "", usagef("run: -findings %s is not a JSON object of strings: %v", path, err)
	}
	return notes, "", nil
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// checkDescriptors refuses a run whose busiest server would need more
// descriptors than a process may open (each child raises its soft limit
// to the hard one, as every Go program does).
func checkDescriptors(conns int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("failed to read the descriptor limit: %w", err)
	}
	if need := uint64(conns) + 100; need > lim.Max {
		return usagef("run: %d connections to one server need about %d descriptors; this machine allows %d per process", conns, need, lim.Max)
	}
	return nil
}

// build compiles the wsready binary (for the simulator and the idle row)
// and, when it runs, the centrifuge peer (its own module) into a temporary
// directory that cleanup removes.
func build(p params) (*env, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("failed to find this executable: %w", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "wsready-bench-")
	if err != nil {
		return nil, nil, fmt.Errorf("failed to make a build directory: %w", err)
	}
	cleanup := func() { os.RemoveAll(tmp) }
	e := &env{self: self, p: p, wsreadyBin: filepath.Join(tmp, "wsready")}
	if err := goBuild(root, e.wsreadyBin, "./cmd/wsready"); err != nil {
		cleanup()
		return nil, nil, err
	}
	for _, s := range p.Servers {
		if s == "centrifuge" {
			e.peerBin = filepath.Join(tmp, "centrifuge-peer")
			if err := goBuild(filepath.Join(root, "cmd", "wsready-bench", "centrifuge"), e.peerBin, "."); err != nil {
				cleanup()
				return nil, nil, fmt.Errorf("%w (the centrifuge peer is a module of its own: its dependencies come from the Go module proxy)", err)
			}
		}
	}
	return e, cleanup, nil
}

// moduleRoot is the directory of the github.com/wsready/wsready module the
// harness runs in (make bench runs it from there).
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("failed to run go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	b, err := os.ReadFile(gomod)
	if gomod == "" || err != nil || !strings.HasPrefix(string(b), "module github.com/wsready/wsready\n") {
		return "", errors.New("run the benchmark from the wsready repository (make bench): it builds cmd/wsready and the centrifuge peer")
	}
	return filepath.Dir(gomod), nil
}

func goBuild(dir, out, pkg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to build %s in %s: %w: %s", pkg, dir, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// liveServer is a running server child and how to reach it.
type liveServer struct {
	*child
	base, ws, proto string
	sampler         sampler
}

// startServer starts one server of the kind with the ping interval and the
// feed on (updates) or silent; extra are more server child flags (wsready
// and lean only).
func (e *env) startServer(kind string, ping time.Duration, updates bool, extra ...string) (*liveServer, error) {
	var c *child
	var err error
	s := &liveServer{proto: protoWsready}
	switch kind {
	case "wsready", "lean":
		c, err = startChild(e.self, append([]string{"server", "-kind", kind, "-ping", ping.String(), "-updates=" + strconv.FormatBool(updates)}, extra...)...)
		s.ws = "/ws"
	case "centrifuge":
		c, err = startChild(e.peerBin, "-ping", ping.String(), "-pong", (ping * 4 / 5).String(), "-updates="+strconv.FormatBool(updates))
		s.ws, s.proto = "/connection/websocket", protoCentrifuge
	default:
		return nil, fmt.Errorf("unknown server %q", kind)
	}
	if err != nil {
		return nil, err
	}
	s.child, s.base = c, "http://"+c.addr
	s.ws = "ws://" + c.addr + s.ws
	s.sampler = sampler{pid: c.pid(), goroutines: benchGoroutines(s.base)}
	return s, nil
}

// point is a server's state at one moment: before the first client.
type point struct {
	rss        float64
	goroutines float64
	cpu        time.Duration
}

func (s *liveServer) point() (point, error) {
	time.Sleep(serverSettle)
	r, err := readRSS(s.pid())
	if err != nil {
		return point{}, err
	}
	c, err := s.sampler.cpu()
	if err != nil {
		return point{}, err
	}
	g, _, err := s.sampler.goroutines()
	return point{rss: float64(r), goroutines: float64(g), cpu: c}, err
}

// measureServer runs the three phases of one server: subscribed with the
// feed running, at rest (subscribed, the feed silent), and connecting many.
func (e *env) measureServer(kind string, trial int) (ServerRun, error) {
	p := e.p
	r := ServerRun{Kind: kind, Trial: trial, Conns: p.Conns, ConnectMany: p.Connect}
	n := float64(p.Conns)

	// Subscribed, the feed running.
	if err := func() error {
		srv, err := e.startServer(kind, p.ping, true)
		if err != nil {
			return err
		}
		defer srv.stop()
		p0, err := srv.point()
		if err != nil {
			return err
		}
		r.BaseRSSBytes, r.BaseGoroutines = p0.rss, p0.goroutines
		var hs0 serverStats
		if err := getJSON(srv.base+"/bench/stats?mem=1", &hs0); err != nil {
			return err
		}
		r.BaseHeapInuseBytes = float64(hs0.HeapInuse)
		f, err := startFleet(e.self, srv.ws, srv.proto, p.Conns, 0, true)
		if err != nil {
			return err
		}
		defer f.stop()
		took, err := f.waitReady(p.Conns, true, readyWithin)
		if err != nil {
			return fmt.Errorf("subscribing %d: %w", p.Conns, err)
		}
		c1, err := srv.sampler.cpu()
		if err != nil {
			return err
		}
		r.ConnectSeconds = took.Seconds()
		r.CPUPerHandshakeFeedUs = (c1 - p0.cpu).Seconds() * 1e6 / n
		time.Sleep(settle)
		s0, err := f.stats()
		if err != nil {
			return err
		}
		w, err := srv.sampler.window(p.steady, p.sample, p.sample)
		if err != nil {
			return err
		}
		s1, err := f.stats()
		if err != nil {
			return err
		}
		var hs serverStats
		if err := getJSON(srv.base+"/bench/stats?mem=1", &hs); err != nil {
			return err
		}
		r.Steady = w
		r.RSSPerConnBytes = (w.RSS.Mean - p0.rss) / n
		r.RSSPeakPerConnBytes = (w.RSS.Peak - p0.rss) / n
		r.GoroutinesMeanPerConn = (w.Goroutines.Mean - p0.goroutines) / n
		r.GoroutinesPeakPerConn = (w.GoroutinesPeak - p0.goroutines) / n
		r.HeapInuseBytes = float64(hs.HeapInuse)
		msgs, updates := float64(s1.Msgs-s0.Msgs), float64(s1.Updates-s0.Updates)
		if msgs > 0 {
			r.CPUPerFrameUs = w.CPUSeconds * 1e6 / msgs
		}
		if updates > 0 {
			r.CPUPerUpdateUs = w.CPUSeconds * 1e6 / updates
		}
		r.UpdatesPerConnPerSec = updates / n / w.Seconds
		r.PingsPerConnPerSec = float64(s1.Pings-s0.Pings) / n / w.Seconds
		r.FramesPerConnPerSec = float64(s1.Frames-s0.Frames) / n / w.Seconds
		r.ServerCores = w.CPUSeconds / w.Seconds
		r.Dropped = s1.Dropped
		return nil
	}(); err != nil {
		return r, fmt.Errorf("with the feed: %w", err)
	}

	// At rest: connect and subscribe with the feed silent (the handshake's
	// CPU alone), then a window of pings only.
	if err := func() error {
		srv, err := e.startServer(kind, p.ping, false)
		if err != nil {
			return err
		}
		defer srv.stop()
		p0, err := srv.point()
		if err != nil {
			return err
		}
		f, err := startFleet(e.self, srv.ws, srv.proto, p.Conns, 4, true)
		if err != nil {
			return err
		}
		defer f.stop()
		took, err := f.waitReady(p.Conns, true, readyWithin)
		if err != nil {
			return fmt.Errorf("subscribing %d: %w", p.Conns, err)
		}
		c1, err := srv.sampler.cpu()
		if err != nil {
			return err
		}
		r.RestConnectSeconds = took.Seconds()
		r.CPUPerHandshakeUs = (c1 - p0.cpu).Seconds() * 1e6 / n
		time.Sleep(settle)
		s0, err := f.stats()
		if err != nil {
			return err
		}
		w, err := srv.sampler.window(p.steady, p.sample, p.sample)
		if err != nil {
			return err
		}
		s1, err := f.stats()
		if err != nil {
			return err
		}
		r.Rest = w
		r.RestRSSPerConnBytes = (w.RSS.Mean - p0.rss) / n
		r.RestGoroutinesPeakPerConn = (w.GoroutinesPeak - p0.goroutines) / n
		r.RestPingsPerConnPerSec = float64(s1.Pings-s0.Pings) / n / w.Seconds
		r.RestDropped = s1.Dropped
		return nil
	}(); err != nil {
		return r, fmt.Errorf("at rest: %w", err)
	}

	// Connecting many: a fresh server (the feed running), every client
	// dialling as fast as its process lets it.
	if p.Connect > 0 {
		took, err := e.connectMany(kind, "")
		if err != nil {
			r.ConnectManyError = err.Error() // this figure alone: the run's others stand
		} else {
			r.ConnectManySeconds = took.Seconds()
		}
	}
	return r, nil
}

// connectMany is the time to connect and subscribe p.Connect clients to a
// fresh server of the kind (the feed running), every client dialling as
// fast as its process lets it. With profile set, a wsready or lean
// server writes its CPU profile there (its life: start, connect, stop).
func (e *env) connectMany(kind, profile string) (time.Duration, error) {
	p := e.p
	var extra []string
	if profile != "" {
		extra = []string{"-cpuprofile", profile}
	}
	srv, err := e.startServer(kind, p.ping, true, extra...)
	if err != nil {
		return 0, err
	}
	defer srv.stop()
	time.Sleep(serverSettle)
	f, err := startFleet(e.self, srv.ws, srv.proto, p.Connect, 8, true)
	if err != nil {
		return 0, err
	}
	took, err := f.waitReady(p.Connect, true, manyWithin)
	f.stop()
	if err != nil {
		return 0, fmt.Errorf("connecting %d: %w", p.Connect, err)
	}
	return took, nil
}

// measureIdle is the idle row: the wsready binary's serve command at
// production heartbeats (-ping 25s), no feed (-feed-leader=false), its
// handshake ceilings raised; clients connect and stay, subscribed to
// nothing (there is no feed to subscribe to); one window sampled.
func (e *env) measureIdle(trial int) (IdleRun, error) {
	p := e.p
	lim := strconv.Itoa(p.Idle + 100)
	args := []string{"-ping", p.idlePing.String(), "-feed-leader=false", "-max-conns", lim, "-max-conns-per-ip", lim,
		"-admit-rate", "1000000", "-admit-burst", "1000000", "-tenant-rate", "1000000", "-tenant-burst", "1000000"}
	r := IdleRun{Trial: trial, Conns: p.Idle, PingSeconds: p.idlePing.Seconds(), Command: "wsready serve " + strings.Join(args, " ")}
	c, err := startServe(e.wsreadyBin, args...)
	if err != nil {
		return r, err
	}
	defer c.stop()
	srv := &liveServer{child: c, base: "http://" + c.addr, ws: "ws://" + c.addr + "/ws", proto: protoWsready}
	srv.sampler = sampler{pid: c.pid(), goroutines: metricsGoroutines(srv.base)}
	p0, err := srv.point()
	if err != nil {
		return r, err
	}
	r.BaseRSSBytes = p0.rss
	f, err := startFleet(e.self, srv.ws, srv.proto, p.Idle, 12, false)
	if err != nil {
		return r, err
	}
	defer f.stop()
	took, err := f.waitReady(p.Idle, false, manyWithin)
	if err != nil {
		return r, fmt.Errorf("connecting %d: %w", p.Idle, err)
	}
	r.ConnectSeconds = took.Seconds()
	time.Sleep(settle)
	w, err := srv.sampler.window(p.idleWindow, p.sample, idleGoroutine)
	if err != nil {
		return r, err
	}
	s1, err := f.stats()
	if err != nil {
		return r, err
	}
	r.Window = w
	r.CPUCores = w.CPUSeconds / w.Seconds
	r.Dropped = s1.Dropped
	r.PingsPerConn = float64(s1.Pings) / float64(p.Idle)
	return r, nil
}
