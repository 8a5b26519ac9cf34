//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// traceCategories are what a page load's trace records: the main thread's
// tasks (devtools.timeline), V8 and its wasm compile (v8, v8.wasm), the
// page's marks (blink.user_timing) and the loading of each resource.
var traceCategories = []string{"devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "v8.wasm", "disabled-by-default-v8.compile", "blink", "blink.user_timing", "loading", "toplevel", "navigation"}

// TestTraceLoad records Chromium's trace of one cold load of the demo to
// READY and writes it where WSREADY_TRACE says, as Chrome's JSON trace
// format (open it in https://ui.perfetto.dev or chrome://tracing): where
// each gap of TestMeasureLoad's breakdown goes, task by task. The stage is
// WSREADY_TRACE_STAGE (7 unless set); WSREADY_TRACE_SLOW=1 loads it over
// the emulated 10 Mbit/s, 40 ms link. Tracing slows the load itself by
// about a third: the trace says where the time goes, not how much there is.
//
//	make build && cd e2e && WSREADY_TRACE=/tmp/load.json go test -count=1 -run TestTraceLoad -v ./...
func TestTraceLoad(t *testing.T) {
	out := os.Getenv("WSREADY_TRACE")
	if out == "" {
		t.Skip("set WSREADY_TRACE=file.json to record a page load's trace")
	}
	stage := 7
	if s := os.Getenv("WSREADY_TRACE_STAGE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 8 {
			t.Fatalf("WSREADY_TRACE_STAGE=%q: want a stage, 0 to 8", s)
		}
		stage = n
	}
	slow := false
	switch v := os.Getenv("WSREADY_TRACE_SLOW"); v {
	case "", "0":
	case "1":
		slow = true
	default:
		t.Fatalf("WSREADY_TRACE_SLOW=%q: want 1 (the slow link) or 0", v)
	}
	env, err := StartServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	b, err := NewBrowser(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := b.Settle(); err != nil { // as TestMeasureLoad's loads do
		t.Fatal(err)
	}
	if slow {
		if err := b.Throttle(TenMbit40ms.Latency, TenMbit40ms.BytesPerSec); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var events []json.RawMessage
	complete := make(chan struct{})
	var once sync.Once
	chromedp.Listen(b.Ctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			defer mu.Unlock()
			for _, v := range e.Value {
				if raw, err := json.Marshal(v); err == nil {
					events = append(events, raw)
				}
			}
		case *tracing.EventTracingComplete:
			once.Do(func() { close(complete) })
		}
	})
	if _, err := chromedp.Call(b.Ctx, tracing.Start, tracing.StartParams{
		TraceConfig:  &tracing.TraceConfig{IncludedCategories: traceCategories},
		TransferMode: tracing.StartTransferModeReportEvents,
	}); err != nil {
		t.Fatalf("failed to start tracing: %v", err)
	}
	if err := b.Navigate(fmt.Sprintf("%s/?stage=%d", env.Base, stage)); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "performance.getEntriesByName('wsready:ready').length > 0", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.Ctx, tracing.End, cdp.Empty{}); err != nil {
		t.Fatalf("failed to end tracing: %v", err)
	}
	select {
	case <-complete:
	case <-time.After(30 * time.Second):
		t.Fatal("the trace did not complete within 30 s")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 {
		t.Fatal("the trace holds no events")
	}
	body, err := json.Marshal(map[string]any{"traceEvents": events})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, body, 0o644); err != nil {
		t.Fatalf("failed to write %s: %v", out, err)
	}
	t.Logf("%d trace events of a cold stage %d load to READY in %s", len(events), stage, out)
}
