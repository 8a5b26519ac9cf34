//go:build !js

package server

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/protocol"
)

// metricValue reads one sample (name with its labels, as the text format
// writes them) from a scrape; NaN when it is absent.
func metricValue(text, sample string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return math.NaN()
}

// waitMetric waits until sample reads want.
func waitMetric(t *testing.T, f *fixture, sample string, want float64) string {
	t.Helper()
	var text string
	waitFor(t, 10*time.Second, sample+" = "+strconv.FormatFloat(want, 'g', -1, 64), func() bool {
		text = scrapeMetrics(t, f)
		return metricValue(text, sample) == want
	})
	return text
}

// A real native client, with its defaults, against the real server on
// loopback: its first READY and its recovery after a Restart (every
// connection closed with 1012 and a reconnect slot) reach /metrics as
// the client measured them: the histograms' observations, the attempts,
// the cause, the refusal, the transport and the READY gauge.
func TestReportsOfARecoveringClientReachTheMetrics(t *testing.T) {
	f := newFixture(t, &Options{}, DemoOptions{RestartDowntime: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, f.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, f, `wsready_client_reports_total{kind="connect",transport="ws"}`, 1)
	waitMetric(t, f, `wsready_clients_ready`, 1)

	f.set("restart", true)
	if err := c.WaitState(ctx, func(s native.State) bool { return !s.Ready }); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	text := waitMetric(t, f, `wsready_client_ready_seconds_count{kind="recovery"}`, 1)
	st := c.Stats()
	if st.Recoveries != 1 {
		t.Fatalf("the client counts %d recoveries, want 1", st.Recoveries)
	}
	// The observation is the client's own measure (whole ms), not the
	// server's guess.
	if got, want := metricValue(text, `wsready_client_ready_seconds_sum{kind="recovery"}`), st.RecoveryP50.Truncate(time.Millisecond).Seconds(); math.Abs(got-want) > 1e-9 {
		t.Errorf("time to READY observed %v s, the client measured %v s", got, want)
	}
	if got := metricValue(text, `wsready_client_attempts_sum{kind="recovery"}`); got < 1 || got != float64(st.Dials-1) {
		t.Errorf("attempts observed %v, the client dialled %d sockets after its first", got, st.Dials-1)
	}
	// Each sample is waited for: the READY gauge and the refusal come with
	// the new connection's reports, which may reach the server a scrape
	// after the recovery's histogram (CI once read 0 for both in the same
	// scrape as the recovery).
	for _, w := range []struct {
		sample string
		want   float64
	}{
		{`wsready_client_recoveries_total{cause="refused"}`, 1}, // 1012 with a slot: the server steering
		{`wsready_client_reports_total{kind="recovery",transport="ws"}`, 1},
		{`wsready_clients_ready`, 1}, // the new connection, not the closed one
	} {
		text = waitMetric(t, f, w.sample, w.want)
	}
	waitFor(t, 10*time.Second, "a refusal with a slot (the restart's)", func() bool {
		text = scrapeMetrics(t, f)
		return metricValue(text, `wsready_client_refusals_total{class="slot"}`) >= 1
	})
	if got := metricValue(text, `wsready_client_reports_dropped_total{reason="rate"}`); got != 0 {
		t.Errorf("reports dropped for their rate: %v, want 0", got)
	}
	// A bucket histogram_quantile can read: the observation is inside the
	// buckets, below +Inf.
	if metricValue(text, `wsready_client_ready_seconds_bucket{kind="recovery",le="60"}`) != 1 {
		t.Errorf("the recovery is not in the 60 s bucket:\n%s", grepLines(text, "wsready_client_ready_seconds"))
	}
	c.Close()
	waitMetric(t, f, `wsready_clients_ready`, 0)
}

// Every bad report is dropped and counted by the field at fault, never
// answered, never logged and never a label: the peer's text stays out.
// Past the per-connection burst, reports are dropped as "rate".
func TestBadReportsAreDroppedAndCounted(t *testing.T) {
	f := newFixture(t, nil)
	var logs logBuf
	f.srv.log = logs.logger()
	p := f.dial()
	report := func(fields string) string {
		return `{"type":"report","report":{` + fields + `}}`
	}
	good := `"kind":"recovery","notReadyMs":1500,"attempts":2,"cause":"network","transport":"ws","refusedBusy":1,"refusedSlot":0,"lost":0,"role":"alone"`
	with := func(field, value string) string {
		i := strings.Index(good, `"`+field+`":`)
		j := strings.Index(good[i:], ",")
		if j < 0 {
			j = len(good) - i
		}
		return report(good[:i] + `"` + field + `":` + value + good[i+j:])
	}
	bad := map[string]string{
		`{"type":"report"}`:                           "bad_report",
		`{"type":"report","report":"SECRET-1"}`:       "bad_report",
		with("cause", `"SECRET-2 peer text"`):         "bad_cause",
		with("kind", `"SECRET-3"`):                    "bad_kind",
		with("notReadyMs", `-5`):                      "bad_notReadyMs",
		with("attempts", `1e9`):                       "bad_attempts",
		with("role", `"SECRET-4"`):                    "bad_role",
		with("transport", `"http"`):                   "transport", // a report of the HTTP transport on a WebSocket
		with("lost", `"SECRET-5"`):                    "bad_lost",
		report(strings.Replace(good, "kind", "k", 1)): "bad_kind",
	}
	want := map[string]float64{}
	for frame, reason := range bad {
		p.sendRaw(frame)
		want[reason]++
	}
	// Three good reports pass; the fourth and fifth, sent at once, are
	// over the connection's rate.
	for range 5 {
		p.sendRaw(report(good))
	}
	want["rate"] = 2
	var text string
	waitFor(t, 5*time.Second, "the drops counted", func() bool {
		text = scrapeMetrics(t, f)
		return metricValue(text, `wsready_client_reports_dropped_total{reason="rate"}`) == 2
	})
	for _, reason := range []string{"bad_report", "bad_cause", "bad_kind", "bad_notReadyMs", "bad_attempts", "bad_role", "transport", "bad_lost", "rate"} {
		if got := metricValue(text, fmt.Sprintf(`wsready_client_reports_dropped_total{reason=%q}`, reason)); got != want[reason] {
			t.Errorf("dropped for %s: %v, want %v", reason, got, want[reason])
		}
	}
	if got := metricValue(text, `wsready_client_ready_seconds_count{kind="recovery"}`); got != 3 {
		t.Errorf("%v recoveries observed, want the 3 good reports", got)
	}
	if got := metricValue(text, `wsready_client_refusals_total{class="busy"}`); got != 3 {
		t.Errorf("%v busy refusals, want 3", got)
	}
	// No answer to any of them: the next frame after a probe's
	// answer is asked for is that answer (pings aside).
	p.send(protocol.Message{Type: protocol.TypeProbe, ID: 77})
	for deadline := time.After(5 * time.Second); ; {
		select {
		case m := <-p.frames:
			if m.Type == protocol.TypeError {
				t.Fatalf("a report was answered: %+v %+v", m, m.Error)
			}
			if m.Type != protocol.TypeProbeAck {
				continue
			}
		case <-deadline:
			t.Fatal("no probe_ack")
		}
		break
	}
	if strings.Contains(text, "SECRET") || strings.Contains(logs.String(), "SECRET") {
		t.Errorf("a peer's text reached the metrics or the log:\n%s", logs.String())
	}
}

// Over the HTTP transport (POST /send) a report counts under transport
// "sse", the connection's own; one that says it came over WebSocket is
// dropped as "transport".
func TestReportsOverTheHTTPTransport(t *testing.T) {
	f := newFixture(t, nil)
	p := f.httpDial(t)
	body := func(transport string) string {
		return `{"type":"report","report":{"kind":"recovery","notReadyMs":250,"attempts":4,"cause":"network","transport":"` + transport +
			`","refusedBusy":0,"refusedSlot":0,"lost":1,"role":"leader"}}`
	}
	for _, tr := range []string{"http", "ws"} {
		if a := f.post(t, "/send?session="+p.session, "application/json", body(tr)); a.status >= 300 {
			t.Fatalf("POST /send: %d %+v", a.status, a)
		}
	}
	text := waitMetric(t, f, `wsready_client_reports_total{kind="recovery",transport="sse"}`, 1)
	for sample, want := range map[string]float64{
		`wsready_client_reports_dropped_total{reason="transport"}`:       1,
		`wsready_client_reports_total{kind="recovery",transport="ws"}`:   0,
		`wsready_client_continuity_lost_total`:                           1,
		`wsready_client_attempts_sum{kind="recovery"}`:                   4,
		`wsready_client_ready_seconds_bucket{kind="recovery",le="0.25"}`: 1,
		`wsready_clients_ready`:                                          1,
	} {
		if got := metricValue(text, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
}
