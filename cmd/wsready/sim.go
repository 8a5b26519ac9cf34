//go:build !js

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/sim"
)

func runSim(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	cfg := sim.DefaultConfig()
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "fleet size (1..10000000)")
	fs.IntVar(&cfg.Capacity, "capacity", cfg.Capacity, "handshakes accepted per one-second window after the downtime (0: none)")
	fs.DurationVar(&cfg.Downtime, "downtime", cfg.Downtime, "the server refuses everything before this (0: no downtime)")
	fs.DurationVar(&cfg.Horizon, "horizon", cfg.Horizon, "simulated time (1ms..24h)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	pp := sim.DefaultPolicyParams()
	fs.DurationVar(&pp.Fixed, "fixed", pp.Fixed, "fixed policy: the delay every time (> 0)")
	fs.DurationVar(&pp.Base, "base", pp.Base, "exponential and jitter policies: base delay (> 0)")
	fs.DurationVar(&pp.Cap, "cap", pp.Cap, "exponential and jitter policies: cap (>= base)")
	fs.DurationVar(&pp.Step, "step", pp.Step, "linear policy: first delay uniform in [0, step), then +step per attempt (> 0)")
	fs.DurationVar(&pp.LinearCap, "linear-cap", pp.LinearCap, "linear policy: longest delay (0: no cap)")
	retryAfter := fs.Duration("retry-after", 5*time.Second, "stage 6 table: the retry-after the server's refusals carry (> 0)")
	budget := fs.Int("budget", 5, "stage 6 table: the clients' attempt budget (> 0)")
	first := fs.String("first", "policy", "first attempt: policy (delay(0) after the disconnect) or zero (everyone at t=0)")
	policy := fs.String("policy", "all", "fixed, exponential, linear, jitter, a comma-separated list of them (in that order in the table), or all")
	tables := fs.String("tables", "main,session,flap,writeups", "which tables to run: main (the policies), session (the stage 6 rows), flap (the Flapping table), writeups (the write-ups' figures, docs/sim.md), comma-separated; writeups alone runs only it")
	format := fs.String("format", "table", "table (markdown) or json")
	svgDir := fs.String("svg", "", "write attempts.svg and connected.svg charts into this directory")
	out := fs.String("out", "", "also write the markdown report to this file")
	jsonOut := fs.String("json", "", "also write the JSON results to this file")
	flap := sim.DefaultFlapConfig()
	fs.IntVar(&flap.Clients, "flap-clients", flap.Clients, "fleet size for the Flapping table (1..1000000)")
	fs.DurationVar(&flap.Horizon, "flap-horizon", flap.Horizon, "simulated time for the Flapping table (1ms..24h)")
	fs.DurationVar(&flap.CloseAfter, "flap-close", flap.CloseAfter, "Flapping: the server closes each connection this long after accepting it (>= 0)")
	fs.DurationVar(&flap.Cooldown, "cooldown", flap.Cooldown, "the reset rule's READY cooldown in the Flapping table (> 0)")
	wu := sim.DefaultWriteupConfig()
	fs.IntVar(&wu.PeakClients, "peak-clients", wu.PeakClients, "writeups: clients for the attempt-N peaks")
	fs.DurationVar(&wu.PeakBase, "peak-base", wu.PeakBase, "writeups: exponential base for the attempt-N peaks (> 0)")
	fs.IntVar(&wu.PeakAttempt, "peak-attempt", wu.PeakAttempt, "writeups: the attempt whose peak is counted (1 is the first retry; 1..20)")
	fs.Float64Var(&wu.Spread, "spread", wu.Spread, "writeups: the proportional jitter, a delay times [1-spread, 1+spread) (0..1, exclusive)")
	fs.IntVar(&wu.LockClients, "lock-clients", wu.LockClients, "writeups: clients in the lockstep scenario")
	fs.IntVar(&wu.LockCapacity, "lock-capacity", wu.LockCapacity, "writeups: handshakes a second the lockstep scenario's server takes (>= 0)")
	fs.IntVar(&wu.Conns, "conns", wu.Conns, "writeups: connections for the heartbeat load")
	fs.DurationVar(&wu.PingInterval, "ping", wu.PingInterval, "writeups: the server's ping interval (server.Options.PingInterval's default)")
	fs.DurationVar(&wu.SweepInterval, "sweep", wu.SweepInterval, "writeups: the liveness sweep's interval (server.Options.SweepInterval's default)")
	fs.DurationVar(&wu.FrameCPU, "frame-cpu", wu.FrameCPU, "writeups: server CPU per delivered frame (docs/measured/bench.md)")
	fs.IntVar(&wu.IdleConns, "idle-conns", wu.IdleConns, "writeups: the connections of the measured idle row (docs/measured/bench.md)")
	fs.Float64Var(&wu.IdleCores, "idle-cores", wu.IdleCores, "writeups: the server CPU measured for them, cores")
	fs.IntVar(&wu.DrainConns, "drain-conns", wu.DrainConns, "writeups: connections a drain closes")
	fs.DurationVar(&wu.DrainWindow, "drain-window", wu.DrainWindow, "writeups: the drain window (server.Options.DrainWindow's default)")
	fs.Float64Var(&wu.AdmitRate, "admit-rate", wu.AdmitRate, "writeups: the admission rate, handshakes a second (server.Options.AdmitRate's default); slots at 90% of it")
	fs.IntVar(&wu.PollClients, "poll-clients", wu.PollClients, "writeups: clients polling or pushed to")
	fs.IntVar(&wu.PollBytes, "poll-bytes", wu.PollBytes, "writeups: bytes of one poll, request and response together")
	fs.DurationVar(&wu.PollFast, "poll-fast", wu.PollFast, "writeups: the faster poll interval")
	fs.DurationVar(&wu.PollSlow, "poll-slow", wu.PollSlow, "writeups: the slower poll interval")
	fs.DurationVar(&wu.PushInterval, "push-every", wu.PushInterval, "writeups: time between two pushed updates")
	fs.IntVar(&wu.PushBytes, "push-bytes", wu.PushBytes, "writeups: bytes of a pushed update in the write-up's model")
	stormIn := fs.String("storm", "", "writeups: also read this wsready storm -compare -json report (make storm's docs/measured/storm.json) and put its field figures in the table")
	tokens := fs.Bool("tokens", false, "run only the token table: -clients clients with -token-life tokens for -horizon, first issued together and over one life, in-band refresh on and off")
	tokenLife := fs.Duration("token-life", 10*time.Minute, "with -tokens: the tokens' life (1s..24h)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	wu.Seed = cfg.Seed
	if fs.NArg() > 0 {
		return fmt.Errorf("sim: unexpected argument %q", fs.Arg(0))
	}
	if *tokens {
		return simTokens(cfg.Clients, *tokenLife, cfg.Horizon, cfg.Seed, *jsonOut, stdout)
	}
	switch *first {
	case "policy":
	case "zero":
		cfg.FirstAttemptZero = true
	default:
		return fmt.Errorf("sim: -first must be policy or zero, not %q", *first)
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("sim: -format must be table or json, not %q", *format)
	}
	if err := pp.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if *retryAfter <= 0 || *budget < 1 {
		return fmt.Errorf("sim: -retry-after must be positive and -budget at least 1")
	}
	policies, err := pickPolicies(*policy, pp)
	if err != nil {
		return err
	}
	flap.Seed = cfg.Seed
	want := map[string]bool{}
	for _, t := range strings.Split(*tables, ",") {
		switch t = strings.TrimSpace(t); t {
		case "main", "session", "flap", "writeups":
			want[t] = true
		default:
			return fmt.Errorf("sim: -tables takes main, session, flap and writeups, not %q", t)
		}
	}
	var writeups *sim.WriteupResult
	if want["writeups"] {
		r, err := sim.RunWriteups(wu)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		writeups = &r
		if *stormIn != "" {
			f, err := os.Open(*stormIn)
			if err != nil {
				return fmt.Errorf("sim: failed to open the storm report: %w", err)
			}
			r.Storm, err = sim.ReadStorm(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("sim: %s: %w", *stormIn, err)
			}
		}
		if len(want) == 1 {
			return writeSimReport(stdout, args, *format, *out, *jsonOut, cfg.Seed, sim.WriteupTable(r), map[string]any{"seed": cfg.Seed, "writeups": r})
		}
	} else if *stormIn != "" {
		return fmt.Errorf("sim: -storm needs the writeups table")
	}
	if !want["main"] {
		return fmt.Errorf("sim: -tables must include main (or be writeups alone)")
	}

	sessionRows := []struct {
		label  string
		s6     bool
		ra     time.Duration
		budget int
	}{
		{"stage 5 (retry-after ignored)", false, *retryAfter, 0},
		{"stage 6, refusals without retry-after", true, 0, 0},
		{fmt.Sprintf("stage 6, refusals with retry-after %v", *retryAfter), true, *retryAfter, 0},
		{fmt.Sprintf("stage 6, budget %d", *budget), true, 0, *budget},
		{fmt.Sprintf("stage 6, retry-after %v and budget %d", *retryAfter, *budget), true, *retryAfter, *budget},
		{"stage 5, the server hands out reconnect slots", false, -1, 0},
		{"stage 6, the server hands out reconnect slots", true, -1, 0},
	}
	if !want["session"] {
		sessionRows = nil
	}
	flapRuns := 0
	if want["flap"] {
		flapRuns = 2 * len(policies) // each policy under both reset rules
	}
	baseRuns := int64(len(policies) + len(sessionRows))
	// The JSON: three per-second figures for every base scenario run, each
	// number held about three times over (encoded, indented, written).
	jsonBytes := baseRuns * 3 * int64((cfg.Horizon+time.Second-1)/time.Second) * 64
	defer collectLess(baseRuns*sim.RunBytes(cfg.Clients, cfg.Horizon) + int64(flapRuns)*sim.RunBytes(flap.Clients, flap.Horizon) + jsonBytes)()

	start := time.Now()
	// Each policy's run is independent (its own seeded source), so they run
	// side by side on the cores and come out in the same order, with the
	// same figures, as one after another.
	results, err := parallel(policies, func(p sim.NamedPolicy) (sim.Result, error) { return sim.Run(cfg, p) })
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	baseTook := time.Since(start)
	jitter, _ := sim.PolicyByName("jitter", pp)
	var session []sim.SessionRow
	for _, v := range sessionRows {
		c := cfg
		c.Session, c.RetryAfter, c.Budget = v.s6, v.ra, v.budget
		if v.ra < 0 {
			c.RetryAfter, c.Slots = 0, true
		}
		r, err := sim.Run(c, jitter)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		session = append(session, sim.SessionRow{Label: v.label, Result: r})
	}
	var flaps []sim.FlapResult
	if want["flap"] {
		if flaps, err = parallel(policies, func(p sim.NamedPolicy) (sim.FlapResult, error) { return sim.RunFlap(flap, p) }); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	took := time.Since(start)

	cmdline := "wsready sim " + strings.Join(args, " ")
	var md strings.Builder
	fmt.Fprintf(&md, "# Fleet simulation\n\nMade by `%s` (seed %d). The simulator runs the client core's own policy values and reset rule (package client), not copies.\n\n", strings.TrimSpace(cmdline), cfg.Seed)
	md.WriteString(sim.Table(cfg, results))
	if want["session"] {
		md.WriteString("\n")
		md.WriteString(sim.SessionTable(cfg, session))
	}
	if want["flap"] {
		md.WriteString("\n")
		md.WriteString(sim.FlapTable(flap, flaps))
	}
	if writeups != nil {
		md.WriteString("\n")
		md.WriteString(sim.WriteupTable(*writeups))
	}
	fmt.Fprintf(&md, "\nSimulated in %v (base scenario %v) on this machine.\n", took.Round(time.Millisecond), baseTook.Round(time.Millisecond))

	if *svgDir != "" {
		attempts, connected := sim.Charts(cfg, results)
		if err := os.MkdirAll(*svgDir, 0o755); err != nil {
			return err
		}
		for name, body := range map[string]string{"attempts.svg": attempts, "connected.svg": connected} {
			if err := os.WriteFile(filepath.Join(*svgDir, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
		md.WriteString("\n![attempts per second](attempts.svg)\n\n![connected clients](connected.svg)\n")
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(md.String()), 0o644); err != nil {
			return err
		}
	}
	// The JSON (tens of megabytes for a day's horizon) only when it is
	// printed or written.
	if *format == "json" || *jsonOut != "" {
		payload := map[string]any{"seed": cfg.Seed, "config": cfg, "policyParams": pp, "results": results, "session": session, "flap": map[string]any{"config": flap, "results": flaps}, "writeups": writeups,
			"elapsedMs": took.Milliseconds()}
		js, err := json.MarshalIndent(payload, "", "  ")
		if err != nil {
			return err
		}
		js = append(js, '\n')
		if *jsonOut != "" {
			if err := os.WriteFile(*jsonOut, js, 0o644); err != nil {
				return err
			}
		}
		if *format == "json" {
			_, err = stdout.Write(js)
			return err
		}
	}
	fmt.Fprintf(stdout, "seed %d\n\n%s", cfg.Seed, md.String())
	return nil
}

// writeSimReport writes the writeups table alone: markdown to out, JSON to
// jsonOut, and one of them to stdout by format.
func writeSimReport(stdout io.Writer, args []string, format, out, jsonOut string, seed uint64, table string, payload map[string]any) error {
	md := fmt.Sprintf("# Fleet simulation: the write-ups' figures\n\nMade by `%s` (seed %d).\n\n%s", strings.TrimSpace("wsready sim "+strings.Join(args, " ")), seed, table)
	if out != "" {
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("sim: failed to write the report: %w", err)
		}
	}
	if format == "json" || jsonOut != "" {
		js, err := json.MarshalIndent(payload, "", "  ")
		if err != nil {
			return fmt.Errorf("sim: failed to encode the JSON: %w", err)
		}
		js = append(js, '\n')
		if jsonOut != "" {
			if err := os.WriteFile(jsonOut, js, 0o644); err != nil {
				return fmt.Errorf("sim: failed to write the JSON: %w", err)
			}
		}
		if format == "json" {
			_, err = stdout.Write(js)
			return err
		}
	}
	_, err := fmt.Fprintf(stdout, "seed %d\n\n%s", seed, md)
	return err
}

// gcOffBelow is the most a simulation may allocate, all its runs and its
// JSON together, for the command to run it with the garbage collector off.
const gcOffBelow = 128 << 20

// collectLess turns the garbage collector off for a simulation that
// allocates at most gcOffBelow in all (need, an upper bound: a fleet, a
// calendar and the figures per run, and the JSON), and returns what puts
// the collector back. What the simulator allocates is its fleets,
// calendars and figures, live until the report is printed: collecting
// them is wasted work. In a whole process of the Python model's scenario
// (100,000 clients, three policies, 20 minutes) it was about a tenth of
// the CPU, mostly spent stopping the simulating goroutines to scan them.
// A memory limit of twice gcOffBelow fences an estimate that is wrong.
// A larger run keeps the collector as it is, and GOGC or GOMEMLIMIT in the
// environment are the user's word: then nothing changes.
func collectLess(need int64) (restore func()) {
	if need > gcOffBelow || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(limit, 2*gcOffBelow))
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// pickPolicies reads -policy: all, one name, or a comma-separated list
// of names, each at most once; the table keeps the order of Policies.
func pickPolicies(arg string, pp sim.PolicyParams) ([]sim.NamedPolicy, error) {
	all := sim.Policies(pp)
	if arg == "all" {
		return all, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(arg, ",") {
		name = strings.TrimSpace(name)
		if _, ok := sim.PolicyByName(name, pp); !ok {
			return nil, fmt.Errorf("sim: unknown policy %q (fixed, exponential, linear, jitter, a comma-separated list of them, or all)", name)
		}
		if want[name] {
			return nil, fmt.Errorf("sim: -policy names %q twice", name)
		}
		want[name] = true
	}
	var out []sim.NamedPolicy
	for _, p := range all {
		if want[p.Name] {
			out = append(out, p)
		}
	}
	return out, nil
}

// parallel runs f for each item on as many goroutines as there are items,
// at most GOMAXPROCS at once, and returns the results in the items' order.
func parallel[T, R any](items []T, f func(T) (R, error)) ([]R, error) {
	out := make([]R, len(items))
	errs := make([]error, len(items))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = f(it)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// simTokens is wsready sim -tokens: what token expiries cost a fleet, with
// in-band refresh and without, for a fleet issued its tokens together and
// one issued them over a whole life.
func simTokens(clients int, life, horizon time.Duration, seed uint64, jsonOut string, stdout io.Writer) error {
	var rows []sim.TokenResult
	for _, spread := range []time.Duration{0, life} {
		for _, on := range []bool{false, true} {
			r, err := sim.RunTokens(sim.TokenConfig{Clients: clients, Life: life, Spread: spread, Horizon: horizon, Seed: seed}, on)
			if err != nil {
				return fmt.Errorf("sim: %w", err)
			}
			rows = append(rows, r)
		}
	}
	fmt.Fprint(stdout, sim.TokenTable(rows))
	return writeJSON(jsonOut, rows)
}
