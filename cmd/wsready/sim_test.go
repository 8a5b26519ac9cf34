//go:build !js

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/wsready/wsready/storm"
)

func TestSimCommandPrintsTheSeedAndTables(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := runSim([]string{"-clients", "200", "-capacity", "20", "-seed", "7", "-flap-clients", "20", "-flap-horizon", "1m",
		"-svg", dir, "-out", filepath.Join(dir, "sim.md"), "-json", filepath.Join(dir, "sim.json")}, &out)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"seed 7", "| full-jitter(base 1s, cap 30s) |", "backoff resets on open", "attempts.svg"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, f := range []string{"attempts.svg", "connected.svg", "sim.md", "sim.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		if strings.HasSuffix(f, ".svg") && !bytes.HasPrefix(b, []byte("<svg")) {
			t.Fatalf("%s is not an SVG", f)
		}
	}
	out.Reset()
	if err := runSim([]string{"-clients", "100", "-policy", "fixed", "-format", "json", "-flap-clients", "10", "-flap-horizon", "1m"}, &out); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Seed    uint64
		Results []struct{ Policy string }
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Results) != 1 || v.Results[0].Policy != "fixed" {
		t.Fatalf("json output: %v %+v", err, v)
	}
}

// -tables main runs the policies' table only.
func TestSimTablesPicksTheTables(t *testing.T) {
	var out bytes.Buffer
	if err := runSim([]string{"-clients", "100", "-capacity", "20", "-tables", "main"}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "| full-jitter") || strings.Contains(s, "stage 6") || strings.Contains(s, "Flapping") {
		t.Fatalf("-tables main printed:\n%s", s)
	}
}

func TestSimCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-policy", "nope"}, {"-first", "sometimes"}, {"-format", "xml"}, {"-clients", "-3"},
		{"-cap", "1ms", "-base", "1s"}, {"extra"}, {"-horizon", "banana"},
		{"-base", "0s"}, {"-fixed", "0s"}, {"-step", "0s"}, {"-clients", "0"}, {"-capacity", "-1"}, {"-downtime", "-1s"},
		{"-horizon", "0s"}, {"-horizon", "25h"}, {"-linear-cap", "-1s"}, {"-flap-clients", "0"}, {"-cooldown", "0s"}, {"-flap-close", "-1ms"},
		{"-tables", "session"}, {"-tables", "main,nope"}, {"-policy", "fixed,fixed"}, {"-policy", "fixed,nope"}, {"-policy", ""},
	} {
		if err := runSim(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// Zero is a value: -downtime 0 is a server that never refuses (the whole
// fleet is in within its first seconds), and -fixed is fixed's own delay.
func TestSimFlagsMeanWhatTheySay(t *testing.T) {
	var out bytes.Buffer
	err := runSim([]string{"-clients", "100", "-capacity", "1000", "-downtime", "0", "-policy", "fixed", "-fixed", "250ms", "-base", "5s", "-cap", "10s",
		"-format", "json", "-flap-clients", "10", "-flap-horizon", "1m"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Results []struct {
			Description string
			Attempts    int
			T100Ms      *int64
		}
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Results) != 1 {
		t.Fatalf("%v %s", err, out.String())
	}
	r := v.Results[0]
	if r.Description != "fixed(250ms)" || r.Attempts != 100 || r.T100Ms == nil || *r.T100Ms != 250 {
		t.Fatalf("result %+v: want fixed(250ms), 100 attempts, all in at 250 ms", r)
	}
}

// -policy takes a list: the named policies only, in the table's order.
func TestSimPolicyList(t *testing.T) {
	var out bytes.Buffer
	if err := runSim([]string{"-clients", "100", "-capacity", "20", "-tables", "main", "-policy", "jitter, fixed,exponential", "-format", "json"}, &out); err != nil {
		t.Fatal(err)
	}
	var v struct{ Results []struct{ Policy string } }
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range v.Results {
		got = append(got, r.Policy)
	}
	if strings.Join(got, ",") != "fixed,exponential,jitter" {
		t.Fatalf("-policy jitter,fixed,exponential ran %v", got)
	}
}

// The collector is off while a small simulation runs and as it was once
// the command is done; a large one, or GOGC in the environment, leaves it
// alone.
func TestSimCollectorOffOnlyForSmallRuns(t *testing.T) {
	t.Setenv("GOGC", "") // as if unset: os.Getenv reads ""
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	limit := debug.SetMemoryLimit(-1)
	restore := collectLess(gcOffBelow)
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("collector at %d%% during a small run", p)
	}
	if l := debug.SetMemoryLimit(-1); l != min(limit, 2*gcOffBelow) {
		t.Fatalf("memory limit %d during a small run", l)
	}
	restore()
	if p := debug.SetGCPercent(before); p != before || debug.SetMemoryLimit(-1) != limit {
		t.Fatalf("not restored: %d%%, limit %d", p, debug.SetMemoryLimit(-1))
	}
	collectLess(gcOffBelow + 1)()
	if p := debug.SetGCPercent(before); p != before {
		t.Fatalf("a large run changed the collector: %d%%", p)
	}
	t.Setenv("GOGC", "200")
	restore = collectLess(1)
	if p := debug.SetGCPercent(before); p != before {
		t.Fatalf("GOGC in the environment was overridden: %d%%", p)
	}
	restore()
}

// -tables writeups alone prints the write-ups' figures (docs/sim.md) and
// writes them as markdown and JSON; its flags mean what they say.
func TestSimWriteupsTable(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	md, js := filepath.Join(dir, "w.md"), filepath.Join(dir, "w.json")
	if err := runSim([]string{"-tables", "writeups", "-out", md, "-json", js}, &out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| exponential(base 500ms, cap 24h0m0s) | 100000 | 100000 |", "exponential without jitter 2000 / 1980 / 1960 / 1940",
		"| 40000 |", "| 450, 111 s |", "13.8 TB", "288 GB (polling 48x and 8x)"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the writeups table lacks %q:\n%s", s, out.String())
		}
	}
	if strings.Contains(out.String(), "Base scenario") {
		t.Errorf("-tables writeups ran the base scenario too:\n%s", out.String())
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "13.8 TB") {
		t.Fatalf("-out: %v\n%s", err, b)
	}
	var payload struct {
		Writeups struct {
			Peaks []struct{ InWindow int } `json:"peaks"`
		} `json:"writeups"`
	}
	if b, err = os.ReadFile(js); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &payload); err != nil || len(payload.Writeups.Peaks) != 3 || payload.Writeups.Peaks[0].InWindow != 100000 {
		t.Fatalf("-json: %v %+v", err, payload)
	}

	out.Reset()
	if err := runSim([]string{"-tables", "writeups", "-peak-clients", "1000", "-ping", "10s", "-drain-window", "300s"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| exponential(base 500ms, cap 24h0m0s) | 1000 | 1000 |", "(every 10s) | 100000 |", "(over 5m0s) | 167 |"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the flags did not reach the table, it lacks %q:\n%s", s, out.String())
		}
	}
	for _, args := range [][]string{{"-peak-base", "0s"}, {"-spread", "0"}, {"-spread", "1"}, {"-peak-attempt", "0"}, {"-ping", "0s"},
		{"-admit-rate", "0"}, {"-poll-bytes", "0"}, {"-lock-capacity", "-1"}, {"-tables", "writeups,nope"}} {
		if err := runSim(append([]string{"-tables", "writeups"}, args...), &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// -storm reads what wsready storm -compare -json writes (the storm
// package's own types, encoded the way runStorm encodes them) and puts its
// field figures in the writeups table; a missing or foreign file is an
// error, and -storm without the writeups table is refused.
func TestSimWriteupsReadAStormReport(t *testing.T) {
	dir := t.TempDir()
	t99 := int64(4200)
	rows := []storm.Row{{Label: "stage 6, server with slots", Report: storm.Report{Clients: 4, T99Ms: &t99,
		Seconds: []storm.Second{{T: 0, Attempts: 9, Ready: 0}, {T: 1, Attempts: 6, Ready: 1}, {T: 2, Attempts: 2, Ready: 2}, {T: 3, Attempts: 1, Ready: 4}}}}}
	b, err := json.Marshal(map[string]any{"storm": rows, "admitRate": 5, "downtimeMs": 1000})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "storm.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runSim([]string{"-tables", "writeups", "-storm", path}, &out); err != nil {
		t.Fatal(err)
	}
	// Half READY by the end of second 2, 99% at 4.2 s, one second after the
	// downtime above the admission rate of 5.
	if want := "| stage 6, server with slots | 4 | 3.0 s | 4.2 s | 1 |"; !strings.Contains(out.String(), want) {
		t.Errorf("the table lacks %q:\n%s", want, out.String())
	}
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"clients": 3}`), 0o644)
	for _, args := range [][]string{{"-tables", "writeups", "-storm", filepath.Join(dir, "missing.json")},
		{"-tables", "writeups", "-storm", filepath.Join(dir, "other.json")}, {"-tables", "main", "-storm", path}} {
		if err := runSim(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
