//go:build !js

package e2e

// Stage 8's proofs in Chromium: stage 8 against the real server on
// loopback. Each test logs its figures (go test -v) and asserts them
// against stage 8's bounds; docs/stages.md (stage 8) has a run's
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

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/debugger"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wsready/wsready/internal/poll"
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
		if s, err := Eval[string](b, "JSON.stringify({topics: wsreadyDemo.client.topics(), seqGaps: wsreadyDemo.client.stats().seqGaps, lost: wsreadyDemo.lost, seqs: wsreadyDemo.seqs.slice(-80)})"); err == nil {
			t.Logf("%s: the client's topics %s", what, s)
		}
		logEvents(t, b, 0)
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
	var at int64
	var err error
	if !poll.UntilEvery(d, 50*time.Millisecond, func() bool {
		at, err = readyAt(b, cond, t0)
		return err == nil && at >= 0
	}) {
		t.Fatalf("no state with %s within %v (err %v)", cond, d, err)
	}
	return at
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
	first := measureBlockedReady(t, b)
	t.Logf("Block WebSocket from page load: READY over %v %.0f ms after the first dial (%.0f ms after navigation start, the wasm loaded and the first dial at %.0f ms), %v dials",
		first.via, first.readyMs-first.dialMs, first.readyMs, first.dialMs, first.dials)
	if first.via != "http" || first.readyMs-first.dialMs > 5000 {
		logEvents(t, b, int64(0))
		t.Fatalf("READY %.0f ms after the first dial over %v; want over http within 5000 ms", first.readyMs-first.dialMs, first.via)
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
	accept := env.Demo.Stats().RestartUntil.UnixMilli()
	left := waitState(t, b, "!s.ready", t0, 5*time.Second)
	back := readySince(t, b, 20*time.Second)
	moreUpdates(t, b, 2, 15*time.Second)
	t.Logf("Restart over http: left READY %d ms after, READY %d ms after the server accepted again", left-t0, back-accept)
	assertNoLoss(t, b, "after Restart over http")

	// Freeze 6 s: the watchdog notices, the client comes back when it ends.
	t0 = time.Now().UnixMilli()
	env.Set("freeze", true)
	left = waitState(t, b, "!s.ready", t0, 5*time.Second)
	browserRuns(time.Until(time.UnixMilli(t0).Add(6 * time.Second))) // the freeze lasts 6 s
	t1 := time.Now().UnixMilli()
	env.Set("freeze", false)
	back = readySince(t, b, 15*time.Second)
	moreUpdates(t, b, 2, 15*time.Second)
	t.Logf("Freeze 6 s over http: left READY %d ms after, READY %d ms after it ended", left-t0, back-t1)
	assertNoLoss(t, b, "after Freeze over http")

	// Flapping 5 s: every session closed 300 ms after it is accepted.
	env.Set("flapping", true)
	browserRuns(5 * time.Second) // flapping lasts 5 s
	t1 = time.Now().UnixMilli()
	env.Set("flapping", false)
	browserRuns(time.Second) // a session accepted just before the switch went off is still closed
	back = max(readySince(t, b, 30*time.Second), t1)
	moreUpdates(t, b, 2, 15*time.Second)
	t.Logf("Flapping 5 s over http: READY %d ms after it ended", back-t1)
	assertNoLoss(t, b, "after Flapping over http")
	if via, _ := Eval[string](b, "wsreadyDemo.state.via"); via != "http" {
		t.Fatalf("via %q with WebSocket still blocked; want http", via)
	}

	// Unblock: the next re-probe moves the client to WebSocket.
	u := measureUnblock(t, env, b)
	t0, moved := u.t0, u.moved
	t.Logf("unblocked: on WebSocket %d ms after (re-probe every %v), READY left meanwhile: %v; %d lost, %d duplicated across the move", moved-t0, reprobe, u.flicker >= 0, u.lost, u.dups)
	if d := time.Duration(moved-t0) * time.Millisecond; d > reprobe {
		t.Errorf("back on WebSocket %v after the switch; want within one re-probe interval (%v)", d, reprobe)
	}
	if u.flicker >= 0 {
		t.Errorf("READY left during the move back to WebSocket (at %d ms)", u.flicker-t0)
	}
	if t.Failed() {
		logEvents(t, b, t0)
	}
	assertNoLoss(t, b, "across the move to WebSocket")
	// The HTTP session is dropped by the server once its stream has been
	// away for 2 ping intervals + SweepGrace (7 s here): the client closes
	// only its side (docs/http-transport.md).
	var tr map[string]int
	if !poll.UntilEvery(10*time.Second, 100*time.Millisecond, func() bool {
		tr = serverTransports(env)
		return tr["ws"] == 1 && tr["sse"] == 0
	}) {
		t.Fatalf("server connections by transport 10 s after the move %v; want 1 ws", tr)
	}
	t.Logf("the server dropped the HTTP session %v after the move; 1 WebSocket connection remains", time.Since(time.UnixMilli(moved)).Round(100*time.Millisecond))
}

// blockedReady is when a page opened with WebSocket blocked became READY
// (ms from navigation start: the page's firstReadyMs) and over what.
type blockedReady struct {
	readyMs float64 // navigation start to the first READY
	dialMs  float64 // navigation start to the client's first dial
	via     string
	dials   float64
}

