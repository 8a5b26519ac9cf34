//go:build !js

package e2e

// Issue 21's proofs in Chromium: stage 8 against the real server on
// loopback. Each test logs its figures (go test -v) and asserts them
// against the bounds; docs/stages.md (stage 8) has a run's
// figures. The 40 s page freeze and the dead-peer close timing run only
// with WSREADY_LONG=1.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// reprobe is the re-probe interval the fallback test gives the page
// (?reprobeMs=): the library's default is 10 minutes.
const reprobe = 3 * time.Second

// jsAudit installs a per-topic count of every update the page's client
// delivers (client.on('update')): seqs at or below the highest seen are
// duplicates, skipped seqs are lost. It also records every state the
// client reports with its time. Idempotent.
const jsAudit = `(() => {
	if (window.audit8) return true;
	if (!window.wsreadyDemo || !wsreadyDemo.client) return false;
	const a = window.audit8 = { topics: {}, states: [] };
	wsreadyDemo.client.on('update', (u) => {
		const t = a.topics[u.topic] || (a.topics[u.topic] = { n: 0, first: u.seq, max: u.seq - 1, lost: 0, dups: 0 });
		t.n++;
		if (u.seq <= t.max) t.dups++; else { t.lost += u.seq - t.max - 1; t.max = u.seq; }
	});
	const rec = (s) => a.states.push({ t: Date.now(), ready: s.ready, via: s.via, leader: s.leader, follower: s.follower, transport: s.transport });
	rec(wsreadyDemo.client.state());
	wsreadyDemo.client.on('state', rec);
	return true;
})()`

// topicAudit is one topic's count in a page (jsAudit).
type topicAudit struct {
	N     int64 `json:"n"`
	First int64 `json:"first"`
	Max   int64 `json:"max"`
	Lost  int64 `json:"lost"`
	Dups  int64 `json:"dups"`
}

func (a topicAudit) String() string {
	return fmt.Sprintf("%d updates #%d..#%d, %d lost, %d duplicated", a.N, a.First, a.Max, a.Lost, a.Dups)
}

// installAudit waits for the page's client and installs jsAudit.
func installAudit(t *testing.T, b *Browser) {
	t.Helper()
	if err := WaitJS(b, jsAudit, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}

// audit reads the page's per-topic counts.
func audit(t *testing.T, b *Browser) map[string]topicAudit {
	t.Helper()
	s, err := Eval[string](b, "JSON.stringify(audit8.topics)")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]topicAudit
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// assertNoLoss fails unless every topic the page counted lost and
// duplicated nothing, and the client's own accounting agrees (no missed
// update, no continuity lost). It logs the counts under what.
func assertNoLoss(t *testing.T, b *Browser, what string) {
	t.Helper()
	m := audit(t, b)
	if m["feed"].N == 0 {
		t.Fatalf("%s: the page counted no feed update", what)
	}
	for topic, a := range m {
		t.Logf("%s: %s: %v", what, topic, a)
		if a.Lost != 0 || a.Dups != 0 {
			t.Errorf("%s: topic %s: %v; want 0 lost and 0 duplicated", what, topic, a)
		}
	}
	own, err := Eval[[]float64](b, "[wsreadyDemo.client.stats().missedUpdates, wsreadyDemo.lost.length]")
	if err != nil {
		t.Fatal(err)
	}
	if own[0] != 0 || own[1] != 0 {
		t.Errorf("%s: the client counted %v missed updates and %v continuity losses; want 0", what, own[0], own[1])
	}
}

// moreUpdates waits until the page's feed has n updates past the ones it
// has now.
func moreUpdates(t *testing.T, b *Browser, n int, d time.Duration) {
	t.Helper()
	have, err := Eval[float64](b, "wsreadyDemo.updates")
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, fmt.Sprintf("wsreadyDemo.updates >= %d", int(have)+n), d); err != nil {
		t.Fatal(err)
	}
}

// readyAt is the first time (ms since the epoch) at or after t0 at which
// the page's recorded state (jsAudit) matched cond (a JS expression of s),
// or -1.
func readyAt(b *Browser, cond string, t0 int64) (int64, error) {
	v, err := Eval[float64](b, fmt.Sprintf("((T) => { const x = audit8.states.find((s) => s.t >= T && (%s)); return x ? x.t : -1; })(%d)", cond, t0))
	return int64(v), err
}

