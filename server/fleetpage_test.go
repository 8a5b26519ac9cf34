//go:build !js

package server

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/wsready/wsready/client/native"
)

// histogramQuantile reads buckets as PromQL's histogram_quantile does:
// linear inside the bucket the rank falls in, from 0 in the first, the
// highest finite bound for a rank in +Inf, nothing without observations.
func TestFleetQuantileIsPromQLs(t *testing.T) {
	h := func(count uint64, buckets ...[2]float64) *dto.Histogram {
		out := &dto.Histogram{SampleCount: proto.Uint64(count)}
		for _, b := range buckets {
			out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: proto.Float64(b[0]), CumulativeCount: proto.Uint64(uint64(b[1]))})
		}
		return out
	}
	for _, c := range []struct {
		name string
		q    float64
		h    *dto.Histogram
		want float64 // NaN: nil
	}{
		{"empty", 0.5, h(0, [2]float64{1, 0}, [2]float64{2, 0}), math.NaN()},
		{"first bucket from 0", 0.5, h(10, [2]float64{1, 10}, [2]float64{2, 10}), 0.5},
		{"inside the second", 0.5, h(10, [2]float64{1, 0}, [2]float64{2, 10}), 1.5},
		{"p99 of 100 across two", 0.99, h(100, [2]float64{1, 50}, [2]float64{3, 100}), 1 + 2*(49.0/50)},
		{"rank in +Inf", 0.99, h(10, [2]float64{1, 5}, [2]float64{2, 9}), 2},
		{"unsorted buckets", 0.5, h(10, [2]float64{2, 10}, [2]float64{1, 0}), 1.5},
	} {
		got := histogramQuantile(c.q, c.h)
		switch {
		case math.IsNaN(c.want) && got != nil:
			t.Errorf("%s: %v, want none", c.name, *got)
		case !math.IsNaN(c.want) && (got == nil || math.Abs(*got-c.want) > 1e-12):
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// readFleet GETs fleet.json from a FleetHandler.
func readFleet(t *testing.T, base string) FleetStats {
	t.Helper()
	resp, err := http.Get(base + "/fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fleet.json: %s", resp.Status)
	}
	var st FleetStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// Real native clients through a Restart on a real server: the fleet
// page's data says what they reported (READY against connected, the
// recoveries, their attempts) and its quantiles are what
// histogram_quantile reads from the node's /metrics buckets, within a
// bucket of what the clients measured; the page is served with its CSP,
// nothing else is, and only GET and HEAD are.
func TestFleetPageShowsWhatTheClientsReported(t *testing.T) {
	f := newFixture(t, &Options{Node: "n1"}, DemoOptions{RestartDowntime: 300 * time.Millisecond})
	fs := httptest.NewServer(f.srv.FleetHandler())
	defer fs.Close()

	st := readFleet(t, fs.URL)
	if st.Open != 0 || st.Ready != 0 || st.ReadyShare != 0 || st.Recovery.Count != 0 || st.Recovery.P50Seconds != nil || st.Node != "n1" {
		t.Fatalf("before any client: %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 5
	var cs []*native.Client
	for range n {
		c, err := native.Dial(ctx, f.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	waitFor(t, 10*time.Second, "5 connect reports", func() bool { return readFleet(t, fs.URL).Connect.Count == n })
	f.set("restart", true)
	waitFor(t, 20*time.Second, "every client READY again after the restart", func() bool {
		for _, c := range cs {
			if c.Stats().Recoveries != 1 || !c.State().Ready {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "the fleet page counts 5 recoveries and 5 READY", func() bool {
		st = readFleet(t, fs.URL)
		return st.Recovery.Count == n && st.Ready == n
	})
	if st.Open != n || st.Connections["ws"] != n || st.ReadyShare != 1 || st.Connect.Count != n || st.Reports["ws"] != 2*n {
		t.Errorf("after the restart: %+v", st)
	}
	dials := 0
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for _, c := range cs {
		s := c.Stats()
		dials += s.Dials - 1 // the first READY's dial is the connect's
		lo, hi = min(lo, s.RecoveryP50), max(hi, s.RecoveryP50)
	}
	if want := float64(dials) / n; math.Abs(st.Recovery.AttemptsPer-want) > 1e-9 {
		t.Errorf("attempts per recovery %v, the clients dialled %v", st.Recovery.AttemptsPer, want)
	}
	// Inside the buckets around the clients' own extremes.
	bucketOf := func(d time.Duration, up bool) float64 {
		prev := 0.0
		for _, b := range toReadyBuckets {
			if d.Seconds() <= b {
				if up {
					return b
				}
				return prev
			}
			prev = b
		}
		return math.Inf(1)
	}
	for name, p := range map[string]*float64{"p50": st.Recovery.P50Seconds, "p99": st.Recovery.P99Seconds} {
		if p == nil || *p < bucketOf(lo, false) || *p > bucketOf(hi, true) {
			t.Errorf("%s %v s, the clients' recoveries were %v..%v", name, p, lo, hi)
		}
	}

	resp, err := http.Get(fs.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `id="f-p99"`) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("the page: %s, CSP %q", resp.Status, resp.Header.Get("Content-Security-Policy"))
	}
	for path, want := range map[string]int{"/other.js": http.StatusNotFound, "/x/": http.StatusNotFound, "/x/fleet.json": http.StatusNotFound} {
		resp, err := http.Get(fs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
	resp, err = http.Post(fs.URL+"/fleet.json", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST fleet.json: %s, want 405", resp.Status)
	}
}

// The time-to-READY buckets keep histogram_quantile (and the fleet page)
// within a quarter of a bucket's lower bound from 1 s to 25 s, where
// recoveries land: no bucket there is wider than that, so a quantile read
// by linear interpolation cannot be further off than a quarter, and the
// storms of make fleet-test read within 10%.
func TestReadyBucketsAreNarrowWhereRecoveriesLand(t *testing.T) {
	for i := 1; i < len(toReadyBuckets); i++ {
		lo, hi := toReadyBuckets[i-1], toReadyBuckets[i]
		if lo >= 1 && lo < 25 && hi-lo > lo/4+1e-9 {
			t.Errorf("bucket %v-%v s is %.0f%% of its lower bound wide, over 25%%", lo, hi, (hi-lo)/lo*100)
		}
	}
}