// measureBlockedReady waits (15 s at most) for the page opened with
// WebSocket blocked to be READY and reads when. The client's part starts
// at its first dial (before it the page loads and compiles the wasm:
// make measure's page load row, about 0.5 s on an idle machine).
func measureBlockedReady(t *testing.T, b *Browser) blockedReady {
	t.Helper()
	if err := WaitJS(b, "wsreadyDemo.state.ready", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	first, err := Eval[map[string]any](b, `({ ms: wsreadyDemo.firstReadyMs, via: wsreadyDemo.state.via, dials: wsreadyDemo.client.stats().dials,
		dial: wsreadyDemo.log.find((e) => e.kind === 'dial').t - performance.timeOrigin })`)
	if err != nil {
		t.Fatal(err)
	}
	var r blockedReady
	r.readyMs, _ = first["ms"].(float64)
	r.dialMs, _ = first["dial"].(float64)
	r.via, _ = first["via"].(string)
	r.dials, _ = first["dials"].(float64)
	return r
}

// unblocked is what turning Block WebSocket off did to a READY page on
// HTTP: times in ms since the epoch.
type unblocked struct {
	t0, moved  int64 // the switch; READY over WebSocket
	flicker    int64 // the first state not READY after t0, -1: none
	lost, dups int64 // across the move, every topic (jsAudit)
}

// measureUnblock turns Block WebSocket off under a READY page on HTTP and
// waits (two re-probe intervals + 10 s at most) for it to be READY on
// WebSocket, then for 4 more feed updates.
func measureUnblock(t *testing.T, env *Env, b *Browser) unblocked {
	t.Helper()
	if err := WaitJS(b, "wsreadyDemo.state.ready", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	lost, dups := lossTotals(t, b)
	r := unblocked{t0: time.Now().UnixMilli()}
	env.Set("blockWebSocket", false)
	r.moved = waitState(t, b, "s.ready && s.via === 'websocket'", r.t0, 2*reprobe+10*time.Second)
	r.flicker, _ = readyAt(b, "!s.ready", r.t0)
	moreUpdates(t, b, 4, 5*time.Second)
	l, d := lossTotals(t, b)
	r.lost, r.dups = l-lost, d-dups
	return r
}

// lossTotals sums the page's lost and duplicated updates over every topic
// (jsAudit) since it was installed.
func lossTotals(t *testing.T, b *Browser) (lost, dups int64) {
	t.Helper()
	for _, a := range audit(t, b) {
		lost += a.Lost
		dups += a.Dups
	}
	return lost, dups
}

// Stage 7 with WebSocket blocked never connects (it has no HTTP
// transport: its measured row); stage 8 under Overload (1013 and a
// retry-after on every connection) never falls back to HTTP: a classified
// refusal is the server steering, not a blocked path.
func TestStage8NoFallbackWithoutTheRule(t *testing.T) {
	env, b := stage8Env(t)
	env.Set("blockWebSocket", true)
	if err := b.Navigate(env.Base + "/?stage=7"); err != nil {
		t.Fatal(err)
	}
	installAudit(t, b)
	browserRuns(8 * time.Second) // the page tries for 8 s: what it did in them is the result
	st, err := Eval[map[string]any](b, "({ ready: wsreadyDemo.transitions.some((x) => x.ready), dials: wsreadyDemo.client.stats().dials, http: wsreadyDemo.log.filter((e) => e.kind === 'dial' && / over http/.test(e.detail)).length })")
	if err != nil {
		t.Fatal(err)
	}
	srv := env.Srv.Stats()
	t.Logf("stage 7, WebSocket blocked, 8 s: READY %v, %v dials, %v over http; the server: %d open, %d handshakes", st["ready"], st["dials"], st["http"], srv.Open, srv.Handshakes)
	if st["ready"] != false || st["http"] != 0.0 || srv.Open != 0 || srv.Handshakes != 0 {
		t.Fatalf("stage 7 with WebSocket blocked: %v, server %d open, %d handshakes; want never READY, no HTTP dial, nothing on the server", st, srv.Open, srv.Handshakes)
	}
	env.Set("blockWebSocket", false)

	env2, err := StartServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env2.Close()
	env2.Set("overload", true)
	if err := b.Navigate(env2.Base + "/?stage=8"); err != nil {
		t.Fatal(err)
	}
	installAudit(t, b)
	t0 := time.Now()
	browserRuns(12 * time.Second) // the page tries for 12 s: what it did in them is the result
	st, err = Eval[map[string]any](b, "({ via: [...new Set(audit8.states.map((s) => s.via))].join(','), ready: audit8.states.some((s) => s.ready), dials: wsreadyDemo.client.stats().dials, http: wsreadyDemo.log.filter((e) => e.kind === 'dial' && / over http/.test(e.detail)).length, probes: wsreadyDemo.log.filter((e) => e.kind === 'transport').length })")
	if err != nil {
		t.Fatal(err)
	}
	tr := serverTransports(env2)
	t.Logf("stage 8 under Overload, %v: %v dials, via seen %q, %v over http, %v transport events; server connections %v", time.Since(t0).Round(time.Second), st["dials"], st["via"], st["http"], st["probes"], tr)
	if st["http"] != 0.0 || strings.Contains(st["via"].(string), "http") || tr["sse"] != 0 || st["ready"] != false {
		t.Fatalf("stage 8 under Overload: %v; want never READY and never over http", st)
	}
	if d, _ := st["dials"].(float64); d < 3 {
		t.Fatalf("stage 8 under Overload made %v dials in 12 s; want at least 3 (a count that would have fallen back)", d)
	}
	if s, _ := Eval[string](b, "wsreadyDemo.client.state().via"); s != "websocket" {
		t.Fatalf("state().via %q under Overload; want websocket", s)
	}
	env2.Set("overload", false)
	if err := WaitJS(b, "wsreadyDemo.state.ready && wsreadyDemo.state.via === 'websocket'", 15*time.Second); err != nil {
		t.Fatal(err)
	}
}

// newTab opens another tab in b's browser (the same profile: Web Locks and
// BroadcastChannel are shared). Its Close closes the tab.
func newTab(t *testing.T, b *Browser) *Browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.Ctx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	return &Browser{Ctx: ctx, cancel: []context.CancelFunc{cancel}}
}

// runBeforeScripts has b's pages run src before their own scripts, from
// the next navigation on (CDP Page.addScriptToEvaluateOnNewDocument).
func runBeforeScripts(t *testing.T, b *Browser, src string) {
	t.Helper()
	if _, err := chromedp.Call(b.Ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		t.Fatal(err)
	}
}

func setLifecycle(t *testing.T, b *Browser, state page.SetWebLifecycleStateState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: state}); err != nil {
		t.Fatalf("Page.setWebLifecycleState %s: %v", state, err)
	}
}