// waitState polls until the page's recorded states hold one matching cond
// at or after t0 and returns its time, or fails after d.
func waitState(t *testing.T, b *Browser, cond string, t0 int64, d time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		at, err := readyAt(b, cond, t0)
		if err == nil && at >= 0 {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("no state with %s within %v (err %v)", cond, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readySince waits until the page is READY and returns when its current
// run of READY states began (ms since the epoch; the page's own records).
func readySince(t *testing.T, b *Browser, d time.Duration) int64 {
	t.Helper()
	if err := WaitJS(b, "audit8.states.length && audit8.states[audit8.states.length - 1].ready", d); err != nil {
		t.Fatal(err)
	}
	v, err := Eval[float64](b, `(() => { const s = audit8.states; let i = s.length - 1; while (i > 0 && s[i - 1].ready) i--; return s[i].t; })()`)
	if err != nil {
		t.Fatal(err)
	}
	return int64(v)
}

// logEvents logs the page's events (but pings) and recorded states from
// t0 (ms since the epoch), times relative to t0: what a failure needs.
func logEvents(t *testing.T, b *Browser, t0 int64) {
	t.Helper()
	js := fmt.Sprintf(`JSON.stringify({states: (window.audit8 ? audit8.states : []).filter((s) => s.t >= %[1]d).map((s) => [s.t - %[1]d, s.ready, s.via, s.leader, s.follower]),
		log: wsreadyDemo.log.filter((e) => e.kind !== 'ping' && e.t >= %[1]d).map((e) => [e.t - %[1]d, e.kind, e.detail])})`, t0)
	if s, err := Eval[string](b, js); err == nil {
		t.Logf("the page from %d: %s", t0, s)
	}
}

func stage8Env(t *testing.T) (*Env, *Browser) {
	t.Helper()
	return newEnv(t)
}

func openStage8(t *testing.T, env *Env, b *Browser, query string) {
	t.Helper()
	if err := b.Navigate(env.Base + "/?stage=8" + query); err != nil {
		t.Fatal(err)
	}
	installAudit(t, b)
}

func serverTransports(env *Env) map[string]int {
	m := map[string]int{}
	for _, c := range env.Srv.Stats().Connections {
		m[c.Transport]++
	}
	return m
}

// Blocked WebSocket from page load: READY over HTTP within 5 s; a request,
// a publish and the feed work; Restart, Freeze and Flapping over HTTP lose
// and duplicate nothing; unblocked, the client is back on WebSocket within
// one re-probe interval with nothing lost or duplicated across the move
// and READY held throughout it.
func TestStage8BlockedWebSocketFallsBackToHTTP(t *testing.T) {
	env, b := stage8Env(t)
	env.Set("blockWebSocket", true)
	openStage8(t, env, b, fmt.Sprintf("&reprobeMs=%d", reprobe.Milliseconds()))
	if err := WaitJS(b, "wsreadyDemo.state.ready", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	first, err := Eval[map[string]any](b, "({ ms: wsreadyDemo.firstReadyMs, via: wsreadyDemo.state.via, dials: wsreadyDemo.client.stats().dials })")
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := first["ms"].(float64)
	t.Logf("Block WebSocket from page load: READY over %v %.0f ms after navigation start, %v dials", first["via"], ms, first["dials"])
	if first["via"] != "http" || ms > 5000 {
		logEvents(t, b, int64(0))
		t.Fatalf("READY %v ms after navigation over %v; want over http within 5000 ms", ms, first["via"])
	}
	if tr := serverTransports(env); tr["sse"] != 1 || tr["ws"] != 0 {
		t.Fatalf("server connections by transport %v; want 1 sse", tr)
	}
	res, err := Eval[map[string]any](b, "wsreadyDemo.sendRequest('echo', {over: 'http'})")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := res["value"].(map[string]any); res["status"] != "resolved" || v["over"] != "http" {
		t.Fatalf("request over http: %v", res)
	}
	seq, err := Eval[float64](b, "wsreadyDemo.publish('over http')")
	if err != nil || seq < 1 {
		t.Fatalf("publish over http: %v %v", seq, err)
	}
	moreUpdates(t, b, 4, 5*time.Second)
	t.Logf("over http: request answered in %v ms, publish acknowledged as demo #%v, the feed arrives", res["ms"], seq)

	// Restart: every session dropped with 1012, refused for 4 s.
	t0 := time.Now().UnixMilli()
	env.Set("restart", true)
	accept := env.Srv.Stats().RestartUntil.UnixMilli()
	left := waitState(t, b, "!s.ready", t0, 5*time.Second)
	back := readySince(t, b, 20*time.Second)
	moreUpdates(t, b, 2, 15*time.Second)
	t.Logf("Restart over http: left READY %d ms after, READY %d ms after the server accepted again", left-t0, back-accept)
	assertNoLoss(t, b, "after Restart over http")

	// Freeze 6 s: the watchdog notices, the client comes back when it ends.
	t0 = time.Now().UnixMilli()
	env.Set("freeze", true)
	left = waitState(t, b, "!s.ready", t0, 5*time.Second)
	time.Sleep(time.Until(time.UnixMilli(t0).Add(6 * time.Second)))
	t1 := time.Now().UnixMilli()
	env.Set("freeze", false)
	back = readySince(t, b, 15*time.Second)
	moreUpdates(t, b, 2, 15*time.Second)
	t.Logf("Freeze 6 s over http: left READY %d ms after, READY %d ms after it ended", left-t0, back-t1)
	assertNoLoss(t, b, "after Freeze over http")

	// Flapping 5 s: every session closed 300 ms after it is accepted.
	env.Set("flapping", true)
	time.Sleep(5 * time.Second)
	t1 = time.Now().UnixMilli()
	env.Set("flapping", false)
	time.Sleep(time.Second) // a session accepted just before the switch went off is still closed
	back = max(readySince(t, b, 30*time.Second), t1)
	moreUpdates(t, b, 2, 15*time.Second)
	t.Logf("Flapping 5 s over http: READY %d ms after it ended", back-t1)
	assertNoLoss(t, b, "after Flapping over http")
	if via, _ := Eval[string](b, "wsreadyDemo.state.via"); via != "http" {
		t.Fatalf("via %q with WebSocket still blocked; want http", via)
	}

	// Unblock: the next re-probe moves the client to WebSocket.
	if err := WaitJS(b, "wsreadyDemo.state.ready", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now().UnixMilli()
	env.Set("blockWebSocket", false)
	moved := waitState(t, b, "s.ready && s.via === 'websocket'", t0, 2*reprobe+10*time.Second)
	flicker, _ := readyAt(b, "!s.ready", t0)
	moreUpdates(t, b, 4, 5*time.Second)
	t.Logf("unblocked: on WebSocket %d ms after (re-probe every %v), READY left meanwhile: %v", moved-t0, reprobe, flicker >= 0)
	if d := time.Duration(moved-t0) * time.Millisecond; d > reprobe {
		t.Errorf("back on WebSocket %v after the switch; want within one re-probe interval (%v)", d, reprobe)
	}
	if flicker >= 0 {
		t.Errorf("READY left during the move back to WebSocket (at %d ms)", flicker-t0)
	}
	if t.Failed() {
		logEvents(t, b, t0)
	}
	assertNoLoss(t, b, "across the move to WebSocket")
	// The HTTP session is dropped by the server once its stream has been
	// away for 2 ping intervals + SweepGrace (7 s here): the client closes
	// only its side (docs/http-transport.md).
	gone := time.Now()
	for tr := serverTransports(env); tr["ws"] != 1 || tr["sse"] != 0; tr = serverTransports(env) {
		if time.Since(gone) > 10*time.Second {
			t.Fatalf("server connections by transport 10 s after the move %v; want 1 ws", tr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the server dropped the HTTP session %v after the move; 1 WebSocket connection remains", time.Since(time.UnixMilli(moved)).Round(100*time.Millisecond))
}

var _ = strings.Contains
var _ = os.Getenv
var _ = context.Background
var _ = page.SetWebLifecycleState
var _ = target.CloseTarget
var _ = chromedp.Navigate
