//go:build !js

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestSimCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-policy", "nope"}, {"-first", "sometimes"}, {"-format", "xml"}, {"-clients", "-3"},
		{"-cap", "1ms", "-base", "1s"}, {"extra"}, {"-horizon", "banana"},
	} {
		if err := runSim(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
