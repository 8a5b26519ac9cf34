//go:build !js

package e2e

import (
	"os"
	"testing"
	"time"
)

// TestShape is make test's subset of the measurements: it asserts the shape
// the SPEC expects, with generous bounds (a shared 2-core machine). About
// four minutes.
func TestShape(t *testing.T) {
	if testing.Short() || os.Getenv("WSREADY_MEASURE") != "" {
		t.Skip("skipped in -short mode and under make measure")
	}
	freeze := Plan{Freeze: 8 * time.Second, Settle: 6 * time.Second, Steady: 6 * time.Second}
	plans := map[int]Plan{
		0: {Freeze: 8 * time.Second, Settle: 3 * time.Second, Steady: 2 * time.Second},
		1: {Freeze: 8 * time.Second, Settle: 3 * time.Second, Steady: 2 * time.Second},
		2: freeze,
		3: with(freeze, func(p *Plan) { p.ServiceDown = 3 * time.Second; p.Flapping = 10 * time.Second }),
		4: with(freeze, func(p *Plan) { p.ServiceDown = 3 * time.Second }),
		5: with(freeze, func(p *Plan) {
			p.ServiceDown = 3 * time.Second
			p.Flapping = 10 * time.Second
			p.Offline = 6 * time.Second
		}),
	}
	rows := map[int]Row{}
	for stage := 0; stage <= 5; stage++ {
		row, err := RunStage(stage, plans[stage], t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		rows[stage] = row
		t.Logf("stage %d: %s", stage, Table([]Row{row}))
	}
	// Generous bound: the watchdog fires two intervals (2 s) after the last
	// ping, at most three after the freeze; allow slack for a loaded machine.
	const detectBound = 3500
	for stage := 0; stage <= 1; stage++ {
		if d := rows[stage].FreezeDetectedMs; d != nil {
			t.Errorf("stage %d detected the freeze after %d ms: it has no heartbeat", stage, *d)
		}
	}
	for stage := 2; stage <= 5; stage++ {
		if d := rows[stage].FreezeDetectedMs; d == nil || *d > detectBound {
			t.Errorf("stage %d: freeze detected after %s, want within %d ms", stage, ms(d), detectBound)
		}
	}
	if n := rows[2].ConnectionsAfterFreeze; n == nil || *n <= 1 {
		t.Errorf("stage 2 should leak sockets after a freeze: %s server connections", num(n))
	}
	for stage := 3; stage <= 5; stage++ {
		if n := rows[stage].ConnectionsAfterFreeze; n == nil || *n != 1 {
			t.Errorf("stage %d: %s server connections after the freeze, want exactly 1", stage, num(n))
		}
	}
	if r := rows[3]; r.ServiceOutageDetectedMs != nil || r.DataAfterRecoveryMs != nil {
		t.Errorf("stage 3 should neither notice the outage nor get data after it: %s, %s", ms(r.ServiceOutageDetectedMs), ms(r.DataAfterRecoveryMs))
	}
	for stage := 4; stage <= 5; stage++ {
		r := rows[stage]
		if d := r.ServiceOutageDetectedMs; d == nil || *d > 3000 {
			t.Errorf("stage %d: service outage detected after %s, want within 3 s", stage, ms(d))
		}
		if r.DataAfterRecoveryMs == nil {
			t.Errorf("stage %d got no data after the service recovered", stage)
		}
	}
	a3, a5 := rows[3].FlappingAttempts, rows[5].FlappingAttempts
	if a3 == nil || a5 == nil || *a5 >= *a3 {
		t.Errorf("stage 5 should make fewer attempts during flapping than stage 3: %s vs %s", num(a5), num(a3))
	}
	if n := rows[5].OfflineAttempts; n == nil || *n != 0 {
		t.Errorf("stage 5 made %s attempts while offline, want 0", num(n))
	}
	if rows[5].ReadyAfterOnlineMs == nil {
		t.Error("stage 5 did not get READY after coming back online")
	}
}

func with(p Plan, f func(*Plan)) Plan {
	f(&p)
	return p
}