// leaderOf returns the index of the tab that holds the connection, or -1.
func leaderOf(tabs []*Browser, skip int) int {
	for i, tb := range tabs {
		if i == skip || tb == nil {
			continue
		}
		if ok, err := Eval[bool](tb, "!!(wsreadyDemo.state && wsreadyDemo.state.leader && wsreadyDemo.state.ready)"); err == nil && ok {
			return i
		}
	}
	return -1
}

// browserRuns lets d of wall time pass while a real browser runs: a fault
// held for its length (a freeze, flapping, a frozen or hidden page), a
// window in which something must not happen, a measurement window. The
// page's timers are Chromium's and the server's are wall-clock timers; no
// fake clock reaches either. Each call says which.
func browserRuns(d time.Duration) {
	time.Sleep(d) // real time: a real browser and the server's timers run on it
}

// waitTakeover polls the live tabs (but skip) until one leads and is
// READY on its own connection, and returns it with the time of that state.
func waitTakeover(t *testing.T, tabs []*Browser, skip int, t0 int64) (int, int64) {
	t.Helper()
	next, at := -1, int64(0)
	if !poll.UntilEvery(15*time.Second, 50*time.Millisecond, func() bool {
		for i, tb := range tabs {
			if i == skip || tb == nil {
				continue
			}
			if a, err := readyAt(tb, "s.leader && s.ready && !s.follower", t0); err == nil && a >= 0 {
				next, at = i, a
				return true
			}
		}
		return false
	}) {
		t.Fatal("no tab took over within 15 s")
	}
	return next, at
}

// Three tabs of one browser profile at stage 8 share one connection; a
// closed leader and a frozen leader are replaced at once (wasm/tabs.go: a
// closed tab's lock passes to the next tab's queued request, a frozen page
// says so first) with nothing lost or duplicated, and the frozen one steps
// down when it resumes without opening a second connection.
//
// A takeover is timed from the moment the close or the freeze took effect
// (Chromium carried out the DevTools command: the tab is gone, the page
// frozen), not from asking for it, in two parts from the page's own
// records: the handover (until the next tab leads) within 1.5 s, past
// which the followers waited for the leader's silence (bridge.SilentAfter,
// 0.9 s plus jitter; 10 s for a hidden leader) instead of taking over at
// once; then that tab's connection to READY within 3 s, the client's
// first-ping timeout: one socket, no retry. The whole takeover's goal,
// about a second (SPEC.md, many tabs), is a performance target TestMeasureStage8
// reports; this logs it. It was asserted here as 1.5 s from asking, and
// at load 18 on 2 cores a takeover whose tab closed 65 ms after the test
// asked reached READY 1740 ms after: the connection of a starved renderer.
func TestStage8TabsShareOneConnection(t *testing.T) {
	env, b := stage8Env(t)
	tabs, three := openTabs(t, env, b, 3)
	lead := three.lead
	t.Logf("3 tabs: the server counts %d open, %d handshakes; tab %d leads", three.open, three.handshakes, lead)
	if three.open != 1 || three.handshakes != 1 || lead < 0 {
		for i, tb := range tabs {
			t.Logf("tab %d:", i)
			logEvents(t, tb, 0)
		}
		t.Fatalf("3 tabs: %d open, %d handshakes, leader %d; want 1 connection, 1 handshake and a leader", three.open, three.handshakes, lead)
	}
	follower := (lead + 1) % 3
	res, err := Eval[map[string]any](tabs[follower], "wsreadyDemo.sendRequest('echo', {from: 'follower'})")
	if v, _ := res["value"].(map[string]any); err != nil || res["status"] != "resolved" || v["from"] != "follower" {
		t.Fatalf("a follower's request: %v %v", res, err)
	}
	t.Logf("a follower's request resolved in %v ms", res["ms"])
	for i, tb := range tabs {
		moreUpdates(t, tb, 2, 10*time.Second)
		assertNoLoss(t, tb, fmt.Sprintf("3 tabs, tab %d", i))
	}

	// Close the leader's tab.
	hs := env.Srv.Stats().Handshakes
	tk := measureLeaderClose(t, tabs, lead)
	next := tk.next
	t.Logf("leader tab closed: tab %d leads %d ms and is READY on its own connection %d ms after the close took effect (%d ms after it was asked for); %d lost, %d duplicated in the remaining tabs", next, tk.handover, tk.fromEffect, tk.ms, tk.lost, tk.dups)
	checkTakeover(t, "the leader closed", tk.handover, tk.fromEffect)
	settleOne(t, env, hs+1)
	for i, tb := range tabs {
		if tb != nil {
			moreUpdates(t, tb, 2, 10*time.Second)
			assertNoLoss(t, tb, fmt.Sprintf("after the leader closed, tab %d", i))
		}
	}

	// Freeze the new leader; resume it 3 s later.
	frozen := next
	hs = env.Srv.Stats().Handshakes
	t0 := time.Now().UnixMilli()
	setLifecycle(t, tabs[frozen], page.SetWebLifecycleStateStateFrozen)
	froze := time.Now().UnixMilli() // the page is frozen: Chromium answered the command
	next, at := waitTakeover(t, tabs, frozen, t0)
	led := leadsAt(t, tabs[next], t0, at)
	t.Logf("leader tab frozen: tab %d leads %d ms and is READY on its own connection %d ms after the freeze took effect (%d ms after it was asked for)", next, max(led-froze, 0), max(at-froze, 0), at-t0)
	checkTakeover(t, "the leader froze", max(led-froze, 0), max(at-froze, 0))
	browserRuns(time.Until(time.UnixMilli(t0).Add(3 * time.Second))) // the tab stays frozen 3 s
	setLifecycle(t, tabs[frozen], page.SetWebLifecycleStateStateActive)
	if err := WaitJS(tabs[frozen], "wsreadyDemo.state.follower && wsreadyDemo.state.ready", 10*time.Second); err != nil {
		logEvents(t, tabs[frozen], t0)
		t.Fatalf("the resumed tab: %v", err)
	}
	settleOne(t, env, hs+1)
	for i, tb := range tabs {
		if tb != nil {
			moreUpdates(t, tb, 2, 10*time.Second)
			assertNoLoss(t, tb, fmt.Sprintf("after the leader froze and resumed, tab %d", i))
		}
	}
}

