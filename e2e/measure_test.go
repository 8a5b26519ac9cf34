//go:build !js

package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// stagesFromEnv reads WSREADY_STAGES (e.g. "2,5"); default all.
func stagesFromEnv() []int {
	s := os.Getenv("WSREADY_STAGES")
	if s == "" {
		return []int{0, 1, 2, 3, 4, 5, 6, 7}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 0 && n <= 7 {
			out = append(out, n)
		}
	}
	return out
}

// TestMeasure runs the full matrix and writes docs/measurements.{md,json}
// and the screenshots. It runs only under make measure (WSREADY_MEASURE=1):
// about ten minutes.
func TestMeasure(t *testing.T) {
	if os.Getenv("WSREADY_MEASURE") == "" {
		t.Skip("set WSREADY_MEASURE=1 (make measure) to run the full matrix")
	}
	plan := FullPlan
	plan.Shots = "../docs"
	var rows []Row
	for _, stage := range stagesFromEnv() {
		row, err := RunStage(stage, plan, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
		t.Logf("stage %d: %+v", stage, Table([]Row{row}))
	}
	rep := NewReport(plan, rows)
	env, err := StartServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.LoadLoopbackMs, err = LoadToReady(env, Link{}, 5); err != nil {
		t.Fatal(err)
	}
	if rep.LoadSlowLinkMs, err = LoadToReady(env, TenMbit40ms, 5); err != nil {
		t.Fatal(err)
	}
	env.Close()
	if err := rep.Write("../docs"); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + Table(rows))
}
