//go:build !js

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxyIdleHold is how long TestMeasureProxyIdle leaves each connection
// idle: more than three of the proxies' 60 s read timeouts.
const proxyIdleHold = 200 * time.Second

// TestMeasureProxyIdle is TestProxyIdleOutlivesReadTimeout at full size:
// the proxy's read timeout at 60 s (nginx's default proxy_read_timeout),
// the server at its defaults (25 s pings, the sweep every 10 s with 5 s
// grace), each connection idle for proxyIdleHold: through nginx over
// WebSocket and over the HTTP transport (its stream), and through
// HAProxy over WebSocket, in parallel (go test's -parallel: two at a time
// on two CPUs). Each must keep its one
// connection (no dial, no handshake, READY throughout); it writes the
// table into docs/measured/measurements.md (its own section). make
// measure runs it; alone (about 4 minutes):
//
//	make build proxies && cd e2e && WSREADY_MEASURE=1 go test -count=1 -run TestMeasureProxyIdle -v ./...
func TestMeasureProxyIdle(t *testing.T) {
	if os.Getenv("WSREADY_MEASURE") == "" {
		t.Skip("set WSREADY_MEASURE=1 (make measure) to hold idle connections through the proxies for 200 s")
	}
	type result struct {
		bin, via, version string
		dials, handshakes float64
		left, ran         bool
		closes            []string
	}
	runs := []*result{{bin: "nginx", via: "websocket"}, {bin: "nginx", via: "http"}, {bin: "haproxy", via: "websocket"}}
	loadAtStart := loadAverage()
	started := time.Now().UTC()
	var mu sync.Mutex
	t.Run("group", func(t *testing.T) {
		for _, r := range runs {
			t.Run(r.bin+"-"+r.via, func(t *testing.T) {
				t.Parallel()
				requireProxy(t, r.bin)
				d, h, left, closes := idleCloses(t, r.bin, r.via, "60s", 0, 0, 0, proxyIdleHold)
				mu.Lock()
				r.dials, r.handshakes, r.left, r.ran, r.closes = d, h, left, true, closes
				mu.Unlock()
				t.Logf("through %s over %s, 60 s read timeout, 25 s pings, %v idle: %v dials, %v handshakes, left READY: %v", r.bin, r.via, proxyIdleHold, d, h, left)
				if d != 0 || h != 0 || left {
					t.Errorf("the idle connection did not survive: %v dials, %v handshakes, left READY %v; want none", d, h, left)
				}
			})
		}
	})
	var md strings.Builder
	fmt.Fprintf(&md, "## Idle through a proxy's 60 s read timeout at 25 s pings\n\nMade by `make build proxies && cd e2e && WSREADY_MEASURE=1 go test -count=1 -run TestMeasureProxyIdle -v ./...` (make measure runs it too) on %s, %s, %s, %d CPUs shared with other work. docs/deploy's nginx.conf and haproxy.cfg as the browser suite runs them (e2e/proxy_test.go), their read timeouts set to 60 s (nginx's default `proxy_read_timeout`; the files say 75 s), in front of a server at its defaults (25 s pings, the sweep every 10 s with 5 s grace) without the feed, so nothing but the pings crosses; a headless Chromium page at `?stage=8` through each, READY, then left idle for %v; each with its own server, proxy and browser, two at a time. The browser suite (`make test`) runs the same at a proportional 6 s timeout, 2.5 s pings and a 1 s sweep, with a control whose pings are above the timeout and lose the connection.\n\n",
		started.Format(time.RFC3339), runtime.Version(), chromiumVersion(), runtime.NumCPU(), proxyIdleHold)
	md.WriteString("| proxy | transport | read timeout | pings | idle | dials | handshakes (sessions) | left READY | the page's closes |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		if !r.ran {
			fmt.Fprintf(&md, "| %s %s | %s | 60 s | 25 s | did not finish | | | | |\n", r.bin, proxyVersion(r.bin), r.via)
			continue
		}
		via := "WebSocket"
		if r.via == "http" {
			via = "HTTP (event stream)"
		}
		closes := strings.Join(r.closes, "; ")
		if closes == "" {
			closes = "none"
		}
		fmt.Fprintf(&md, "| %s %s | %s | 60 s | 25 s | %v | %v | %v | %v | %s |\n", r.bin, proxyVersion(r.bin), via, proxyIdleHold, r.dials, r.handshakes, yesNo(r.left), closes)
	}
	fmt.Fprintf(&md, "\nThe machine's load average (1 min) was %s when this started and %s when it ended.\n", loadAtStart, loadAverage())
	t.Log("\n" + md.String())
	if err := writeSection("../docs/measured/measurements.md", proxyIdleBegin, proxyIdleEnd, md.String()); err != nil {
		t.Fatal(err)
	}
}

// proxyVersion is bin's version as it reports it ("1.22.1"), or "".
func proxyVersion(bin string) string {
	out, err := exec.Command(bin, "-v").CombinedOutput() // nginx -v and haproxy -v both print it
	if err != nil {
		return ""
	}
	s := string(out)
	for _, pre := range []string{"nginx/", "version "} {
		if i := strings.Index(s, pre); i >= 0 {
			f := strings.Fields(s[i+len(pre):])
			if len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
