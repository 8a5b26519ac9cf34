//go:build !js

package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// The browser bench's memory phase (TestBrowserBench, after the first
// rate's runs, against the same servers): every client's runs at once, a
// fresh Chromium per page, all running together, each page sampled at
// memorySampleAt and at the phase's end (WSREADY_BROWSER_BENCH_MEMORY,
// memoryMin..memoryMax; 0 skips the phase). Together, not one after the
// other: memory is not sensitive to CPU contention the way the per-update
// figures are, and a 5-minute phase per page would take half an hour.
const (
	memorySampleAt = 20 * time.Second
	memoryMin      = 30 * time.Second
	memoryMax      = 30 * time.Minute
)

// memorySample is one page's memory at a moment of the phase.
type memorySample struct {
	at              time.Duration // since the phase's start
	pss, heap, live float64       // MiB: the renderer's PSS, JSHeapUsedSize, the same after a full GC
	wasm            float64       // MiB: the wasm's memory (NaN: no wasm)
	updates         int64         // delivered by then
}

// memoryPage is one page of the phase: its two samples and the updates a
// second it got between them.
type memoryPage struct {
	client      string
	page        int
	early, late memorySample
	rate        float64
}

// benchMemory runs the memory phase for d: runs pages of each client
// (alternating as the runs do), each in its own Chromium, all started
// before the phase's clock starts, sampled at memorySampleAt and at d.
func benchMemory(t *testing.T, runs int, d time.Duration, clients []string, base map[string]string) ([]memoryPage, error) {
	n := runs * len(clients)
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Duration(n)*time.Minute+2*time.Minute)
	defer cancel()
	type running struct {
		memoryPage
		b *Browser
	}
	var pages []*running
	defer func() {
		for _, p := range pages {
			p.b.Close()
		}
	}()
	began := time.Now()
	for i := range runs {
		order := slices.Clone(clients)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			b, err := NewBrowser(ctx)
			if err != nil {
				return nil, err
			}
			pages = append(pages, &running{memoryPage{client: c, page: i + 1}, b})
			if _, _, err := b.Settle(); err != nil {
				return nil, err
			}
			if _, err := chromedp.Call(b.Ctx, performance.Enable, performance.EnableParams{}); err != nil {
				return nil, fmt.Errorf("failed to enable Performance: %w", err)
			}
			if err := b.Navigate(base[c] + "/bench.html"); err != nil {
				return nil, err
			}
			if err := WaitJS(b, "window.__bench && window.__bench.n > 0", benchFirstUpdateWait); err != nil {
				return nil, fmt.Errorf("%s page %d: no update: %w", c, i+1, err)
			}
		}
	}
	start := time.Now()
	t.Logf("memory phase: %d pages running together (started over %v); samples at %v and %v", n, start.Sub(began).Round(100*time.Millisecond), memorySampleAt, d)
	for _, at := range []time.Duration{memorySampleAt, d} {
		browserRuns(time.Until(start.Add(at))) // the pages run until the sample's moment
		for _, p := range pages {
			s, err := sampleMemory(p.b)
			if err != nil {
				return nil, fmt.Errorf("%s page %d at %v: %w", p.client, p.page, at, err)
			}
			s.at = time.Since(start)
			if at == memorySampleAt {
				p.early = s
			} else {
				p.late = s
			}
		}
	}
	var out []memoryPage
	for _, p := range pages {
		p.rate = float64(p.late.updates-p.early.updates) / (p.late.at - p.early.at).Seconds()
		t.Logf("memory phase: %s page %d: at %v PSS %.1f, JS heap %.2f (%.2f after GC), wasm %.1f MiB; at %v PSS %.1f, JS heap %.2f (%.2f after GC), wasm %.1f MiB; %.0f updates/s between",
			p.client, p.page, p.early.at.Round(100*time.Millisecond), p.early.pss, p.early.heap, p.early.live, p.early.wasm,
			p.late.at.Round(100*time.Millisecond), p.late.pss, p.late.heap, p.late.live, p.late.wasm, p.rate)
		out = append(out, p.memoryPage)
	}
	return out, nil
}

