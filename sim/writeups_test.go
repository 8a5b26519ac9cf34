package sim

import (
	"strings"
	"testing"
)

// The write-ups table's figures come from the client's policies and the
// simulator; these pin their shape (a lockstep fleet arrives at once,
// +-10% jitter halves its peak, full jitter spreads it over the window)
// with bounds wide enough for any seed.
func TestWriteupsAttemptPeaks(t *testing.T) {
	r, err := RunWriteups(DefaultWriteupConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if len(r.Peaks) != 3 {
		t.Fatalf("got %d peak rows, want 3", len(r.Peaks))
	}
	none, spread, full := r.Peaks[0], r.Peaks[1], r.Peaks[2]
	if none.InWindow != 100_000 || none.FromDisconnect != 100_000 {
		t.Errorf("without jitter attempt 5 of 100,000 clients should fall in one second: %+v", none)
	}
	// Attempt 5 waits 8 s +-10%: [7.2 s, 8.8 s), half of it in [7 s, 8 s).
	if spread.InWindow < 49_000 || spread.InWindow > 51_000 {
		t.Errorf("+-10%% jitter: peak %d, want about 50,000", spread.InWindow)
	}
	// Full jitter: uniform over [0, 8 s), about 12,500 a second.
	if full.InWindow < 12_300 || full.InWindow > 12_900 {
		t.Errorf("full jitter: peak %d, want about 12,500", full.InWindow)
	}
	if !(full.FromDisconnect < spread.FromDisconnect && spread.FromDisconnect < none.FromDisconnect) {
		t.Errorf("from the disconnect, jitter should spread attempt 5 further: %+v", r.Peaks)
	}
}

func TestWriteupsLockstepAndArithmetic(t *testing.T) {
	c := DefaultWriteupConfig()
	r, err := RunWriteups(c)
	if err != nil {
		t.Fatal(err)
	}
	// 2,000 at t=0 and a server taking 20 a second: each wave is the one
	// before less 20.
	want := []int{2000, 1980, 1960, 1940}
	if len(r.Lockstep.Waves) != len(want) {
		t.Fatalf("waves %v, want %v", r.Lockstep.Waves, want)
	}
	for i := range want {
		if r.Lockstep.Waves[i] != want[i] {
			t.Fatalf("waves %v, want %v", r.Lockstep.Waves, want)
		}
	}
	if r.Lockstep.JitterPeak <= 0 || r.Lockstep.JitterPeak >= 2000 {
		t.Errorf("full jitter's busiest second after t=0: %d, want well under the fleet", r.Lockstep.JitterPeak)
	}
	if r.AppPingsPerSecond != 40_000 || r.SweepPingsPerSecond != 50_000 {
		t.Errorf("heartbeat at 1M connections: %v protocol and %v sweep pings a second, want 40,000 and 50,000", r.AppPingsPerSecond, r.SweepPingsPerSecond)
	}
	if d := r.IdleCoresAtConns - 0.079*1e6/19500; d > 1e-9 || d < -1e-9 {
		t.Errorf("idle CPU at 1M: %v cores", r.IdleCoresAtConns)
	}
	if r.DrainClosesPerSecond != 5000 || r.DrainReturnsPerSecond != 450 {
		t.Errorf("drain: %v closes and %v returns a second, want 5,000 and 450", r.DrainClosesPerSecond, r.DrainReturnsPerSecond)
	}
	// The reconstructed model gives the write-up's totals: 13.8 TB, 2.3 TB
	// and 288 GB a day.
	for _, v := range []struct {
		got, want float64
	}{{r.PollFastBytesPerDay, 13.824e12}, {r.PollSlowBytesPerDay, 2.304e12}, {r.PushBytesPerDay, 288e9}} {
		if d := v.got/v.want - 1; d > 1e-9 || d < -1e-9 {
			t.Errorf("bytes a day %v, want %v", v.got, v.want)
		}
	}
	if r.OursFrameBytes < len(locationJSON) || r.OursPingBytes < 10 || r.OursPushBytesPerDay <= 0 {
		t.Errorf("our frames: update %d B, ping %d B", r.OursFrameBytes, r.OursPingBytes)
	}
	md := WriteupTable(r)
	for _, s := range []string{"| exponential(base 500ms, cap 24h0m0s) | 100000 | 100000 |", "2000 / 1980 / 1960 / 1940", "13.8 TB", "288 GB (polling 48x and 8x)"} {
		if !strings.Contains(md, s) {
			t.Errorf("the table lacks %q:\n%s", s, md)
		}
	}
}

func TestWriteupsRefuseInvalid(t *testing.T) {
	for name, f := range map[string]func(*WriteupConfig){
		"no clients":    func(c *WriteupConfig) { c.PeakClients = 0 },
		"zero base":     func(c *WriteupConfig) { c.PeakBase = 0 },
		"attempt 0":     func(c *WriteupConfig) { c.PeakAttempt = 0 },
		"spread 0":      func(c *WriteupConfig) { c.Spread = 0 },
		"spread 1":      func(c *WriteupConfig) { c.Spread = 1 },
		"zero ping":     func(c *WriteupConfig) { c.PingInterval = 0 },
		"zero window":   func(c *WriteupConfig) { c.DrainWindow = 0 },
		"zero admit":    func(c *WriteupConfig) { c.AdmitRate = 0 },
		"zero poll":     func(c *WriteupConfig) { c.PollFast = 0 },
		"no poll bytes": func(c *WriteupConfig) { c.PollBytes = 0 },
		"zero waves":    func(c *WriteupConfig) { c.LockWaves = 0 },
		"no idle conns": func(c *WriteupConfig) { c.IdleConns = 0 },
	} {
		c := DefaultWriteupConfig()
		f(&c)
		if _, err := RunWriteups(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c := DefaultWriteupConfig()
	c.LockCapacity = 0 // zero is a value: a server that takes nothing
	c.FrameCPU = 0
	if _, err := RunWriteups(c); err != nil {
		t.Errorf("zero capacity and frame CPU refused: %v", err)
	}
}

func TestReadStormFindsMedianP99AndStormSeconds(t *testing.T) {
	const report = `{"admitRate": 500, "downtimeMs": 2000, "storm": [{"label": "a", "report": {"clients": 10, "t99Ms": 3500,
		"seconds": [{"t":0,"attempts":900,"ready":0},{"t":1,"attempts":700,"ready":2},{"t":2,"attempts":501,"ready":5},{"t":3,"attempts":500,"ready":10}]}}]}`
	got, err := ReadStorm(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	// Half READY at the end of second 2; only second 2 (at or after the
	// 2 s downtime) asked for more than 500.
	if len(got) != 1 || got[0].MedianMs == nil || *got[0].MedianMs != 3000 || *got[0].P99Ms != 3500 || got[0].StormSeconds != 1 || got[0].Clients != 10 {
		t.Fatalf("got %+v", got)
	}
	if s := StormTable(got); !strings.Contains(s, "| a | 10 | 3.0 s | 3.5 s | 1 |") {
		t.Errorf("table:\n%s", s)
	}
	for name, bad := range map[string]string{
		"not JSON":      "{",
		"no runs":       `{"admitRate": 500, "storm": []}`,
		"no admit rate": `{"storm": [{"label": "a", "report": {"clients": 1}}]}`,
		"too large":     strings.Repeat(" ", maxStormFile+1),
		"wrong shape":   `{"storm": 3}`,
	} {
		if _, err := ReadStorm(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
