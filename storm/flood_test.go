//go:build !js

package storm

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/server"
)

func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// One address flooding handshakes is shed by its own tenant limit and does
// not starve the others: 50 well-behaved stage 6 clients from another
// address all get READY, those refused at their slots.
func TestAFloodIsShedWithoutStarvingOthers(t *testing.T) {
	srv, err := server.New(&server.Options{AdmitRate: 200, AdmitBurst: 40, TenantRate: 20, TenantBurst: 40,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(srv.Handler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer func() { srv.Close(); hs.Close() }()
	url := "ws://" + ln.Addr().String() + "/ws"

	ctx, stop := context.WithTimeout(context.Background(), 8*time.Second)
	defer stop()
	var flood sync.WaitGroup
	var tries atomic.Int64
	flooder := fromAddr("127.0.0.2")
	for range 8 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			for ctx.Err() == nil && tries.Add(1) <= 20000 {
				ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: flooder})
				if err == nil {
					ws.CloseNow()
				}
			}
		}()
	}
	// The flood is on: the ceiling has refused some of it (5 s at most).
	pollUntil(5*time.Second, func() bool { return srv.Stats().Limits.RefusedRate > 0 })

	good := fromAddr("127.0.0.3")
	var clients []*native.Client
	start := time.Now()
	for range 50 {
		c, err := native.Dial(context.Background(), url, &native.Options{DialOptions: &websocket.DialOptions{HTTPClient: good}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	for _, c := range clients {
		wctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		err := c.WaitReady(wctx)
		cancel()
		if err != nil {
			t.Fatalf("a well-behaved client is not READY %v into a flood: %v (%+v)", time.Since(start), err, c.State())
		}
	}
	took := time.Since(start)
	// On a loaded machine the clients can be READY before the flood has
	// made many attempts: keep it on (the clients stay READY meanwhile)
	// until the ceiling has refused enough to show it sheds, 5 s at most.
	pollUntil(5*time.Second, func() bool { return srv.Stats().Limits.RefusedRate >= 100 })
	stop()
	flood.Wait()
	st := srv.Stats()
	var slotted int
	for _, c := range clients {
		slotted += c.Stats().RetryAftersHonoured
	}
	t.Logf("50 clients READY in %v during a flood of %d handshakes; refused over the ceiling %d; %d waited for their slot",
		took.Round(time.Millisecond), tries.Load(), st.Limits.RefusedRate, slotted)
	if st.Limits.RefusedRate < 100 {
		t.Fatalf("the flood was not shed: %d refused", st.Limits.RefusedRate)
	}
	for _, c := range clients {
		if s := c.State(); !s.Ready || s.Ended != client.NotEnded {
			t.Fatalf("state %+v", s)
		}
	}
}

// pollUntil polls cond every 20 ms until it holds or d passes. Real time
// is the point here: the flood runs over real loopback sockets (the limits
// are per source address, 127.0.0.2 against 127.0.0.3, which an in-memory
// network has not), and the server's counters have no notification.
func pollUntil(d time.Duration, cond func() bool) {
	poll.UntilEvery(d, 20*time.Millisecond, cond)
}
