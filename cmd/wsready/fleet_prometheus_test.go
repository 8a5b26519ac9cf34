//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/storm"
)

// A real Prometheus (Debian's prometheus package, make promtool installs
// it) scrapes three wsready nodes on one NATS every second while
// `wsready storm` restarts each of them with 300 stage 6 clients: the
// time to READY that histogram_quantile reads from the fleet's summed
// buckets is within 10% of what the clients measured themselves (p50 and
// p99, pooled over the three storms), every recovery is counted once,
// and the storm alert (WsreadyReconnectSuccessLow: fewer than one attempt
// in two succeeds), evaluated by Prometheus from the shipped rules with
// their windows and for: durations shortened, fires during the storm and
// resolves after it; and each node's fleet page (-fleet) shows the
// quantiles Prometheus reads from that node's buckets. About 80 s: make fleet-test runs it
// (WSREADY_FLEET=1); without the prometheus binary it skips, unless
// WSREADY_REQUIRE_PROMTOOL is set.
func TestPrometheusSeesTheStormTheClientsMeasured(t *testing.T) {
	if os.Getenv("WSREADY_FLEET") == "" {
		t.Skip("about 80 s of a three-node storm under a real Prometheus: make fleet-test (WSREADY_FLEET=1) runs it")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("WSREADY_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("prometheus not found (make promtool installs Debian's prometheus package): %v", err)
		}
		t.Skip("prometheus not found: make promtool installs it (WSREADY_REQUIRE_PROMTOOL makes this a failure)")
	}
	ns, err := natsembed.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	// No reconnect slots and a slow admission: the clients of a Restart
	// retry against the refusals on their own backoff, a storm of
	// attempts the alert is for.
	common := []string{"-nats", ns.ClientURL(), "-demo", "-restart-downtime", "3s", "-slots=false",
		"-admit-rate", "60", "-admit-burst", "10", "-max-conns-per-ip", "2000", "-tenant-rate", "2000", "-tenant-burst", "2000", "-fleet"}
	nodes := make([]*node, 3)
	targets := make([]string, 3)
	for i := range nodes {
		nodes[i] = startNode(t, freeAddr(t), append(common, "-node", "node"+strconv.Itoa(i+1), "-feed-leader="+strconv.FormatBool(i == 0))...)
		targets[i] = nodes[i].addr
	}
	prom := startPrometheus(t, promBin, targets)

	// The alert's life, seen from Prometheus's /api/v1/alerts every 250 ms
	// until the watcher is stopped (below, or at the latest when the test
	// ends).
	const alert = "WsreadyReconnectSuccessLow"
	var mu sync.Mutex
	var firedAt, resolvedAt time.Time
	others := map[string]bool{}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	defer func() { stopWatch(); <-watched }()
	go func() {
		defer close(watched)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-tick.C:
			}
			firing, err := prom.firing()
			if err != nil {
				continue // Prometheus answers again on the next tick; the waits below bound it
			}
			mu.Lock()
			for _, a := range firing {
				others[a] = true
			}
			switch {
			case firedAt.IsZero() && slices.Contains(firing, alert):
				firedAt = time.Now()
			case !firedAt.IsZero() && resolvedAt.IsZero() && !slices.Contains(firing, alert):
				resolvedAt = time.Now()
			}
			mu.Unlock()
		}
	}()

	const perNode = 300
	reps := make([]storm.Report, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	stormStart := time.Now()
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			reps[i], errs[i] = storm.Run(ctx, storm.Config{URL: n.url(), Clients: perNode, Stage: 6, Trigger: "restart",
				Settle: 3 * time.Second, Duration: 60 * time.Second, Sources: 4, Connect: time.Minute, Seed: uint64(i + 1)})
		}()
	}
	wg.Wait()
	var pooled []time.Duration
	attempts := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("storm on node %d: %v", i+1, err)
		}
		if reps[i].ReadyAtEnd != perNode {
			t.Fatalf("storm on node %d: %d of %d clients READY at the end", i+1, reps[i].ReadyAtEnd, perNode)
		}
		pooled = append(pooled, reps[i].RecoveryTimes...)
		attempts += reps[i].Attempts
	}
	if len(pooled) < len(nodes)*perNode {
		t.Fatalf("the clients measured %d recoveries, want at least %d (one each)", len(pooled), len(nodes)*perNode)
	}
	t.Logf("storms done after %v: %d recoveries, %d handshakes (%.2f per recovery)", time.Since(stormStart).Round(time.Second),
		len(pooled), attempts, float64(attempts)/float64(len(pooled)))

	// Every report scraped: the fleet's count is the clients'.
	count := `sum(wsready_client_ready_seconds_count{kind="recovery"})`
	var got float64
	if !eventually(20*time.Second, func() bool {
		got, err = prom.query(count)
		return err == nil && got == float64(len(pooled))
	}) {
		t.Fatalf("%s = %v (%v), the clients measured %d recoveries", count, got, err, len(pooled))
	}
	for _, q := range []float64{0.50, 0.99} {
		want := storm.Quantile(pooled, q).Seconds()
		expr := fmt.Sprintf(`histogram_quantile(%v, sum by (le) (wsready_client_ready_seconds_bucket{kind="recovery"}))`, q)
		got, err := prom.query(expr)
		if err != nil {
			t.Fatal(err)
		}
		off := got/want - 1
		t.Logf("p%v time to READY: Prometheus %.3f s, the clients %.3f s (%+.1f%%)", q*100, got, want, off*100)
		if math.Abs(off) > 0.10 {
			t.Errorf("p%v: Prometheus says %.3f s, the clients measured %.3f s: %+.1f%%, over 10%%", q*100, got, want, off*100)
		}
	}
	// Each node's fleet page reads its own buckets as Prometheus does.
	for _, n := range nodes {
		var st server.FleetStats
		if err := getJSON("http://"+n.addr+"/fleet/fleet.json", &st); err != nil {
			t.Fatal(err)
		}
		for q, got := range map[float64]*float64{0.50: st.Recovery.P50Seconds, 0.99: st.Recovery.P99Seconds} {
			want, err := prom.query(fmt.Sprintf(`histogram_quantile(%v, sum by (le) (wsready_client_ready_seconds_bucket{kind="recovery",instance=%q}))`, q, n.addr))
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || math.Abs(*got-want) > 1e-9 {
				t.Errorf("%s's fleet page: p%v %v, Prometheus reads %v from its buckets", n.addr, q*100, got, want)
			}
		}
	}
	// Fired during the storm, resolved once its window passed.
	if !eventually(90*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !resolvedAt.IsZero()
	}) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s: fired at %v, not resolved within 90 s (alerts seen: %v)", alert, firedAt, others)
	}
	stopWatch()
	<-watched
	t.Logf("%s fired %v after the storms started, resolved %v after that (alerts seen: %v)", alert,
		firedAt.Sub(stormStart).Round(100*time.Millisecond), resolvedAt.Sub(firedAt).Round(100*time.Millisecond), others)
}

