//go:build !js

package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The simulator runs the model's policies and no other: a fourth would be
// work the model does not do, timed against it.
func TestSimArgsRunTheModelsPoliciesOnly(t *testing.T) {
	i := slices.Index(simArgs, "-policy")
	if i < 0 || i+1 >= len(simArgs) {
		t.Fatal("simArgs name no -policy: wsready sim would run all four")
	}
	got := strings.Split(simArgs[i+1], ",")
	var want []string
	for _, p := range modelPolicies {
		want = append(want, p.sim)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the simulator runs %v, the model %v", got, want)
	}
}

func TestSimOnlyRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-trials", "0"}, {"-trials", "10"}, {"extra"}, {"-nope"}} {
		var ue *usageError
		if err := runSimOnly(args); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// The section shows every run of both processes, the load each started
// under, and the verdict.
func TestSimSectionShowsEveryRunAndTheLoad(t *testing.T) {
	s := SimFigures{Scenario: simScenario, SimCommand: "wsready sim", ModelPath: "fleet_model.py", Goal: 50,
		ModelRuns:   []ProcRun{{WallSeconds: 6, CPUSeconds: 5, Load: "1.00 2.00 3.00"}, {WallSeconds: 5, CPUSeconds: 5, Load: "1.10 2.00 3.00"}},
		SimRuns:     []ProcRun{{WallSeconds: 0.1, CPUSeconds: 0.12, Load: "0.90 2.00 3.00"}, {WallSeconds: 0.125, CPUSeconds: 0.12, Load: "1.20 2.00 3.00"}},
		StartRuns:   []ProcRun{{WallSeconds: 0.02, CPUSeconds: 0.02}, {WallSeconds: 0.02, CPUSeconds: 0.02}},
		SpeedupRuns: []float64{60, 40}, Speedup: 50, SpeedupCPU: 41.67, Verdict: "met"}
	md := s.markdown()
	for _, want := range []string{
		"| **speed-up, wall** | 60.0x | 40.0x | **50.0x** (goal >= 50x: met) |",
		"| load average (1, 5, 15 min) as the model / the simulator started | 1.00 2.00 3.00 / 0.90 2.00 3.00 | 1.10 2.00 3.00 / 1.20 2.00 3.00 | |",
		"| wsready version, CPU time | 0.020 s | 0.020 s | 0.020 s |",
		"the model's three policies",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
}
