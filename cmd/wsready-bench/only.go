//go:build !js

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The -only rows: one row of the benchmark alone, for checking a change to
// what that row measures without the other twenty minutes. Its runs go to
// stdout and to bench-only.json in -out; bench.md and bench.json, the
// whole benchmark's report, are left as they are.

// OnlyReport is what -only writes: every run, with the load average
// before and after it (the machine is shared), and the medians.
type OnlyReport struct {
	Date    string     `json:"date"`
	Command string     `json:"command"`
	Only    string     `json:"only"`
	Params  params     `json:"params"`
	Runs    []OnlyRun  `json:"runs"`
	Idle    *OnlyIdle  `json:"idle,omitempty"`
	Connect *OnlyRatio `json:"connect,omitempty"`
}

// OnlyRun is one trial: the idle run, or each server's time to connect.
type OnlyRun struct {
	Trial          int                `json:"trial"`
	LoadStart      string             `json:"loadStart"`
	LoadEnd        string             `json:"loadEnd"`
	Idle           *IdleRun           `json:"idle,omitempty"`
	ConnectSeconds map[string]float64 `json:"connectSeconds,omitempty"` // by server; NaN-free: a failed server is left out
	Ratio          float64            `json:"ratio,omitempty"`          // wsready's time over lean's in this trial
	Errors         []string           `json:"errors,omitempty"`
}

// OnlyIdle is the idle row's medians.
type OnlyIdle struct {
	MedianCPUCores     float64 `json:"medianCpuCores"`
	MedianPeakRSSBytes float64 `json:"medianPeakRssBytes"`
}

// OnlyRatio is the connect row's median ratio (wsready over lean).
type OnlyRatio struct {
	MedianRatio float64 `json:"medianRatio"`
}

// runOnly runs the row named by only (idle or connect) p.Trials times.
// With profiles set, the wsready server child of each connect run writes
// its CPU profile there (connect-N.prof: its life is the connect).
func runOnly(e *env, args []string, only, out, profiles string) error {
	p := e.p
	rep := OnlyReport{Date: time.Now().UTC().Format(time.RFC3339), Command: "go run ./cmd/wsready-bench run " + strings.Join(args, " "), Only: only, Params: p}
	var failures []error
	var cores, rss, ratios []float64
	for tr := range p.Trials {
		run := OnlyRun{Trial: tr + 1, LoadStart: loadAverage()}
		switch only {
		case "idle":
			logf("trial %d/%d: wsready serve, %d idle connections at %v pings, %v window (load %s)", tr+1, p.Trials, p.Idle, p.idlePing, p.idleWindow, run.LoadStart)
			r, err := e.measureIdle(tr + 1)
			if err != nil {
				err = fmt.Errorf("failed to measure the idle row (trial %d): %w", tr+1, err)
				failures = append(failures, err)
				run.Errors = append(run.Errors, err.Error())
				r.Error = err.Error()
			} else {
				cores, rss = append(cores, r.CPUCores), append(rss, r.Window.RSS.Peak)
			}
			run.Idle = &r
			logf("trial %d: %.3f cores, peak RSS %.0f MB, %d dropped", tr+1, r.CPUCores, r.Window.RSS.Peak/1e6, r.Dropped)
		case "connect":
			run.ConnectSeconds = map[string]float64{}
			for i := range p.Servers {
				kind := p.Servers[(i+tr)%len(p.Servers)]
				prof := ""
				if profiles != "" && kind == "wsready" {
					prof = filepath.Join(profiles, fmt.Sprintf("connect-%d.prof", tr+1))
				}
				logf("trial %d/%d: %s, connecting %d (load %s)", tr+1, p.Trials, kind, p.Connect, loadAverage())
				took, err := e.connectMany(kind, prof)
				if err != nil {
					err = fmt.Errorf("failed to connect %d to %s (trial %d): %w", p.Connect, kind, tr+1, err)
					failures = append(failures, err)
					run.Errors = append(run.Errors, err.Error())
					continue
				}
				run.ConnectSeconds[kind] = took.Seconds()
				logf("trial %d: %s connected %d in %.2f s", tr+1, kind, p.Connect, took.Seconds())
			}
			w, okW := run.ConnectSeconds["wsready"]
			l, okL := run.ConnectSeconds["lean"]
			if okW && okL && l > 0 {
				run.Ratio = w / l
				ratios = append(ratios, run.Ratio)
			}
		}
		run.LoadEnd = loadAverage()
		rep.Runs = append(rep.Runs, run)
	}
	switch only {
	case "idle":
		rep.Idle = &OnlyIdle{MedianCPUCores: finiteOr0(median(cores)), MedianPeakRSSBytes: finiteOr0(median(rss))}
	case "connect":
		rep.Connect = &OnlyRatio{MedianRatio: finiteOr0(median(ratios))}
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to encode the report: %w", err)
	}
	fmt.Println(string(js))
	if err := os.WriteFile(filepath.Join(out, "bench-only.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("failed to write bench-only.json: %w", err)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d measurements failed (the report shows which): %w", len(failures), errors.Join(failures...))
	}
	return nil
}

// finiteOr0 is x, or 0 for the median of no runs (NaN), which JSON cannot hold.
func finiteOr0(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