// sampleMemory reads b's page's memory: PSS, the JS heap and the wasm's
// memory first, then a full GC and the heap after it.
func sampleMemory(b *Browser) (memorySample, error) {
	var s memorySample
	m, err := metrics(b)
	if err != nil {
		return s, err
	}
	type page struct {
		N    int64    `json:"n"`
		Wasm *float64 `json:"wasm"`
	}
	p, err := Eval[page](b, "({ n: __bench.n, wasm: __bench.wasm() })")
	if err != nil {
		return s, err
	}
	s.pss, s.heap, s.wasm, s.updates = rendererPSS(b), m["JSHeapUsedSize"]/(1<<20), orNaN(p.Wasm)/(1<<20), p.N
	if s.live, err = heapAfterGC(b); err != nil {
		return s, err
	}
	return s, nil
}

// memoryCols are the memory table's figures, early is at memorySampleAt
// and late at the phase's end (named by it).
func memoryCols(d time.Duration) []benchCol[memoryPage] {
	e, l := fmtShort(memorySampleAt), fmtShort(d)
	fig := []struct {
		name string
		val  func(s memorySample) float64
		prec int
	}{
		{"PSS MiB", func(s memorySample) float64 { return s.pss }, 1},
		{"JS heap MiB", func(s memorySample) float64 { return s.heap }, 2},
		{"after GC MiB", func(s memorySample) float64 { return s.live }, 2},
		{"wasm MiB", func(s memorySample) float64 { return s.wasm }, 1},
	}
	var cols []benchCol[memoryPage]
	for _, f := range fig {
		cols = append(cols,
			benchCol[memoryPage]{f.name + " " + e, func(p memoryPage) float64 { return f.val(p.early) }, f.prec},
			benchCol[memoryPage]{f.name + " " + l, func(p memoryPage) float64 { return f.val(p.late) }, f.prec},
			benchCol[memoryPage]{f.name + " growth", func(p memoryPage) float64 { return f.val(p.late) - f.val(p.early) }, f.prec})
	}
	return append(cols, benchCol[memoryPage]{"updates/s", func(p memoryPage) float64 { return p.rate }, 0})
}

// memoryTable is the memory phase's section: every page at both samples,
// the growth between them, the medians per client and the ratios.
func memoryTable(rate int, d time.Duration, pages []memoryPage, clients []string) string {
	var s strings.Builder
	n := 0
	if len(clients) > 0 {
		n = len(pages) / len(clients)
	}
	first, last := time.Duration(math.MaxInt64), time.Duration(0)
	for _, p := range pages {
		first, last = min(first, p.early.at), max(last, p.late.at)
	}
	fmt.Fprintf(&s, "\n### Memory over %s at %d updates a second\n\nEach client's pages at once (%d of each), each in its own fresh Chromium, all running together: memory is not sensitive to CPU contention the way the per-update figures above are, so the pages share the CPUs (their CPU figures are not taken). Each page sampled at %s (from %.1f s) and at %s (to %.1f s) after all were running: the renderer's PSS, JSHeapUsedSize, JSHeapUsedSize after a full GC (HeapProfiler.collectGarbage, which the %s sample also made) and the wasm's memory (its buffer's byteLength: it never shrinks). PSS splits each shared page among the processes that map it, and here several Chromiums map the same files, so it reads lower than in the window's table above (one Chromium at a time): compare the clients within this table. Growth is the later sample less the earlier (no ratio: a difference); ratios are wsready over centrifuge-js (the pages ran together, so the pairs are page k beside page k).\n",
		fmtShort(d), rate, n, fmtShort(memorySampleAt), first.Seconds(), fmtShort(d), last.Seconds(), fmtShort(memorySampleAt))
	s.WriteString(benchTable("", "page", pages, func(p memoryPage) string { return p.client }, memoryCols(d), clients))
	return s.String()
}

// fmtShort is d as "20s", "5m", "1m30s".
func fmtShort(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
