//go:build !js

package storm

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

func startServer(t *testing.T, noSlots bool) string {
	t.Helper()
	srv, err := server.New(&server.Options{
		Demo: true, PingInterval: time.Second,
		AdmitRate: 100, AdmitBurst: 20, TenantRate: 10000, TenantBurst: 10000, MaxConnsPerIP: 10000, NoSlots: noSlots,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	dm, err := demo.New(srv, nil, &demo.Options{FeedInterval: 5 * time.Second, RestartDowntime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(dm.Handler()) // storm flips Restart through /api/faults
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return "ws://" + ln.Addr().String() + "/ws"
}

// The CI-sized storm: 300 stage 6 clients, a 2 s Restart, admission
// 100/s. With reconnect slots no second sees more than the admission rate
// plus 10% and every client is READY again, with about one attempt each;
// without slots the first second after the restart is over it.
func TestStormShape(t *testing.T) {
	if testing.Short() {
		t.Skip("a storm takes about 20 s")
	}
	run := func(noSlots bool) Report {
		rep, err := Run(context.Background(), Config{URL: startServer(t, noSlots), Clients: 300, Stage: 6, Trigger: "restart",
			Settle: time.Second, Duration: 20 * time.Second, Sources: 4, Connect: 30 * time.Second, Seed: 1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	with := run(false)
	t.Logf("with slots: peak %d/s at %d s, %d attempts, all READY at %v ms", with.PeakAttempts, with.PeakSecond, with.Attempts, ms(with.T100Ms))
	if with.PeakAttempts > 110 || with.T100Ms == nil || with.ReadyAtEnd != 300 || with.AttemptsPer > 1.3 {
		t.Errorf("with slots: %+v", with)
	}
	// Each client recovered once, and none before the server accepted
	// again (the 2 s downtime) nor after the fleet was all READY.
	if with.Recoveries != 300 || len(with.RecoveryTimes) != 300 || with.RecoveryP50Ms < 2000 || with.T100Ms == nil ||
		with.RecoveryP99Ms > float64(*with.T100Ms) || with.RecoveryP50Ms > with.RecoveryP99Ms {
		t.Errorf("with slots, the clients' recoveries: %d (%d times), p50 %v ms, p99 %v ms, all READY at %v ms",
			with.Recoveries, len(with.RecoveryTimes), with.RecoveryP50Ms, with.RecoveryP99Ms, ms(with.T100Ms))
	}
	without := run(true)
	t.Logf("without slots: peak %d/s at %d s, %d attempts, all READY at %v ms", without.PeakAttempts, without.PeakSecond, without.Attempts, ms(without.T100Ms))
	if without.PeakAttempts <= 110 {
		t.Errorf("without slots the peak stayed at %d/s: the test shows nothing", without.PeakAttempts)
	}
}

func ms(p *int64) any {
	if p == nil {
		return "never"
	}
	return *p
}

// Quantile is nearest-rank: the smallest value with at least q of them
// at or below it.
func TestQuantileIsNearestRank(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for q, want := range map[float64]time.Duration{0.5: 5, 0.99: 10, 0.1: 1, 0.11: 2, 1: 10} {
		if got := Quantile(ds, q); got != want {
			t.Errorf("q %v: %v, want %v", q, got, want)
		}
	}
	if got := Quantile(nil, 0.5); got != 0 {
		t.Errorf("none: %v, want 0", got)
	}
}
