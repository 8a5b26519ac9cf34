//go:build !js

package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerdicts(t *testing.T) {
	for _, c := range []struct {
		x, goal, stretch float64
		want             string
	}{
		{0.85, 1.0, 0.9, "met, stretch too"},
		{0.95, 1.0, 0.9, "met"},
		{1.0, 1.0, 0, "met"},
		{1.01, 1.0, 0, "missed"},
		{math.NaN(), 1.0, 0, "not measured"},
		{3, 0, 0, ""},
	} {
		if got := verdictAtMost(c.x, c.goal, c.stretch); got != c.want {
			t.Errorf("verdictAtMost(%v, %v, %v) = %q, want %q", c.x, c.goal, c.stretch, got, c.want)
		}
	}
	if v := verdictAtLeast(48, 50); v != "missed" {
		t.Errorf("48x against >= 50x: %q", v)
	}
	if v := verdictAtLeast(56, 50); v != "met" {
		t.Errorf("56x against >= 50x: %q", v)
	}
}

func testRuns() map[string][]ServerRun {
	mk := func(kind string, rss, goroutines, cpuUpdate float64) ServerRun {
		return ServerRun{Kind: kind, Conns: 10000, RSSPerConnBytes: rss, RestRSSPerConnBytes: rss / 2, GoroutinesPeakPerConn: goroutines,
			CPUPerFrameUs: 20, CPUPerUpdateUs: cpuUpdate, CPUPerHandshakeUs: 200, ConnectManySeconds: 6}
	}
	return map[string][]ServerRun{
		"wsready":    {mk("wsready", 40e3, 1.97, 20), mk("wsready", 44e3, 1.05, 20), mk("wsready", 42e3, 1.9, 20)},
		"lean":       {mk("lean", 40e3, 1, 20), mk("lean", 40e3, 1, 20), mk("lean", 35e3, 1, 20)},
		"centrifuge": {mk("centrifuge", 28e3, 2, 16), mk("centrifuge", 28e3, 2, 25), mk("centrifuge", 28e3, 2, 20)},
	}
}

func findRow(t *testing.T, r *Report, against, key string) Row {
	t.Helper()
	for _, c := range r.Comparisons {
		for _, row := range c.Rows {
			if c.Against == against && row.Key == against+"."+key {
				return row
			}
		}
	}
	t.Fatalf("no row %s.%s", against, key)
	return Row{}
}

func TestFinishJudgesTheMedianOfTheRunByRunRatios(t *testing.T) {
	r := newReport(nil, params{Conns: 10000, Connect: 19000, Trials: 3, Servers: allServers})
	r.finish(testRuns(), map[string]string{"lean.rssPerConn": "the flushers' stacks"})
	row := findRow(t, r, "lean", "rssPerConn")
	var got []float64
	for _, x := range row.Runs {
		got = append(got, x.Ratio)
	}
	// 40/40, 44/40, 42/35: ratios 1.00, 1.10, 1.20, median 1.10 (the
	// ratio of the medians would be 42/40 = 1.05).
	if len(got) != 3 || got[0] != 1 || got[1] != 1.1 || got[2] != 1.2 || row.Median != 1.1 || row.Verdict != "missed" {
		t.Fatalf("row %+v", row)
	}
	if row.Finding != "the flushers' stacks" || row.Goal != 1.0 || row.Stretch != 0.9 {
		t.Fatalf("row %+v", row)
	}
	// The goroutine goal is wsready's own figure: median of 1.97, 1.05, 1.9.
	g := findRow(t, r, "centrifuge", "goroutinesPeakPerConn")
	if !g.Absolute || g.Median != 1.9 || g.Verdict != "missed" || g.Runs[0].Other != 2 {
		t.Fatalf("goroutine row %+v", g)
	}
	// CPU per update against centrifuge: 20/16, 20/25, 20/20.
	c := findRow(t, r, "centrifuge", "cpuPerUpdate")
	if c.Median != 1 || c.Verdict != "met" {
		t.Fatalf("cpu row %+v", c)
	}
}

