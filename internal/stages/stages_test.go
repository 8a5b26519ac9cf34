package stages

import (
	"errors"
	"testing"

	"github.com/wsready/wsready/client"
)

// Stage n keeps exactly the first n fixes, in the demo's order (stage 5's
// backoff with its cooldown), and stage Max is the zero value: the
// production client.
func TestEachStageAddsOneFix(t *testing.T) {
	order := func(f client.Fixes) []bool {
		return []bool{f.Registry, f.Heartbeat, f.StaleFilter, f.Service, f.Backoff, f.Session, f.Resume, f.WhereUsersAre}
	}
	for n := 0; n <= Max; n++ {
		off, err := Disabled(n)
		if err != nil {
			t.Fatalf("stage %d: %v", n, err)
		}
		for i, disabled := range order(off) {
			if disabled != (i >= n) {
				t.Fatalf("stage %d: fix %d disabled=%v (%+v)", n, i+1, disabled, off)
			}
		}
		if off.Cooldown != off.Backoff {
			t.Fatalf("stage %d: the cooldown is not the backoff's (%+v)", n, off)
		}
	}
	if off, _ := Disabled(Max); off != (client.Fixes{}) {
		t.Fatalf("stage %d disables %+v, want nothing", Max, off)
	}
	cfg, err := Config(3, func() float64 { return 0 })
	if err != nil || cfg.Rand == nil || !cfg.Disable.Service || cfg.Disable.StaleFilter {
		t.Fatalf("Config(3): %+v %v", cfg.Disable, err)
	}
	if Must(4).Disable.Service {
		t.Fatal("Must(4) disables the service layer")
	}
}

func TestABadStageIsErrBadStage(t *testing.T) {
	for _, n := range []int{-1, Max + 1, 99} {
		_, err := Config(n, func() float64 { return 0 })
		if !errors.Is(err, ErrBadStage) {
			t.Fatalf("stage %d: %v", n, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Must(9) did not panic")
		}
	}()
	Must(9)
}
