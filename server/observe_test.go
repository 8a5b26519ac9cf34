//go:build !js

package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready"
	"github.com/wsready/wsready/protocol"
)

// failingHistory is the memory History whose Append fails while down is
// set, as JetStream's does while NATS is away. A fake, because the point
// is the logging and it must be deterministic: the real outage is tested
// with a real NATS elsewhere.
type failingHistory struct {
	History
	down atomic.Bool
}

var errNATSDown = errors.New("nats: no responders available for request")

func (h *failingHistory) Append(ctx context.Context, topic string, data []byte, create bool) (int64, error) {
	if h.down.Load() {
		return 0, errNATSDown
	}
	return h.History.Append(ctx, topic, data, create)
}

func scrapeMetrics(t *testing.T, f *fixture) string {
	t.Helper()
	return getText(t, f.hs.URL+"/metrics")
}

// While NATS was down every failed publish once logged a WARN line
// (515 in 10 s for one publisher at 50/s). Now a run of failures logs one
// line when it starts and one when a publish is stored again, from
// clients and Server.Publish alike, and /metrics counts every failure.
func TestPublishFailuresLogOnceAndAreCounted(t *testing.T) {
	h := &failingHistory{History: NewMemoryHistory(Retention{MaxMsgs: 100, MaxBytes: 1 << 20, MaxAge: time.Hour}, 16, time.Now)}
	f := newFixture(t, &Options{History: h, Publish: true}, DemoOptions{NoFeed: true})
	var logs logBuf
	f.srv.log = slog.New(slog.NewTextHandler(&logs, nil)) // info, as without -v
	p := f.dial()
	id := uint64(0)
	pub := func() protocol.Message {
		id++
		p.send(protocol.Message{Type: protocol.TypePublish, ID: id, Topic: "news", Data: []byte(`{"n":1}`)})
		for {
			if m := p.next(protocol.TypeResponse, 2*time.Second); m.ID == id {
				return m
			}
		}
	}
	ctx := context.Background()
	if m := pub(); m.Error != nil {
		t.Fatalf("publish before the outage: %+v", m)
	}

	h.down.Store(true)
	for range 30 {
		if m := pub(); m.Error == nil || m.Error.Code != protocol.ErrUnavailable {
			t.Fatalf("publish while down: %+v", m)
		}
	}
	for range 10 {
		if _, err := f.srv.Publish(ctx, "news", []byte(`2`)); !errors.Is(err, errNATSDown) {
			t.Fatalf("Server.Publish while down: %v", err)
		}
	}
	if n := strings.Count(logs.String(), "level="); n != 1 || !strings.Contains(logs.String(), `level=WARN msg="publishes not stored: the history backend failed" cause="history backend error"`) {
		t.Fatalf("40 failed publishes logged %d lines, want one WARN:\n%s", n, logs.String())
	}
	if m := scrapeMetrics(t, f); !strings.Contains(m, "\nwsready_publish_failures_total 40\n") {
		t.Fatalf("metrics lack wsready_publish_failures_total 40:\n%s", grepLines(m, "publish"))
	}

	h.down.Store(false)
	for range 3 {
		if m := pub(); m.Error != nil {
			t.Fatalf("publish after the outage: %+v", m)
		}
	}
	if _, err := f.srv.Publish(ctx, "news", []byte(`3`)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `level=INFO msg="publishes stored again" failed=40`) {
		t.Fatalf("recovery logged %q, want one INFO line", lines)
	}

	// A second outage is a new run: one more line.
	h.down.Store(true)
	pub()
	pub()
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Fatalf("a second outage logged %d WARN lines in all, want 2:\n%s", n, logs.String())
	}
	if m := scrapeMetrics(t, f); !strings.Contains(m, "\nwsready_publish_failures_total 42\n") {
		t.Fatalf("metrics lack wsready_publish_failures_total 42:\n%s", grepLines(m, "publish"))
	}
	// Not backend failures: the topic cap, and a caller that gave up.
	h.down.Store(false)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	f.srv.Publish(cctx, "news", []byte(`4`))
	if m := scrapeMetrics(t, f); !strings.Contains(m, "\nwsready_publish_failures_total 42\n") {
		t.Fatalf("a canceled Server.Publish was counted:\n%s", grepLines(m, "publish"))
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// /metrics once lacked the standard Go and process collectors and a
// build-info metric.
func TestMetricsHaveRuntimeProcessAndBuildInfo(t *testing.T) {
	f := newFixture(t, &Options{})
	text := scrapeMetrics(t, f)
	want := []string{`(?m)^go_goroutines \d+$`, `(?m)^go_build_info\{.*\} 1$`, `(?m)^go_memstats_heap_alloc_bytes \d`,
		`(?m)^wsready_build_info\{version="` + regexp.QuoteMeta(wsready.Version) + `"\} 1$`}
	if runtime.GOOS == "linux" {
		want = append(want, `(?m)^process_resident_memory_bytes \d`, `(?m)^process_open_fds \d+$`)
	}
	for _, re := range want {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("metrics lack %s", re)
		}
	}
}

// A refused origin was once not logged even with -v. It is logged at
// debug level, without the origin (the peer's text) or an address.
func TestRefusedOriginIsLoggedAtDebug(t *testing.T) {
	f := newFixture(t, &Options{})
	var logs logBuf
	f.srv.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const evil = "https://evil-CANARY.example"
	req, _ := http.NewRequest("GET", f.hs.URL+"/ws", nil)
	req.Header.Set("Origin", evil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d: the refusal is a 1008 after the upgrade", resp.StatusCode)
	}
	post, _ := http.NewRequest("POST", f.hs.URL+"/api/reset", strings.NewReader(`{}`))
	post.Header.Set("Origin", evil)
	post.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(post); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	waitFor(t, 2*time.Second, "the log lines", func() bool { return strings.Count(logs.String(), "\n") >= 2 })
	got := logs.String()
	if !strings.Contains(got, `level=DEBUG msg="websocket origin refused"`+"\n") ||
		!strings.Contains(got, `level=DEBUG msg="cross-origin request refused"`+"\n") {
		t.Fatalf("logs:\n%s", got)
	}
	if strings.Contains(got, "CANARY") || strings.Contains(got, "127.0.0.1") {
		t.Fatalf("the origin or an address reached the logs:\n%s", got)
	}
}
