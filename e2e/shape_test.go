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
			session(p)
		}),
		6: with(freeze, func(p *Plan) { session(p); p.Restart = true }),
		7: with(freeze, func(p *Plan) { p.Restart = true; p.Flapping = 10 * time.Second }),
	}
	rows := map[int]Row{}
	for stage := 0; stage <= 7; stage++ {
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
	for stage := 2; stage <= 7; stage++ {
		bound := int64(detectBound)
		if stage >= 6 {
			bound = 2500 // a probe after 1.25 intervals, dead 0.25 s later: 1.5 s at worst, plus slack
		}
		if d := rows[stage].FreezeDetectedMs; d == nil || *d > bound {
			t.Errorf("stage %d: freeze detected after %s, want within %d ms", stage, ms(d), bound)
		}
	}
	if n := rows[2].ConnectionsAfterFreeze; n == nil || *n <= 1 {
		t.Errorf("stage 2 should leak sockets after a freeze: %s server connections", num(n))
	}
	for stage := 3; stage <= 7; stage++ {
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

	// The session contract: stage 6 stops after Revoke and End session,
	// refreshes its ticket about once per lifetime (5 s) under Short tokens
	// and waits out Overload's 5 s retry-after; stage 5 does none of these.
	s5, s6 := rows[5], rows[6]
	if n := s6.RevokeAttempts; n == nil || *n != 0 {
		t.Errorf("stage 6 made %s attempts after Revoke, want 0", num(n))
	}
	if n := s6.EndSessionAttempts; n == nil || *n != 0 {
		t.Errorf("stage 6 made %s attempts after End session, want 0", num(n))
	}
	if n := s5.RevokeAttempts; n == nil || *n < 2 {
		t.Errorf("stage 5 made %s attempts after Revoke; it should keep trying", num(n))
	}
	if n := s5.EndSessionAttempts; n == nil || *n < 1 {
		t.Errorf("stage 5 made %s attempts after End session; it should reconnect", num(n))
	}
	lifetimes := int(s6.ShortTokensWindowMs / 5000)
	if r, h := s6.ShortTokensRefreshes, s6.ShortTokensHandshakes; r == nil || h == nil || *r < 1 || *r > lifetimes+1 || *h > *r+1 {
		t.Errorf("stage 6 under Short tokens (%d ms): %s refreshes, %s handshakes; want about one of each per 5 s", s6.ShortTokensWindowMs, num(r), num(h))
	}
	if r := s5.ShortTokensRefreshes; r == nil || *r != 0 {
		t.Errorf("stage 5 refreshed its ticket %s times; it does not know 4001", num(r))
	}
	if g := s6.OverloadMinGapMs; g != nil && *g < 4900 {
		t.Errorf("stage 6 under Overload: dials %s apart, retry-after is 5 s", ms(g))
	}
	if n := s6.OverloadDials; n == nil || *n < 1 {
		t.Errorf("stage 6 made %s dials under Overload", num(n))
	}
	if g := s5.OverloadMinGapMs; g == nil || *g >= 5000 {
		t.Errorf("stage 5 under Overload: shortest gap %s; its jitter ignores the retry-after", gap(g))
	}
	// Reconnect slots: a stage 6 tab comes back at its slot, right after
	// the server accepts again, not at a backoff draw.
	if d := s6.ReadyAfterRestartMs; d == nil || *d > 1000 {
		t.Errorf("stage 6 READY %s after the server accepted again, want within 1 s", ms(d))
	}
	t.Logf("\n%s", SessionTable([]Row{s5, s6}))

	// Resume: stage 7 loses and repeats nothing across Freeze, Flapping and
	// Restart, by its own count and by the server's seqs; stage 6 loses
	// what the feed published during the Restart's downtime.
	s7 := rows[7]
	for name, l := range map[string]*Loss{"freeze": s7.LossFreeze, "flapping": s7.LossFlapping, "restart": s7.LossRestart} {
		if l == nil || l.Lost != 0 || l.Checked != 0 || l.Duplicates != 0 {
			t.Errorf("stage 7 %s: %+v, want nothing lost or repeated", name, l)
		}
	}
	if l := s6.LossRestart; l == nil || l.Lost < 1 || l.Checked != l.Lost {
		t.Errorf("stage 6 Restart: %+v; it should lose the downtime's updates and count them right", l)
	}
	for stage := 3; stage <= 7; stage++ {
		for _, l := range []*Loss{rows[stage].LossFreeze, rows[stage].LossFlapping, rows[stage].LossRestart} {
			if l != nil && l.Checked != l.Lost {
				t.Errorf("stage %d: the client counted %d lost, the server's seqs say %d", stage, l.Lost, l.Checked)
			}
		}
	}
	t.Logf("\n%s", LossTable([]Row{rows[2], rows[3], rows[5], rows[6], s7}))
}

// session adds the session switches at CI length.
func session(p *Plan) {
	p.ShortTokens = 12 * time.Second
	p.Revoke = 12 * time.Second
	p.EndSession = 10 * time.Second
	p.Overload = 15 * time.Second
}

func with(p Plan, f func(*Plan)) Plan {
	f(&p)
	return p
}