// leadsAt is when b's page first recorded leading (its core holds the
// connection) at or after t0: the handover of a takeover that reached READY
// at ready. A tab that led before t0 and then READY is read as leading at
// ready.
func leadsAt(t *testing.T, b *Browser, t0, ready int64) int64 {
	t.Helper()
	at, err := readyAt(b, "s.leader && !s.follower", t0)
	if err != nil {
		t.Fatalf("the new leader's states: %v", err)
	}
	if at < 0 || at > ready {
		return ready
	}
	return at
}

// checkTakeover holds a takeover to TestStage8TabsShareOneConnection's
// bounds, in ms from the moment the close or freeze took effect: the
// handover within 1.5 s (at once, not after the leader's silence) and the
// new leader's connection to READY within 3 s (the client's first-ping
// timeout).
func checkTakeover(t *testing.T, what string, handover, ready int64) {
	t.Helper()
	if handover > 1500 {
		t.Errorf("after %s the next tab led %d ms later; want within 1500 (at once, not after the leader's silence)", what, handover)
	}
	if c := ready - handover; c > 3000 {
		t.Errorf("after %s the new leader's connection took %d ms to READY; want within 3000 (one socket, no retry)", what, c)
	}
}

// tabsOpen is what the server and the tabs say once every tab is READY.
type tabsOpen struct {
	open       int
	handshakes uint64
	lead       int // the tab holding the connection, -1: none
}

// openTabs opens n tabs of b's browser (one profile) at stage 8, each
// closed when the test ends, waits (20 s at most each) until every one is
// READY with feed updates, and reads the server's counts.
func openTabs(t *testing.T, env *Env, b *Browser, n int) ([]*Browser, tabsOpen) {
	t.Helper()
	tabs := make([]*Browser, n)
	for i := range tabs {
		tabs[i] = newTab(t, b)
		t.Cleanup(tabs[i].Close)
		openStage8(t, env, tabs[i], "")
	}
	for i, tb := range tabs {
		if err := WaitJS(tb, "wsreadyDemo.state.ready && wsreadyDemo.updates > 2", 20*time.Second); err != nil {
			t.Fatalf("tab %d: %v", i, err)
		}
	}
	srv := env.Srv.Stats()
	return tabs, tabsOpen{open: srv.Open, handshakes: srv.Handshakes, lead: leaderOf(tabs, -1)}
}

// takeover is what closing the leader's tab did.
type takeover struct {
	next int   // the tab that took over
	ms   int64 // from asking for the close to its READY on its own connection
	// fromEffect is from the close having taken effect (Chromium closed
	// the tab: Browser.Close returned) to that READY, handover to the
	// tab's first state leading; 0 if it came first.
	fromEffect, handover int64
	lost, dups           int64 // in the remaining tabs, until 2 more feed updates each
}

// measureLeaderClose closes tabs[lead] (and sets it nil) and waits for a
// takeover (15 s at most), then for 2 more feed updates in every
// remaining tab.
func measureLeaderClose(t *testing.T, tabs []*Browser, lead int) takeover {
	t.Helper()
	var lost, dups int64
	for i, tb := range tabs {
		if i != lead && tb != nil {
			l, d := lossTotals(t, tb)
			lost, dups = lost-l, dups-d
		}
	}
	t0 := time.Now().UnixMilli()
	tabs[lead].Close() // returns once the tab is gone (chromedp waits until it is not listed)
	closed := time.Now().UnixMilli()
	tabs[lead] = nil
	next, at := waitTakeover(t, tabs, lead, t0)
	for _, tb := range tabs {
		if tb != nil {
			moreUpdates(t, tb, 2, 10*time.Second)
			l, d := lossTotals(t, tb)
			lost, dups = lost+l, dups+d
		}
	}
	led := leadsAt(t, tabs[next], t0, at)
	return takeover{next: next, ms: at - t0, fromEffect: max(at-closed, 0), handover: max(led-closed, 0), lost: lost, dups: dups}
}

// settleOne waits (10 s at most) until the server holds exactly one
// connection, and checks it made no handshake past wantHS.
func settleOne(t *testing.T, env *Env, wantHS uint64) {
	t.Helper()
	start := time.Now()
	if !poll.UntilEvery(10*time.Second, 50*time.Millisecond, func() bool { return env.Srv.Stats().Open == 1 }) {
		t.Fatalf("the server holds %d connections 10 s on; want 1", env.Srv.Stats().Open)
	}
	st := env.Srv.Stats()
	t.Logf("the server: %d open after %v, %d handshakes in all", st.Open, time.Since(start).Round(10*time.Millisecond), st.Handshakes)
	if st.Handshakes != wantHS {
		t.Errorf("the server counted %d handshakes; want %d (one per takeover)", st.Handshakes, wantHS)
	}
}

// jsControl opens a plain WebSocket beside the client (no wsready): what
// Chromium does to a page's socket across a freeze, whatever the client
// makes of it.
const jsControl = `(() => {
	const c = window.control8 = { closed: null };
	const ws = c.ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
	ws.onclose = (e) => { c.closed = { t: Date.now(), code: e.code }; };
	return new Promise((resolve) => { ws.onopen = () => resolve(true); setTimeout(() => resolve(false), 5000); });
})()`

// frozenStep is what a pause or freeze of d did to a stage 8 page.
type frozenStep struct {
	dials, jumps, probes int
	woke                 int   // 1: the first reconnect decided was within the online delay (500 ms), a loss heard on waking (client/clock.go)
	leftMs, readyMs      int64 // from resume; -1: it never left READY
	swept                uint64
}

