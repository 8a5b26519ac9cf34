//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// simArgs is the Python model's scenario (fleet_model.py: 100,000 clients
// lose their connection at t=0; at most 5,000 handshakes accepted in each
// one-second window, no downtime; each client's first attempt after the
// policy's first delay; base 1 s, cap 60 s, fixed 1 s; seed 7; run to
// completion, which 20 minutes of simulated time covers: exponential
// without jitter ends at 903 s) for `wsready sim`, with the model's three
// policies and no other: -policy all would add random-start linear, work
// the model does not do (about a quarter more).
var simArgs = []string{"sim", "-tables", "main", "-policy", "fixed,exponential,jitter", "-clients", "100000", "-capacity", "5000",
	"-downtime", "0s", "-horizon", "20m", "-seed", "7", "-fixed", "1s", "-base", "1s", "-cap", "60s",
	"-first", "policy", "-format", "json"}

// simTimeout bounds each process of the comparison.
const simTimeout = 10 * time.Minute

// ProcRun is one whole-process run: wall-clock time from start to exit and
// the CPU time (user + system) the process used.
type ProcRun struct {
	WallSeconds float64 `json:"wallSeconds"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	// Load is the machine's load average (1, 5 and 15 minutes) as the
	// process started: the machine may be shared.
	Load string `json:"load,omitempty"`
	// InProcessSeconds is the simulator's own timing of its work (its
	// elapsedMs), without the process around it; 0 for the model.
	InProcessSeconds float64 `json:"inProcessSeconds,omitempty"`
}

// PolicyFigures are one policy's outcome, as the model prints it.
type PolicyFigures struct {
	Rejected          int64   `json:"rejected"`
	AttemptsPerClient float64 `json:"attemptsPerClient"`
	T99Seconds        float64 `json:"t99Seconds"`
	PeakPerSecond     int64   `json:"peakPerSecond"`
}

// PolicyComparison puts the model's and the simulator's figures for one
// policy side by side.
type PolicyComparison struct {
	Policy string        `json:"policy"` // the model's name
	Model  PolicyFigures `json:"model"`
	Sim    PolicyFigures `json:"sim"`
	Equal  bool          `json:"equal"`
}

// SimFigures compares the simulator with the Python model, both as whole
// processes.
type SimFigures struct {
	Scenario   string    `json:"scenario"`
	SimCommand string    `json:"simCommand"`
	SimRuns    []ProcRun `json:"simRuns"`
	// StartRuns time `wsready version`: the binary's start and exit alone,
	// part of every simulator run's wall time.
	StartRuns   []ProcRun `json:"startRuns"`
	ModelPath   string    `json:"modelPath,omitempty"`
	ModelRuns   []ProcRun `json:"modelRuns,omitempty"`
	NotMeasured string    `json:"notMeasured,omitempty"` // why the model did not run
	// SpeedupRuns is, run by run, the model's wall time over the
	// simulator's; Speedup their median; SpeedupCPU the same of the CPU
	// times' medians.
	SpeedupRuns []float64          `json:"speedupRuns,omitempty"`
	Speedup     float64            `json:"speedup,omitempty"`
	SpeedupCPU  float64            `json:"speedupCpu,omitempty"`
	Goal        float64            `json:"goal"`
	Verdict     string             `json:"verdict"`
	Figures     []PolicyComparison `json:"figures,omitempty"`
	Error       string             `json:"error,omitempty"` // the comparison failed: the runs before it are kept
}

const simScenario = "100,000 clients lose their connection at t=0; at most 5,000 handshakes accepted per one-second window (no downtime); first attempt after the policy's first delay; fixed 1 s, exponential without jitter and full jitter from base 1 s, cap 60 s; seed 7; to completion"

// modelPolicies maps the model's strategy names to the simulator's.
var modelPolicies = []struct{ model, sim string }{
	{"fixed_1s", "fixed"}, {"exp_no_jitter", "exponential"}, {"exp_full_jitter", "jitter"},
}

// measureSim times `wsready sim` (the built binary) and, when the model is
// there, `python3 MODEL`, trials times each, taking turns.
func measureSim(wsreadyBin, model string, trials int) (SimFigures, error) {
	fig := SimFigures{Scenario: simScenario, SimCommand: "wsready " + strings.Join(simArgs, " "), ModelPath: model, Goal: 50}
	py, why := findModel(model)
	fig.NotMeasured = why
	var simOut []byte
	for range trials {
		if why == "" {
			run, out, err := timeProcess(py, model)
			if err != nil {
				return fig, fmt.Errorf("failed to run the Python model: %w", err)
			}
			fig.ModelRuns = append(fig.ModelRuns, run)
			if fig.Figures == nil {
				if fig.Figures, err = parseModel(out); err != nil {
					return fig, err
				}
			}
		}
		run, out, err := timeProcess(wsreadyBin, simArgs...)
		if err != nil {
			return fig, fmt.Errorf("failed to run the simulator: %w", err)
		}
		var res simResult
		if err := json.Unmarshal(out, &res); err != nil {
			return fig, fmt.Errorf("failed to decode the simulator's output: %w", err)
		}
		run.InProcessSeconds = float64(res.ElapsedMs) / 1e3
		fig.SimRuns = append(fig.SimRuns, run)
		simOut = out
		start, _, err := timeProcess(wsreadyBin, "version")
		if err != nil {
			return fig, fmt.Errorf("failed to run wsready version: %w", err)
		}
		fig.StartRuns = append(fig.StartRuns, start)
	}
	if why != "" {
		fig.Verdict = "not measured: " + why
		return fig, nil
	}
	var res simResult
	_ = json.Unmarshal(simOut, &res)
	for i := range fig.Figures {
		p := &fig.Figures[i]
		for _, r := range res.Results {
			if r.Policy == simName(p.Policy) {
				p.Sim = PolicyFigures{Rejected: r.Rejected, AttemptsPerClient: r.AttemptsPerClient, PeakPerSecond: r.PeakOverall}
				if r.T99Ms != nil {
					p.Sim.T99Seconds = float64(*r.T99Ms) / 1e3
				}
			}
		}
		// The model prints attempts per client to 2 places and t99 to 1.
		p.Equal = p.Model.Rejected == p.Sim.Rejected && p.Model.PeakPerSecond == p.Sim.PeakPerSecond &&
			fmt.Sprintf("%.2f", p.Model.AttemptsPerClient) == fmt.Sprintf("%.2f", p.Sim.AttemptsPerClient) &&
			fmt.Sprintf("%.1f", p.Model.T99Seconds) == fmt.Sprintf("%.1f", p.Sim.T99Seconds)
	}
	var mw, sw, mc, sc []float64
	for i := range fig.SimRuns {
		mw, sw = append(mw, fig.ModelRuns[i].WallSeconds), append(sw, fig.SimRuns[i].WallSeconds)
		mc, sc = append(mc, fig.ModelRuns[i].CPUSeconds), append(sc, fig.SimRuns[i].CPUSeconds)
		fig.SpeedupRuns = append(fig.SpeedupRuns, round2(mw[i]/sw[i]))
	}
	fig.Speedup = median(fig.SpeedupRuns)
	if sc := median(sc); sc > 0 {
		fig.SpeedupCPU = round2(median(mc) / sc)
	}
	fig.Verdict = verdictAtLeast(fig.Speedup, fig.Goal)
	return fig, nil
}

func simName(model string) string {
	for _, p := range modelPolicies {
		if p.model == model {
			return p.sim
		}
	}
	return ""
}

// findModel returns python3's path, or why the model cannot run.
func findModel(model string) (python, why string) {
	if model == "" {
		return "", "no -model given (make bench MODEL=path/to/fleet_model.py)"
	}
	if st, err := os.Stat(model); err != nil || st.IsDir() {
		return "", fmt.Sprintf("the Python model is missing: no file at %s (make bench MODEL=path/to/fleet_model.py)", model)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", "python3 is not installed"
	}
	return py, ""
}

// simResult is the part of `wsready sim -format json` the comparison reads.
type simResult struct {
	ElapsedMs int64 `json:"elapsedMs"`
	Results   []struct {
		Policy            string  `json:"policy"`
		Rejected          int64   `json:"rejected"`
		AttemptsPerClient float64 `json:"attemptsPerClient"`
		PeakOverall       int64   `json:"peakOverall"`
		T99Ms             *int64  `json:"t99Ms"`
	} `json:"results"`
}

// timeProcess runs a command to its end and times it.
func timeProcess(name string, args ...string) (ProcRun, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), simTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	load := loadAverage()
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return ProcRun{}, nil, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(errb.String()))
	}
	ps := cmd.ProcessState
	return ProcRun{WallSeconds: wall.Seconds(), CPUSeconds: (ps.UserTime() + ps.SystemTime()).Seconds(), Load: load}, out.Bytes(), nil
}

var modelLine = regexp.MustCompile(`^(\S+)\s+rejected handshakes=\s*(\d+)\s+attempts per client=([\d.]+)\s+99% connected at t=([\d.]+)s\s+peak attempts in one second=(\d+)\s*$`)

// parseModel reads the model's printed figures, one line per strategy.
func parseModel(out []byte) ([]PolicyComparison, error) {
	var got []PolicyComparison
	for _, l := range strings.Split(string(out), "\n") {
		m := modelLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		rej, _ := strconv.ParseInt(m[2], 10, 64)
		apc, _ := strconv.ParseFloat(m[3], 64)
		t99, _ := strconv.ParseFloat(m[4], 64)
		peak, _ := strconv.ParseInt(m[5], 10, 64)
		got = append(got, PolicyComparison{Policy: m[1], Model: PolicyFigures{Rejected: rej, AttemptsPerClient: apc, T99Seconds: t99, PeakPerSecond: peak}})
	}
	for _, p := range modelPolicies {
		found := false
		for _, g := range got {
			found = found || g.Policy == p.model
		}
		if !found {
			return nil, fmt.Errorf("failed to read the model's output: no line for %s (is it fleet_model.py?)", p.model)
		}
	}
	return got, nil
}

// runSimOnly is `wsready-bench sim`: the simulator beside the Python model
// and nothing else (a minute, not the twenty of run), printed as the
// section run writes into bench.md.
func runSimOnly(args []string) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	trials := fs.Int("trials", 3, "runs of the simulator and of the model, taking turns (1..9)")
	model := fs.String("model", "", "the Python fleet model (fleet_model.py); empty or missing: the model is not measured")
	jsonOut := fs.String("json", "", "also write the figures, every run, as JSON to this file (empty: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("sim: unexpected argument %q", fs.Arg(0))
	}
	if *trials < 1 || *trials > 9 {
		return usagef("sim: -trials must be 1..9, not %d", *trials)
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "wsready-bench-sim-")
	if err != nil {
		return fmt.Errorf("failed to make a build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "wsready")
	if err := goBuild(root, bin, "./cmd/wsready"); err != nil {
		return err
	}
	loadStart := loadAverage()
	fig, err := measureSim(bin, *model, *trials)
	if err != nil {
		fig.Error = err.Error()
	}
	fmt.Printf("Load average (1, 5, 15 min): %s at the start, %s at the end; %d CPUs.\n\n%s", loadStart, loadAverage(), runtime.NumCPU(), fig.markdown())
	if *jsonOut != "" {
		js, jerr := json.MarshalIndent(fig, "", "  ")
		if jerr != nil {
			return fmt.Errorf("failed to encode the figures: %w", jerr)
		}
		if werr := os.WriteFile(*jsonOut, append(js, '\n'), 0o644); werr != nil {
			return fmt.Errorf("failed to write -json: %w", werr)
		}
	}
	return err
}
