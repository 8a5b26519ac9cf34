//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
	"github.com/wsready/wsready/storm"
	"github.com/wsready/wsready/web"
)

// The fleet page in Chromium against a storm: 300 real native clients
// (wsready storm's engine) through a Restart of the real server, the page
// at /fleet/ as wsready serve -fleet mounts it. Once the page has polled
// the last report, what it shows is the node's metrics (fleet.json, read
// from the same registry /metrics serves) and within 10% of what the
// clients measured (p50, p99; the count exactly). The screenshot,
// taken while every client is READY again, goes to
// docs/measured/fleet.png. About 40 s: make
// fleet-test runs it (WSREADY_FLEET=1).
func TestFleetPageShowsTheStorm(t *testing.T) {
	if os.Getenv("WSREADY_FLEET") == "" {
		t.Skip("a 300-client storm under the fleet page: make fleet-test (WSREADY_FLEET=1) runs it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(&server.Options{Demo: true, Node: "node1", PingInterval: time.Second,
		AdmitRate: 60, AdmitBurst: 10, MaxConnsPerIP: 2000, TenantRate: 2000, TenantBurst: 2000,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	dm, err := demo.New(srv, web.FS(), &demo.Options{RestartDowntime: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/fleet/", http.StripPrefix("/fleet", srv.FleetHandler())) // as wsready serve -fleet
	mux.Handle("/", dm.Handler())
	hs := srv.HTTPServer(mux)
	go hs.Serve(ln)
	defer func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	}()
	base := "http://" + ln.Addr().String()

	b, err := NewBrowser(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Navigate(base + "/fleet/"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.fleet && fleet.polls > 0", 20*time.Second); err != nil {
		t.Fatal(err)
	}

	const clients = 300
	// The screenshot: while the storm's clients are all READY again (it
	// closes them when it returns), with the dip in the spark lines. The
	// browser is this goroutine's until it is done.
	shot := make(chan error, 1)
	go func() {
		err := WaitJS(b, fmt.Sprintf("fleet.last && fleet.last.recovery.count >= %d && fleet.last.ready >= %d", clients, clients), 90*time.Second)
		if err == nil {
			err = b.Screenshot("../docs/measured/fleet.png")
		}
		shot <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := storm.Run(ctx, storm.Config{URL: "ws" + strings.TrimPrefix(base, "http") + "/ws", Clients: clients, Stage: 6,
		Trigger: "restart", Settle: 3 * time.Second, Duration: 60 * time.Second, Sources: 4, Connect: time.Minute, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-shot; err != nil {
		t.Fatalf("the screenshot with every client READY again: %v", err)
	}
	if rep.ReadyAtEnd != clients || rep.Recoveries < clients {
		t.Fatalf("storm: %d of %d READY at the end, %d recoveries", rep.ReadyAtEnd, clients, rep.Recoveries)
	}
	// The clients closed at the end of the storm: the page's last poll
	// with every recovery counted is the figure to check; wait for it.
	if err := WaitJS(b, fmt.Sprintf("fleet.last && fleet.last.recovery.count >= %d", rep.Recoveries), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "(() => { const f = fleet.last; return f && document.getElementById('f-recoveries').textContent === String(f.recovery.count); })()", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	shownJSON, err := Eval[string](b, `JSON.stringify({last: fleet.last, text: Object.fromEntries(['f-p50','f-p99','f-recoveries','f-attempts','f-ready-share','f-ws','f-sse'].map((id) => [id, document.getElementById(id).textContent]))})`)
	if err != nil {
		t.Fatal(err)
	}
	var shown struct {
		Last server.FleetStats `json:"last"`
		Text map[string]string `json:"text"`
	}
	if err := json.Unmarshal([]byte(shownJSON), &shown); err != nil {
		t.Fatal(err)
	}
	// The page draws what the node's metrics say (recoveries only grow
	// after the storm; the quantiles are of the same reports).
	now := srv.Fleet()
	if now.Recovery.Count != shown.Last.Recovery.Count {
		t.Errorf("the page read %d recoveries, the node counts %d", shown.Last.Recovery.Count, now.Recovery.Count)
	}
	secs := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.2f s", *p)
	}
	for id, want := range map[string]string{
		"f-p50":        secs(now.Recovery.P50Seconds),
		"f-p99":        secs(now.Recovery.P99Seconds),
		"f-recoveries": strconv.Itoa(now.Recovery.Count),
		"f-attempts":   fmt.Sprintf("%.2f", now.Recovery.AttemptsPer),
	} {
		if shown.Text[id] != want {
			t.Errorf("#%s shows %q, the node's metrics say %q", id, shown.Text[id], want)
		}
	}
	// And what the page shows is what the clients measured.
	if now.Recovery.Count != rep.Recoveries {
		t.Errorf("the page counts %d recoveries, the clients %d", now.Recovery.Count, rep.Recoveries)
	}
	for _, c := range []struct {
		name         string
		page, theirs float64
	}{
		{"p50", *now.Recovery.P50Seconds, rep.RecoveryP50Ms / 1000},
		{"p99", *now.Recovery.P99Seconds, rep.RecoveryP99Ms / 1000},
	} {
		off := c.page/c.theirs - 1
		t.Logf("%s time to READY: the page %.3f s, the clients %.3f s (%+.1f%%)", c.name, c.page, c.theirs, off*100)
		if math.Abs(off) > 0.10 {
			t.Errorf("%s: the page shows %.3f s, the clients measured %.3f s: over 10%% apart", c.name, c.page, c.theirs)
		}
	}
	t.Logf("attempts per recovery: the page %s (the server counted %d handshakes for %d recoveries)", shown.Text["f-attempts"], rep.Attempts, rep.Recoveries)
}