// across runs hold (a freeze, a pause) on a READY stage 8 page and
// returns what happened, from the page's own records; resume is when hold
// gave the page back (ms since the epoch).
func across(t *testing.T, env *Env, b *Browser, hold func() (resume int64)) frozenStep {
	t.Helper()
	if err := WaitJS(b, "wsreadyDemo.state.ready && wsreadyDemo.updates > 2", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	dials, err := Eval[int](b, "wsreadyDemo.client.stats().dials")
	if err != nil {
		t.Fatal(err)
	}
	swept := env.Srv.Stats().Limits.SweepClosed
	start := time.Now().UnixMilli()
	t1 := hold()
	r := frozenStep{swept: env.Srv.Stats().Limits.SweepClosed - swept, leftMs: -1, readyMs: -1}
	browserRuns(1500 * time.Millisecond) // the probe's verdict: at most 0.75 s after it is sent
	left, err := readyAt(b, "!s.ready", start)
	if err != nil {
		t.Fatal(err)
	}
	if left >= 0 {
		r.leftMs = left - t1
		r.readyMs = waitState(t, b, "s.ready", left, 30*time.Second) - t1
	}
	moreUpdates(t, b, 2, 15*time.Second)
	after, err := Eval[[]int](b, fmt.Sprintf("[wsreadyDemo.client.stats().dials, ...['clock-jump', 'probe'].map((k) => wsreadyDemo.log.filter((e) => e.kind === k && e.t >= %[1]d).length), (wsreadyDemo.records.find((x) => x.t >= %[1]d && x.outcome === 'reconnect')?.delayMs ?? 1e9) <= 500 ? 1 : 0]", start))
	if err != nil {
		t.Fatal(err)
	}
	r.dials, r.jumps, r.probes, r.woke = after[0]-dials, after[1], after[2], after[3]
	return r
}

// freezeFor freezes the page with Page.setWebLifecycleState for d (what
// Chromium does to a background tab, and how these tests sleep a page).
func freezeFor(t *testing.T, b *Browser, d time.Duration) func() int64 {
	return func() int64 {
		setLifecycle(t, b, page.SetWebLifecycleStateStateFrozen)
		browserRuns(d) // frozen for d
		t1 := time.Now().UnixMilli()
		setLifecycle(t, b, page.SetWebLifecycleStateStateActive)
		return t1
	}
}

// pauseFor stops the page's JavaScript for d (the debugger's pause): no
// timer runs, every one is late when it resumes, and the sockets stay
// open in the browser: a laptop that slept without the network noticing.
// before runs just before the pause (a server frozen after it would leave
// the frames of the moment between queued for the resume: a frame that
// proves the socket and re-arms the watchdog, then 1.25 s + the probe).
func pauseFor(t *testing.T, b *Browser, d time.Duration, before func()) func() int64 {
	return func() int64 {
		ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
		defer cancel()
		if _, err := chromedp.Call(ctx, debugger.Enable, debugger.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		if before != nil {
			before()
		}
		if _, err := chromedp.Call(ctx, debugger.Pause, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		browserRuns(d) // paused for d
		t1 := time.Now().UnixMilli()
		if _, err := chromedp.Call(ctx, debugger.Resume, debugger.ResumeParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(ctx, debugger.Disable, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		return t1
	}
}

// A stage 8 page that sleeps 5 s comes back READY with nothing lost, and
// its state never claims READY over a dead socket:
//   - frozen (Page.setWebLifecycleState) 5 s: Chromium itself drops the
//     page's WebSockets across a freeze (a plain WebSocket beside the
//     client is the control): the client reconnects at once, READY within
//     1.5 s of resuming; had Chromium kept the socket, the client must not
//     have reconnected;
//   - its JavaScript paused 5 s (every timer late, the socket alive): no
//     reconnect, READY held;
//   - paused 5 s while the server is frozen (the socket dead on resume):
//     the late watchdog probes and leaves READY within 1.5 s of resuming,
//     then reconnects once the server is back.
//
// The 40 s freeze is TestStage8LongPageFreeze.
func TestStage8PageFreeze(t *testing.T) {
	env, b := stage8Env(t)
	openStage8(t, env, b, "")
	if ok, err := Eval[bool](b, jsControl); err != nil || !ok {
		t.Fatalf("the control WebSocket did not open: %v", err)
	}
	r := across(t, env, b, freezeFor(t, b, 5*time.Second))
	ctl, err := Eval[map[string]any](b, "control8.closed && { code: control8.closed.code }")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page frozen 5 s: a plain WebSocket beside it: closed %v; the client: %d dials, left READY %d ms and READY %d ms after resume (-1: never), %d clock jumps, %d probes, %d swept on the server",
		ctl, r.dials, r.leftMs, r.readyMs, r.jumps, r.probes, r.swept)
	if ctl != nil && (r.dials < 1 || r.readyMs > 1500) {
		t.Errorf("Chromium closed the page's sockets across the freeze, the client: %d dials, READY %d ms after resume; want READY on a new connection within 1500 ms", r.dials, r.readyMs)
	}
	if ctl != nil && r.woke != 1 {
		// The close is heard as the page resumes: the first reconnect
		// waits at most the online delay, 500 ms, not the backoff's draw
		// (client/clock.go; the unit tests pin the exact delay).
		logEvents(t, b, time.Now().Add(-10*time.Second).UnixMilli())
		t.Errorf("Chromium closed the page's sockets across the freeze: first reconnect within 500 ms: %d; want 1 (the first reconnect soon)", r.woke)
	}
	if ctl == nil && (r.dials != 0 || r.leftMs >= 0) {
		t.Errorf("the socket survived the freeze, the client: %d dials, left READY at %d ms; want no reconnect", r.dials, r.leftMs)
	}
	assertNoLoss(t, b, "after a 5 s page freeze")

	r = across(t, env, b, pauseFor(t, b, 5*time.Second, nil))
	t.Logf("JavaScript paused 5 s: %d dials, left READY at %d ms after resume (-1: never), %d clock jumps, %d probes", r.dials, r.leftMs, r.jumps, r.probes)
	if r.dials != 0 || r.leftMs >= 0 {
		t.Errorf("after a 5 s pause with the socket alive: %d dials, left READY at %d ms; want no reconnect, READY held", r.dials, r.leftMs)
	}
	assertNoLoss(t, b, "after a 5 s pause")

	var resumed int64
	r = across(t, env, b, func() int64 {
		resumed = pauseFor(t, b, 5*time.Second, func() { env.Set("freeze", true) })()
		unfreeze := time.AfterFunc(3*time.Second, func() { env.Set("freeze", false) })
		t.Cleanup(func() { unfreeze.Stop() })
		return resumed
	})
	t.Logf("JavaScript paused 5 s while the server froze (unfrozen 3 s after resume): left READY %d ms after resume, READY again %d ms after, %d dials, %d clock jumps, %d probes",
		r.leftMs, r.readyMs, r.dials, r.jumps, r.probes)
	if r.leftMs < 0 || r.leftMs > 1500 {
		logEvents(t, b, resumed-6000)
		t.Errorf("resumed over a dead socket: left READY at %d ms; want within 1500 ms of resuming", r.leftMs)
	}
	assertNoLoss(t, b, "after a 5 s pause over a frozen server")
}

// A page frozen for 40 s (the bound's figure) is READY within 1.5 s of
// resuming, with nothing lost. WSREADY_LONG=1 (about 1 min).
func TestStage8LongPageFreeze(t *testing.T) {
	if os.Getenv("WSREADY_LONG") == "" {
		t.Skip("set WSREADY_LONG=1 to freeze a page for 40 s")
	}
	env, b := stage8Env(t)
	openStage8(t, env, b, "")
	if ok, err := Eval[bool](b, jsControl); err != nil || !ok {
		t.Fatalf("the control WebSocket did not open: %v", err)
	}
	r := across(t, env, b, freezeFor(t, b, 40*time.Second))
	ctl, _ := Eval[map[string]any](b, "control8.closed && { code: control8.closed.code }")
	t.Logf("page frozen 40 s: the server swept %d connections meanwhile; a plain WebSocket beside it: closed %v; the client: left READY %d ms after resume, READY again %d ms after, %d dials, %d clock jumps, %d probes, first reconnect within 500 ms: %d",
		r.swept, ctl, r.leftMs, r.readyMs, r.dials, r.jumps, r.probes, r.woke)
	if r.readyMs > 1500 || (r.leftMs >= 0 && (r.dials < 1 || r.woke != 1)) {
		logEvents(t, b, time.Now().Add(-60*time.Second).UnixMilli())
		t.Errorf("after a 40 s page freeze: left READY at %d ms, READY at %d ms, %d dials, first reconnect within 500 ms: %d; want READY within 1500 ms of resuming, the first dial soon", r.leftMs, r.readyMs, r.dials, r.woke)
	}
	assertNoLoss(t, b, "after a 40 s page freeze")
}

// jsSender starts the app sending: a 16 KB publish every 25 ms (640 KB/s),
// each outcome counted by name; stop with sender8.stop().
const jsSender = `(() => {
	const s = window.sender8 = { sent: 0, ok: 0, failed: {}, failedAt: {} };
	const pad = 'x'.repeat(16000);
	const id = setInterval(() => {
		s.sent++;
		wsreadyDemo.client.publish('deaf', { pad }).then(() => { s.ok++; }, (e) => {
			s.failed[e.name] = (s.failed[e.name] || 0) + 1;
			if (!s.failedAt[e.name]) s.failedAt[e.name] = Date.now();
		});
	}, 25);
	// The client's socket's bufferedAmount (jsWatchSockets), sampled every
	// 20 ms while it is open: drainedAt is the last time it was 0 or went
	// down.
	const w = (window.sockets8 || []).filter((x) => x.readyState === 1).pop();
	const buf = s.buf = { drainedAt: Date.now(), last: 0, max: 0 };
	const sid = setInterval(() => {
		if (!w || w.readyState !== 1) return; // closing or closed: its count no longer says anything
		const n = w.bufferedAmount, now = Date.now();
		if (n === 0 || n < buf.last) buf.drainedAt = now;
		buf.last = n; buf.max = Math.max(buf.max, n);
	}, 20);
	s.stop = () => { clearInterval(id); clearInterval(sid); };
	return true;
})()`

// jsWatchSockets, run before the page's scripts, keeps every WebSocket the
// page opens (the client's too) in window.sockets8, to read their
// bufferedAmount; the subclass changes nothing else.
const jsWatchSockets = `(() => {
	const Base = window.WebSocket;
	window.sockets8 = [];
	window.WebSocket = class extends Base { constructor(...a) { super(...a); window.sockets8.push(this); } };
})()`

// deafRun turns Deaf on under a page that keeps sending, for at most d,
// and returns when (ms since the epoch, -1: never within d) the page
// left READY, and its send-stall events.
func deafRun(t *testing.T, env *Env, b *Browser, d time.Duration) (t0, left int64) {
	t.Helper()
	// Deaf first, then the sender: the server's receive window is shrunk
	// before it grows with the traffic (a window grown to megabytes takes
	// seconds to fill before anything stays queued in the page).
	t0 = time.Now().UnixMilli()
	env.Set("deaf", true)
	if _, err := Eval[bool](b, jsSender); err != nil {
		t.Fatal(err)
	}
	left = -1
	poll.UntilEvery(d, 50*time.Millisecond, func() bool {
		var err error
		if left, err = readyAt(b, "!s.ready", t0); err != nil {
			t.Fatal(err)
		}
		return left >= 0
	})
	return t0, left
}

// deafStall is what Deaf did to a stage 8 page that keeps publishing.
type deafStall struct {
	t0, left, drained int64   // ms since the epoch: Deaf on; READY left (-1: never); the socket's bytes last drained
	probe, closed     int64   // ms from Deaf: the send-stall probe, the 4409 close after it (stallAt)
	maxBuf            float64 // the most bytes the socket held queued
	events            string  // the page's send-stall and close events, JSON, ms from Deaf
}

// measureDeaf turns Deaf on under a READY stage 8 page (opened with
// jsWatchSockets) that then keeps publishing (jsSender, left running:
// sender8.stop()), waits up to d for it to leave READY, and reads the
// page's figures.
func measureDeaf(t *testing.T, env *Env, b *Browser, d time.Duration) deafStall {
	t.Helper()
	var r deafStall
	r.t0, r.left = deafRun(t, env, b, d)
	ev, err := Eval[string](b, fmt.Sprintf("JSON.stringify(wsreadyDemo.log.filter((e) => (e.kind === 'send-stall' || e.kind === 'close') && e.t >= %[1]d).map((e) => [e.t - %[1]d, e.kind, e.detail]))", r.t0))
	if err != nil {
		t.Fatal(err)
	}
	r.events = ev
	buf, err := Eval[map[string]float64](b, "sender8.buf")
	if err != nil {
		t.Fatal(err)
	}
	r.drained, r.maxBuf = int64(buf["drainedAt"]), buf["max"]
	r.probe, r.closed = stallAt(ev)
	return r
}

// stallAt finds the send-stall probe and the close after it in the
// page's events (as logged by TestStage8DeafServerIsNoticed), in ms from
// Deaf; -1 for either missing.
func stallAt(events string) (probe, closed int64) {
	var ev [][]any
	probe, closed = -1, -1
	if json.Unmarshal([]byte(events), &ev) != nil {
		return
	}
	for _, e := range ev {
		if len(e) < 3 || e[1] != "send-stall" {
			continue
		}
		at, _ := e[0].(float64)
		d, _ := e[2].(string)
		if strings.Contains(d, "probing") && probe < 0 {
			probe = int64(at)
		}
		if strings.Contains(d, "no answer") && closed < 0 {
			closed = int64(at)
		}
	}
	return
}

// Deaf (the server stops reading clients' frames; its pings go on): a
// stage 8 page that keeps publishing notices the stalled send path, probes,
// and closes with 4409 within the send deadline (5 s) plus the probe's
// answer time (at most 0.75 s at 1 s pings) of its bytes ceasing to drain,
// requests caught in it rejecting with ConnectionClosed; it is READY again
// once Deaf is off, with nothing lost. Stage 7 never notices.
func TestStage8DeafServerIsNoticed(t *testing.T) {
	env, b := stage8Env(t)
	runBeforeScripts(t, b, jsWatchSockets)
	openStage8(t, env, b, "")
	if err := WaitJS(b, "wsreadyDemo.state.ready && wsreadyDemo.updates > 2", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	d := measureDeaf(t, env, b, 20*time.Second)
	t0, left, ev, drained, probe, closed := d.t0, d.left, d.events, d.drained, d.probe, d.closed
	t.Logf("Deaf on under a page publishing 640 KB/s: left READY %d ms after; events %s", left-t0, ev)
	if left < 0 {
		t.Fatalf("still READY 20 s into Deaf: the stalled send path was not noticed")
	}
	// The bound, from when the socket's bufferedAmount last drained (the
	// kernel's TCP buffers on loopback take 0-7 s to fill at this rate, so
	// Deaf's own instant is not it): the 5 s deadline, the driver's 250 ms
	// report period, the probe's answer time (at most 0.75 s), 100 ms for
	// the 20 ms sampling and the steps.
	t.Logf("Deaf: the socket's bytes last drained %d ms after Deaf went on (at most %.0f bytes queued); the send-stall probe %d ms and the 4409 close %d ms after that; READY left %d ms after",
		drained-t0, d.maxBuf, probe-(drained-t0), closed-(drained-t0), left-drained)
	if left-drained > 6100 {
		t.Errorf("left READY %d ms after the bytes stopped draining; want within 6100 (5 s deadline + 0.25 s report period + 0.75 s probe + 0.1 s)", left-drained)
	}
	if probe < 0 || closed < 0 || closed-probe > 750 {
		t.Errorf("send-stall probe at %d ms, close at %d ms; want the close within 750 ms of the probe", probe, closed)
	}
	st, err := Eval[map[string]any](b, "({ lastError: wsreadyDemo.client.state().lastError, failed: sender8.failed })")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page's state and the sender's outcomes: %v", st)
	if !strings.Contains(ev, "probing") || !strings.Contains(ev, "no answer to the send-stall probe") {
		t.Errorf("no send-stall probe, or no close after it, in the events")
	}
	if le, _ := st["lastError"].(map[string]any); le == nil || le["class"] != "send_stalled" || le["code"] != 4409.0 {
		t.Errorf("lastError %v; want class send_stalled, code 4409", st["lastError"])
	}
	if f, _ := st["failed"].(map[string]any); f == nil || f["ConnectionClosed"] == nil {
		t.Errorf("no publish rejected with ConnectionClosed: %v", st["failed"])
	}
	Eval[bool](b, "(sender8.stop(), true)")
	t1 := time.Now().UnixMilli()
	env.Set("deaf", false)
	back := readySince(t, b, 30*time.Second)
	moreUpdates(t, b, 2, 15*time.Second)
	t.Logf("Deaf off: READY %d ms after", max(back, t1)-t1)
	assertNoLoss(t, b, "after Deaf")

	// Stage 7 has no send-side rule: pings keep it READY all along.
	if err := b.Navigate(env.Base + "/?stage=7"); err != nil {
		t.Fatal(err)
	}
	installAudit(t, b)
	if err := WaitJS(b, "wsreadyDemo.state.ready && wsreadyDemo.updates > 2", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	t0, left = deafRun(t, env, b, 8*time.Second)
	Eval[bool](b, "(sender8.stop(), true)")
	env.Set("deaf", false)
	t.Logf("stage 7, 8 s of Deaf under the same sender: left READY at %d ms (-1: never)", max(left-t0, -1))
	if left >= 0 {
		t.Errorf("stage 7 left READY %d ms into Deaf; it has no send-side rule and its pings flow", left-t0)
	}
}

// newThrottledBrowser is NewBrowser without --disable-renderer-backgrounding:
// Chromium as users run it, throttling hidden pages' timers.
func newThrottledBrowser(t *testing.T) *Browser {
	t.Helper()
	path, err := ChromiumPath()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "wsready-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.UserDataDir(dir), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 1000))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	tctx, cancelT := chromedp.NewContext(actx)
	b := &Browser{Ctx: tctx, cancel: []context.CancelFunc{cancelT, cancelA}, dir: dir}
	t.Cleanup(b.Close)
	if err := chromedp.Do(tctx); err != nil {
		t.Fatalf("failed to start chromium: %v", err)
	}
	return b
}

// hide minimizes the tab's window: the page becomes hidden
// (document.visibilityState), as a background tab or a minimized window.
func hide(t *testing.T, b *Browser, hidden bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	w, err := chromedp.Call(ctx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{})
	if err != nil {
		t.Fatal(err)
	}
	state := browser.WindowStateNormal
	if hidden {
		state = browser.WindowStateMinimized
	}
	if _, err := chromedp.Call(ctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{WindowID: w.WindowID, Bounds: &browser.Bounds{WindowState: state}}); err != nil {
		t.Fatal(err)
	}
	want := map[bool]string{true: "hidden", false: "visible"}[hidden]
	if err := WaitJS(b, "document.visibilityState === '"+want+"'", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A hidden stage 8 page (its window minimized, in a Chromium that
// throttles background pages) keeps its connection, still notices a
// frozen server, regains its connection while hidden, and its request
// timeouts still fire: the figures say what the throttling costs.
func TestStage8HiddenPage(t *testing.T) {
	env, err := StartServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	b := newThrottledBrowser(t)
	openStage8(t, env, b, "")
	if err := WaitJS(b, "wsreadyDemo.state.ready && wsreadyDemo.updates > 2", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// A 100 ms interval timer: how late the hidden page's timers run.
	if _, err := Eval[bool](b, "(window.gap8 = { last: Date.now(), max: 0 }, setInterval(() => { const n = Date.now(); gap8.max = Math.max(gap8.max, n - gap8.last); gap8.last = n; }, 100), true)"); err != nil {
		t.Fatal(err)
	}
	dials, _ := Eval[int](b, "wsreadyDemo.client.stats().dials")
	hide(t, b, true)
	t0 := time.Now().UnixMilli()
	browserRuns(6 * time.Second) // hidden 6 s
	left, _ := readyAt(b, "!s.ready", t0)
	after, _ := Eval[int](b, "wsreadyDemo.client.stats().dials")
	gap, _ := Eval[float64](b, "gap8.max")
	t.Logf("hidden 6 s: a 100 ms timer's longest gap %.0f ms; left READY: %v; %d dials", gap, left >= 0, after-dials)
	if left >= 0 || after != dials {
		t.Errorf("hidden 6 s: left READY at %d, %d dials; want the connection kept", left-t0, after-dials)
	}
	moreUpdates(t, b, 2, 10*time.Second)

	// The watchdog while hidden: Freeze the server.
	t0 = time.Now().UnixMilli()
	env.Set("freeze", true)
	det := waitState(t, b, "!s.ready", t0, 10*time.Second)
	env.Set("freeze", false)
	t1 := time.Now().UnixMilli()
	back := waitState(t, b, "s.ready", t1, 20*time.Second)
	t.Logf("hidden, Freeze: left READY %d ms after (visible: 0.8-1.5 s), READY again %d ms after it ended, still hidden", det-t0, back-t1)
	if det-t0 > 2500 {
		t.Errorf("hidden: the watchdog noticed the Freeze after %d ms; want within 2500 (make test's bound for stages 6-7)", det-t0)
	}

	// A request timeout while hidden: Slow replies (8 s) against the 5 s timeout.
	env.Set("slowReplies", true)
	res, err := Eval[map[string]any](b, "wsreadyDemo.sendRequest('echo', {slow: true})")
	env.Set("slowReplies", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hidden, Slow replies: the request %v %v after %v ms (its timeout: 5000 ms)", res["status"], res["name"], res["ms"])
	if ms, _ := res["ms"].(float64); res["name"] != "RequestTimeout" || ms < 5000 || ms > 6000 {
		t.Errorf("hidden: request %v; want RequestTimeout within 5000-6000 ms", res)
	}
	if v, _ := Eval[string](b, "document.visibilityState"); v != "hidden" {
		t.Fatalf("the page became %s during the test", v)
	}
	hide(t, b, false)
	assertNoLoss(t, b, "hidden page")
}

// How long Chromium takes to report the close of a dead peer after
// close(): a plain WebSocket whose server froze is closed by the page;
// onclose fires only when Chromium gives up the closing handshake.
// WSREADY_LONG=1 (up to 2 min).
func TestStage8DeadPeerCloseTiming(t *testing.T) {
	if os.Getenv("WSREADY_LONG") == "" {
		t.Skip("set WSREADY_LONG=1 to time Chromium's close of a dead peer (about a minute)")
	}
	env, b := stage8Env(t)
	if err := b.Navigate(env.Base + "/embed.html"); err != nil {
		t.Fatal(err)
	}
	if ok, err := Eval[bool](b, jsControl); err != nil || !ok {
		t.Fatalf("the WebSocket did not open: %v", err)
	}
	env.Set("freeze", true)
	defer env.Set("freeze", false)
	t0, err := Eval[float64](b, "(control8.ws.close(), Date.now())")
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "control8.closed", 2*time.Minute); err != nil {
		t.Fatalf("onclose never fired: %v", err)
	}
	c, err := Eval[map[string]any](b, "control8.closed")
	if err != nil {
		t.Fatal(err)
	}
	at, _ := c["t"].(float64)
	t.Logf("Chromium reported the close of a dead peer %.1f s after close(), code %v (the page's timers and the client's own watchdog do not wait for it)", (at-t0)/1000, c["code"])
}
