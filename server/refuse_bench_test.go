//go:build !js

package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The cost of turning a handshake away, both ways, client and server in
// this process on loopback: ns/op is wall time per refusal, cpu-us/op the
// process's CPU (user + system) per refusal, refusals/s the throughput of
// one dialer. make bench-refuse runs it.
func benchRefuse(b *testing.B, mode RefuseMode) {
	srv := mustNew(b, &Options{AdmitRate: 0.001, AdmitBurst: 1, TenantRate: 1e9, TenantBurst: 1e9, RefuseWith: mode, Logger: discard()})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	ws, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPClient: hc}) // the one token
	if err != nil {
		b.Fatal(err)
	}
	defer ws.CloseNow()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	b.ResetTimer()
	for b.Loop() {
		c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPClient: hc})
		if mode == RefuseHTTP {
			if err == nil {
				b.Fatal("admitted")
			}
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Read(context.Background()); websocket.CloseStatus(err) != 1013 {
			b.Fatalf("not refused with 1013: %v", err)
		}
		c.CloseNow()
	}
	b.StopTimer()
	el := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime)-syscall.TimevalToNsec(ru0.Utime)) +
		time.Duration(syscall.TimevalToNsec(ru1.Stime)-syscall.TimevalToNsec(ru0.Stime))
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(b.N)/el.Seconds(), "refusals/s")
}

func BenchmarkRefuseHTTP(b *testing.B)  { benchRefuse(b, RefuseHTTP) }
func BenchmarkRefuseClose(b *testing.B) { benchRefuse(b, RefuseClose) }
