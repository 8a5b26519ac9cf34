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

func startAuthServer(t *testing.T, life time.Duration) string {
	t.Helper()
	srv, err := server.New(&server.Options{
		Demo: true, Auth: server.AuthRequired, TicketLife: life, TicketRate: 10000, TicketBurst: 10000,
		PingInterval: time.Second,
		AdmitRate:    1000, AdmitBurst: 100, TenantRate: 10000, TenantBurst: 10000, MaxConnsPerIP: 10000,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	dm, err := demo.New(srv, nil, &demo.Options{FeedInterval: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(dm.Handler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return "ws://" + ln.Addr().String() + "/ws"
}

// The refresh run in small (make refresh-storm runs 5,000 clients for 5
// minutes): 20 clients with 1 s tickets watched for 3 s make no handshake
// with in-band refresh and about one per client per second without it.
func TestStormTokenExpiries(t *testing.T) {
	if testing.Short() {
		t.Skip("two 3 s runs")
	}
	run := func(off bool) Report {
		rep, err := Run(context.Background(), Config{URL: startAuthServer(t, time.Second), Clients: 20, Stage: 8, Trigger: "none",
			Duration: 3 * time.Second, Sources: 2, Connect: 10 * time.Second, Seed: 1, Tokens: true, NoInBandRefresh: off, Watch: true})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	on := run(false)
	if on.Attempts != 0 || on.Expiries != 0 || on.Refreshes < 20*2 || on.ReadyAtEnd != 20 {
		t.Errorf("refresh on: %d handshakes, %d expiries, %d refreshes, %d READY at the end; want 0, 0, at least 40, 20", on.Attempts, on.Expiries, on.Refreshes, on.ReadyAtEnd)
	}
	off := run(true)
	if off.Attempts < 20*2 || off.Expiries < 20*2 || off.Refreshes != 0 {
		t.Errorf("refresh off: %d handshakes, %d expiries, %d refreshes; want about 60, 60, 0", off.Attempts, off.Expiries, off.Refreshes)
	}
}