func TestMarkdownShowsEveryRunAndSaysWhatWasNotMeasured(t *testing.T) {
	r := newReport([]string{"-conns", "10000"}, params{Conns: 10000, Connect: 19000, Trials: 3, Servers: allServers, SampleMs: 100, IdleWindowSecs: 60})
	r.Sim = SimFigures{Scenario: simScenario, SimCommand: "wsready sim", SimRuns: []ProcRun{{WallSeconds: 0.4}},
		NotMeasured: "the Python model is missing: no file at ../shared/anchors/fleet_model.py (make bench MODEL=path/to/fleet_model.py)"}
	r.Idle.Runs = []IdleRun{{Trial: 1, Conns: 19500, PingSeconds: 25, Window: Window{RSS: Series{Mean: 300e6, Peak: 460e6, End: 300e6}}, CPUCores: 0.02}}
	r.finish(testRuns(), nil)
	md := r.markdown()
	for _, want := range []string{
		"1.00 (40.0 KB / 40.0 KB) | 1.10 (44.0 KB / 40.0 KB) | 1.20 (42.0 KB / 35.0 KB) | **1.10** | missed",
		"not measured: the Python model is missing: no file at ../shared/anchors/fleet_model.py",
		"| CPU per delivered frame, SSE / WebSocket on the same wsready server | <= 1.5 | not measured: the row was not run (-sse 0) |",
		"peak **460 MB** (goal <= 450 MB: missed)",
		"**0.020 cores** (goal <= 0.1 core: met)",
		"## wsready / centrifuge",
		"### centrifuge",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(md, "| finding |") {
		t.Error("a findings column with no findings")
	}
}

func TestFindModel(t *testing.T) {
	if _, why := findModel(""); !strings.Contains(why, "no -model given") {
		t.Errorf("no model: %q", why)
	}
	missing := filepath.Join(t.TempDir(), "fleet_model.py")
	if _, why := findModel(missing); !strings.Contains(why, "missing: no file at "+missing) {
		t.Errorf("a missing model: %q", why)
	}
	if _, why := findModel(t.TempDir()); why == "" {
		t.Error("a directory taken for the model")
	}
	if err := os.WriteFile(missing, []byte("print()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if py, why := findModel(missing); why != "" && why != "python3 is not installed" || why == "" && py == "" {
		t.Errorf("a model that is there: %q, %q", py, why)
	}
}

func TestParseModel(t *testing.T) {
	out := `fixed_1s         rejected handshakes= 950000  attempts per client=10.50  99% connected at t=20.0s  peak attempts in one second=100000
exp_no_jitter    rejected handshakes= 950000  attempts per client=10.50  99% connected at t=903.0s  peak attempts in one second=100000
exp_full_jitter  rejected handshakes= 307225  attempts per client=4.07  99% connected at t=38.2s  peak attempts in one second=124571
`
	got, err := parseModel([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1].Policy != "exp_no_jitter" || got[1].Model.T99Seconds != 903 || got[2].Model.Rejected != 307225 || got[2].Model.PeakPerSecond != 124571 || got[0].Model.AttemptsPerClient != 10.5 {
		t.Fatalf("parseModel = %+v", got)
	}
	if _, err := parseModel([]byte("hello\n")); err == nil {
		t.Fatal("output without the model's lines: no error")
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-conns", "0"}, {"-conns", "18001"}, {"-connect", "-1"}, {"-connect", "19501"}, {"-idle", "19501"},
		{"-steady", "0s"}, {"-idle-window", "0s"}, {"-idle-ping", "500ms"}, {"-ping", "500ms"}, {"-ping", "2h"}, {"-sample", "5ms"}, {"-trials", "0"}, {"-trials", "10"},
		{"-servers", "lean"}, {"-servers", "wsready"}, {"-servers", "wsready,nginx"}, {"-out", filepath.Join(t.TempDir(), "none")},
		{"extra"}, {"-nosuchflag"},
		{"-only", "sse"}, {"-only", "idle", "-idle", "0"}, {"-only", "connect", "-connect", "0"},
		{"-profile", t.TempDir()}, {"-only", "idle", "-profile", t.TempDir()}, {"-only", "connect", "-profile", filepath.Join(t.TempDir(), "none")},
	} {
		err := runBench(args)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestLoadFindings(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "findings.json")
	if err := os.WriteFile(p, []byte(`["not", "an object"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	var ue *usageError
	if _, _, err := loadFindings(p); !errors.As(err, &ue) {
		t.Fatalf("a findings file that is not an object: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"lean.rssPerConn": "stacks"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, note, err := loadFindings(p); err != nil || note != "" || m["lean.rssPerConn"] != "stacks" {
		t.Fatalf("loadFindings = %v, %q, %v", m, note, err)
	}
	if m, note, err := loadFindings(filepath.Join(dir, "none.json")); err != nil || m != nil || !strings.Contains(note, "no findings file at") {
		t.Fatalf("a missing file: %v, %q, %v", m, note, err)
	}
	if m, note, err := loadFindings(""); err != nil || m != nil || note != "" {
		t.Fatalf("no path: %v, %q, %v", m, note, err)
	}
}

// A figure the other server did not produce (no updates delivered, say)
// makes a ratio with nothing to compare: the report still encodes, with
// null where the ratio would be.
func TestAReportWithARatioOfNothingEncodes(t *testing.T) {
	runs := testRuns()
	runs["centrifuge"][1].CPUPerUpdateUs = 0
	runs["centrifuge"][0].CPUPerUpdateUs, runs["centrifuge"][2].CPUPerUpdateUs = 0, 0
	r := newReport(nil, params{Conns: 10000, Connect: 19000, Trials: 3, Servers: allServers})
	r.finish(runs, nil)
	row := findRow(t, r, "centrifuge", "cpuPerUpdate")
	if !math.IsNaN(row.Median) || row.Verdict != "not measured" {
		t.Fatalf("row %+v", row)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"key":"centrifuge.cpuPerUpdate"`) || !strings.Contains(string(b), `"ratio":null`) {
		t.Fatalf("no null ratio in %s", b)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if lean := back.Comparisons[0].Rows[0]; lean.Median != 1.1 || lean.Runs[2].Ratio != 1.2 {
		t.Fatalf("decoded row %+v", lean)
	}
}

// A run that failed is shown as failed, left out of the medians, and the
// report still encodes.
func TestAFailedRunIsShownAndLeftOut(t *testing.T) {
	runs := testRuns()
	runs["lean"][2] = ServerRun{Kind: "lean", Trial: 3, Conns: 10000, Error: "subscribing 10000: 3 connections failed and 0 dropped"}
	runs["centrifuge"][0] = ServerRun{Kind: "centrifuge", Trial: 1, Conns: 10000, Error: "boom"}
	r := newReport(nil, params{Conns: 10000, Connect: 19000, Trials: 3, Servers: allServers, SampleMs: 100})
	r.Idle.Runs = []IdleRun{{Trial: 1, Conns: 19500, Error: "connecting 19500: timeout"}, {Trial: 2, Conns: 19500, Window: Window{RSS: Series{Peak: 400e6}}, CPUCores: 0.05}}
	r.finish(runs, nil)
	// Ratios 1.00 and 1.10 remain: the median is their mean.
	if row := findRow(t, r, "lean", "rssPerConn"); row.Median != 1.05 || row.Runs[2].Failed != "lean failed" || !math.IsNaN(row.Runs[2].Ratio) {
		t.Fatalf("lean row %+v", row)
	}
	// wsready's own figure stands when centrifuge's run failed.
	if g := findRow(t, r, "centrifuge", "goroutinesPeakPerConn"); g.Median != 1.9 || g.Runs[0].Failed != "centrifuge failed" || g.Runs[0].Wsready != 1.97 {
		t.Fatalf("goroutine row %+v", g)
	}
	if r.Idle.MedianPeakRSSBytes != 400e6 || r.Idle.VerdictRSS != "met" {
		t.Fatalf("idle %+v", r.Idle)
	}
	md := r.markdown()
	for _, want := range []string{"| lean failed |", "1.97 (centrifuge failed)", "Run 3 failed: subscribing 10000", "| 1 | failed: connecting 19500: timeout |", "**1.05** | missed"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

// A run whose connect of many clients alone failed keeps its other
// figures: the connect row names the drop, the others are judged.
func TestAFailedConnectLeavesTheRunsOtherFigures(t *testing.T) {
	runs := testRuns()
	runs["centrifuge"][1].ConnectManyError = "connecting 19000: 0 connections failed and 3 dropped"
	runs["centrifuge"][1].ConnectManySeconds = 0
	runs["centrifuge"][1].Trial, runs["centrifuge"][1].ConnectMany = 2, 19000
	r := newReport(nil, params{Conns: 10000, Connect: 19000, Trials: 3, Servers: allServers})
	r.finish(runs, nil)
	rss := findRow(t, r, "centrifuge", "rssPerConn")
	if len(rss.Runs) != 3 || math.IsNaN(rss.Runs[1].Ratio) || rss.Runs[1].Failed != "" {
		t.Fatalf("the RSS row lost the run whose connect failed: %+v", rss)
	}
	md := r.markdown()
	if !strings.Contains(md, "centrifuge dropped clients") || !strings.Contains(md, "Run 2's connect of 19,000 clients to a fresh server failed") {
		t.Fatalf("the report does not name the failed connect:\n%s", md)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("the report with a failed connect does not marshal: %v", err)
	}
}

// make bench rewrites bench.md and keeps its hand-written part.
func TestBenchKeepsTheHandWrittenPart(t *testing.T) {
	prev := "# old generated\n\nold figures\n\n" + handWritten + "\n\n## A profile\n\nwhere the time went\n"
	got := keepHandWritten("# new generated\n\nnew figures\n", prev)
	if !strings.HasPrefix(got, "# new generated\n\nnew figures\n\n"+handWritten) || !strings.HasSuffix(got, "where the time went\n") || strings.Contains(got, "old figures") {
		t.Fatalf("kept:\n%s", got)
	}
	if got := keepHandWritten("# new\n", "# old, nothing by hand\n"); got != "# new\n" {
		t.Fatalf("a page with no hand-written part: %q", got)
	}
}
