package sim

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from this build")

// goldenCases are scenarios whose figures must not change when the
// simulator's insides do (its calendar, its speed): same seed, same figures.
func goldenCases() map[string]any {
	out := map[string]any{}
	base := DefaultConfig()
	for _, np := range Policies(DefaultPolicyParams()) {
		r, _ := Run(base, np)
		out["base/"+np.Name] = r
	}
	small := Config{Clients: 3000, Capacity: 50, Downtime: 5 * time.Second, Horizon: 20 * time.Second, Seed: 9, FirstAttemptZero: true}
	for _, np := range Policies(PolicyParams{Fixed: 700 * time.Millisecond, Base: 300 * time.Millisecond, Cap: 5 * time.Second, Step: 400 * time.Millisecond, LinearCap: 3 * time.Second}) {
		r, _ := Run(small, np)
		out["small/"+np.Name] = r
	}
	fc := DefaultFlapConfig()
	fc.Clients, fc.Horizon = 200, 3*time.Minute
	for _, np := range Policies(DefaultPolicyParams()) {
		r, _ := RunFlap(fc, np)
		out["flap/"+np.Name] = r
	}
	wu, _ := RunWriteups(DefaultWriteupConfig())
	out["writeups"] = wu
	return out
}

func TestGoldenFigures(t *testing.T) {
	got, err := json.MarshalIndent(goldenCases(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	const path = "testdata/golden.json"
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	json.Unmarshal(got, &g)
	json.Unmarshal(want, &w)
	if !reflect.DeepEqual(g, w) {
		t.Fatal("figures differ from testdata/golden.json (same seeds): the simulator's results changed")
	}
}