// prometheus is a Prometheus server the test runs.
type prometheus struct {
	base string // http://127.0.0.1:port
}

// fleetRules are the shipped rules with their windows made seconds, so
// that a storm of a minute fires and resolves them: each replacement must
// match, so a change to the shipped file's shape fails here rather than
// testing something else.
func fleetRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/deploy/prometheus/wsready.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{
		{"interval: 1m", "interval: 1s"},
		{"[5m]", "[15s]"},
		{"[15m]", "[15s]"},
		{"offset 1h", "offset 1m"},
		{"for: 5m", "for: 2s"},
		{"for: 10m", "for: 2s"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("the shipped rules hold no %q to shorten", r[0])
		}
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// startPrometheus runs Prometheus on loopback with a temp data directory,
// scraping targets every second and evaluating the fleet rules every
// second, and waits until it is ready. It is killed when the test ends.
func startPrometheus(t *testing.T, bin string, targets []string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(fleetRules(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: wsready
    static_configs:
      - targets: ["%s"]
`, strings.Join(targets, `", "`))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			t.Logf("the last lines of prometheus:\n%s", strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
	})
	p := &prometheus{base: "http://" + addr}
	if !eventually(30*time.Second, func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatal("prometheus not ready within 30 s")
	}
	// All three targets up before the storm.
	if !eventually(30*time.Second, func() bool {
		v, err := p.query(`sum(up{job="wsready"})`)
		return err == nil && v == float64(len(targets))
	}) {
		t.Fatal("prometheus does not see the three nodes up within 30 s")
	}
	return p
}

var promClient = &http.Client{Timeout: 5 * time.Second}

// query evaluates an instant PromQL expression whose result is one
// sample (a scalar, or a vector of one element).
func (p *prometheus) query(expr string) (float64, error) {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(expr), &body); err != nil {
		return 0, err
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("failed to query %s: %s", expr, body.Error)
	}
	var vec []struct {
		Value [2]any `json:"value"`
	}
	if err := json.Unmarshal(body.Data.Result, &vec); err != nil || len(vec) != 1 {
		return 0, fmt.Errorf("failed to query %s: want one sample, got %s", expr, body.Data.Result)
	}
	s, _ := vec[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// firing names the alerts Prometheus has firing now.
func (p *prometheus) firing() ([]string, error) {
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/alerts", &body); err != nil {
		return nil, err
	}
	var names []string
	for _, a := range body.Data.Alerts {
		if a.State == "firing" {
			names = append(names, a.Labels["alertname"])
		}
	}
	return names, nil
}

func (p *prometheus) get(path string, v any) error {
	resp, err := promClient.Get(p.base + path)
	if err != nil {
		return fmt.Errorf("failed to ask prometheus: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("failed to read prometheus's answer: %w", err)
	}
	return nil
}

// The fleet page is off unless -fleet: without it /fleet/ is the demo
// site's 404; with it the page and its JSON are served.
func TestServeFleetPageIsOffByDefault(t *testing.T) {
	off := startNode(t, freeAddr(t))
	on := startNode(t, freeAddr(t), "-fleet")
	for _, c := range []struct {
		n    *node
		path string
		want int
	}{
		{off, "/fleet/", http.StatusNotFound}, {off, "/fleet/fleet.json", http.StatusNotFound},
		{on, "/fleet/", http.StatusOK}, {on, "/fleet/fleet.json", http.StatusOK}, {on, "/fleet/nope", http.StatusNotFound},
	} {
		resp, err := http.Get("http://" + c.n.addr + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s on %s: %s, want %d", c.path, c.n.what, resp.Status, c.want)
		}
	}
	var st server.FleetStats
	if err := getJSON("http://"+on.addr+"/fleet/fleet.json", &st); err != nil || !strings.HasSuffix(st.Node, on.addr[strings.LastIndex(on.addr, ":"):]) || st.Recovery.P50Seconds != nil {
		t.Errorf("fleet.json of a fresh node: %+v, %v", st, err)
	}
}
