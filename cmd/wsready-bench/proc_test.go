//go:build !js

package main

import (
	"context"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
)

func TestReadRSSAndCPUOfThisProcess(t *testing.T) {
	rss, err := readRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 || rss > 1<<40 {
		t.Fatalf("RSS %d bytes: not a process's resident set", rss)
	}
	c0, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the 10 ms clock shows 100 ms more (a loaded machine
	// gives this goroutine a share of a core, so wall time says little).
	start := time.Now()
	x := 0
	for {
		for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
			x++
		}
		c1, err := readCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		d, wall := c1-c0, time.Since(start)
		if d >= 100*time.Millisecond {
			if d > wall*time.Duration(runtime.NumCPU())+100*time.Millisecond {
				t.Fatalf("%v of CPU in %v of wall time on %d CPUs", d, wall, runtime.NumCPU())
			}
			return
		}
		if wall > 20*time.Second {
			t.Fatalf("20 s of spinning (%d turns) read as %v of CPU", x, d)
		}
	}
}

func TestReadingAProcessThatIsGoneFails(t *testing.T) {
	const gone = 1<<22 + 12345 // above pid_max's ceiling: no such process
	if _, err := readRSS(gone); err == nil {
		t.Fatal("readRSS of no process: no error")
	}
	if _, err := readCPU(gone); err == nil {
		t.Fatal("readCPU of no process: no error")
	}
}

func TestParseStatSkipsACommandNameWithSpacesAndParentheses(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 250 and 50 ticks: 3 s.
	line := "4242 (evil) name (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 1000 200\n"
	got, err := parseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if got != 3*time.Second {
		t.Fatalf("parseStat = %v, want 3s", got)
	}
	if _, err := parseStat(1, []byte("1 (short) S 1 2")); err == nil {
		t.Fatal("a truncated line: no error")
	}
}

func TestSummarise(t *testing.T) {
	s := summarise([]float64{4, 10, 1, 5})
	if s.Mean != 5 || s.Peak != 10 || s.Min != 1 || s.End != 5 || s.N != 4 {
		t.Fatalf("summarise = %+v", s)
	}
	if z := summarise(nil); z != (Series{}) {
		t.Fatalf("summarise(nil) = %+v", z)
	}
}

// A burst between two one-off readings is what the window must not hide:
// one sample is a spike, and the peak must be it while the mean stays
// between the floor and the spike. (The machine may drop ticks: the test
// counts samples, not time.)
func TestWindowCatchesABurstThatOneSampleWouldMiss(t *testing.T) {
	var calls atomic.Int64
	s := sampler{pid: os.Getpid(), goroutines: func() (int, int, error) {
		if calls.Add(1) == 3 {
			return 20000, 20000, nil
		}
		return 10000, 10000, nil
	}}
	w, err := s.window(300*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if w.Goroutines.N < 4 || w.Goroutines.N > 32 {
		t.Fatalf("%d goroutine samples in 300 ms at 10 ms", w.Goroutines.N)
	}
	if w.Goroutines.Peak != 20000 || w.GoroutinesPeak != 20000 || w.Goroutines.End != 10000 ||
		w.Goroutines.Mean <= 10000 || w.Goroutines.Mean >= 15000 {
		t.Fatalf("goroutines %+v: the burst is not the peak, or the mean is not near the floor", w.Goroutines)
	}
	if w.RSS.N != w.Goroutines.N || w.RSS.Mean <= 0 || w.Seconds < 0.3 || w.Seconds > 5 {
		t.Fatalf("window %+v", w)
	}
}

func TestWindowSamplesGoroutinesEveryNthTick(t *testing.T) {
	var calls atomic.Int64
	s := sampler{pid: os.Getpid(), goroutines: func() (int, int, error) { calls.Add(1); return 1, 1, nil }}
	w, err := s.window(200*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Samples 0, 5, 10, ... read the goroutines.
	if want := (w.RSS.N + 4) / 5; w.RSS.N < 4 || int64(w.Goroutines.N) != calls.Load() || w.Goroutines.N != want {
		t.Fatalf("%d RSS samples, %d goroutine samples (%d calls), want %d", w.RSS.N, w.Goroutines.N, calls.Load(), want)
	}
}

func TestParseGoGoroutines(t *testing.T) {
	page := "# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines 19512\ngo_threads 9\n"
	n, err := parseGoGoroutines(strings.NewReader(page))
	if err != nil || n != 19512 {
		t.Fatalf("parseGoGoroutines = %d, %v", n, err)
	}
	if _, err := parseGoGoroutines(strings.NewReader("go_threads 9\n")); err == nil {
		t.Fatal("no go_goroutines line: no error")
	}
}

func TestMedianAndRatio(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Fatalf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Fatalf("median even = %v", m)
	}
	if m := median([]float64{math.NaN(), 5}); m != 5 {
		t.Fatalf("median skips NaN: %v", m)
	}
	if m := median(nil); !math.IsNaN(m) {
		t.Fatalf("median of nothing = %v", m)
	}
	if r := ratio(1, 0); !math.IsNaN(r) {
		t.Fatalf("ratio over 0 = %v", r)
	}
	if r := ratio(41.2, 35.8); r != 1.15 {
		t.Fatalf("ratio = %v", r)
	}
}

// The server's high-water mark catches what no sample sees: here every
// sample reads 10,000 but one read reports a peak of 19,700 since the
// previous read; the first read's peak (before the window) is not the
// window's.
func TestWindowTakesTheServersHighWaterMark(t *testing.T) {
	var calls atomic.Int64
	s := sampler{pid: os.Getpid(), goroutines: func() (int, int, error) {
		switch calls.Add(1) {
		case 1:
			return 10000, 30000, nil // the connect phase's burst, before the window
		case 3:
			return 10000, 19700, nil
		}
		return 10000, 10000, nil
	}}
	w, err := s.window(300*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if w.Goroutines.Peak != 10000 || w.GoroutinesPeak != 19700 {
		t.Fatalf("sampled peak %v, high-water mark %v; want 10000 and 19700", w.Goroutines.Peak, w.GoroutinesPeak)
	}
}

func TestGoroutineWatchSeesABurstBetweenReads(t *testing.T) {
	var g goroutineWatch
	base := g.take()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.run(ctx) }()
	defer func() { cancel(); <-done }()
	// 500 goroutines live for 20 ms, then end: a read after that sees
	// the count back down but the peak up.
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 500 {
		wg.Add(1)
		go func() { defer wg.Done(); <-release }()
	}
	poll.Until(5*time.Second, func() bool { return g.peak.Load() >= int64(base)+500 }) // the sampler's ticker sees the burst
	close(release)
	wg.Wait()
	peak := g.take()
	if peak < base+500 {
		t.Fatalf("peak %d after a burst of 500 over %d", peak, base)
	}
	if again := g.take(); again >= base+500 {
		t.Fatalf("the next read still reports %d: take did not start a new mark", again)
	}
}
