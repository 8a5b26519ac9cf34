//go:build !js

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

// client.subscribed(topic) in a FOLLOWER tab at stage 8, where the
// server's answers to a subscribe reach the leader tab's connection, not
// this tab's: it must still settle as in a tab with its own connection
// (TestApp, TestSubscribedAbortsWhenTheSubscriptionIsGivenUp).
//
// The server (Options.Authorize) refuses every subscribe to a topic named
// "secret.*" with forbidden (a refusal for good: the client does not ask
// again on that connection) and to "odd.*" with the application's code
// no_odd (also final for that connection, as every code but the server's
// transient ones), and
// holds every subscribe to a topic named "held.*" unanswered until the
// test releases them (or the connection ends), so a subscribed() can be
// pending on purpose.

// subscribedJS wraps a subscribed() promise in what the tests compare:
// "taken", "<name>:<code>" for a rejection, or "pending after N ms".
const subscribedJS = `window.fsName = window.fsName || (async (p, ms) => {
	const out = p.then(() => 'taken', (e) => e.name + ':' + (e.code ?? ''));
	return Promise.race([out, new Promise((r) => setTimeout(() => r('pending after ' + ms + ' ms'), ms))]);
})`

// heldServer starts the demo server with the hook described above; the
// returned func answers every held subscribe (and every later one). It is
// called when the test ends too, before the server closes.
func heldServer(t *testing.T) (*Env, func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	env, err := StartServer(&server.Options{Authorize: func(ctx context.Context, _ server.Identity, a server.Action) error {
		if a.Kind != server.ActSubscribe {
			return nil
		}
		switch {
		case strings.HasPrefix(a.Topic, "secret."):
			return &server.Error{Code: "forbidden", Message: "secret topics are refused"}
		case strings.HasPrefix(a.Topic, "odd."):
			return &server.Error{Code: "no_odd", Message: "odd topics are refused"}
		case strings.HasPrefix(a.Topic, "held."):
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	},
		// Publishing needs a rule of its own: the subscribe rule above
		// allows none. The tests publish to the topics they subscribe to.
		AuthorizePublish: func(context.Context, server.Identity, server.Action) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	t.Cleanup(release) // runs before env.Close: no hook left waiting
	return env, release
}

// tabEval evaluates js (a string, or a promise of one) in tab b, with the
// fsName helper installed.
func tabEval(t *testing.T, b *Browser, what, js string) string {
	t.Helper()
	if _, err := Eval[bool](b, subscribedJS+", true"); err != nil {
		t.Fatal(err)
	}
	got, err := Eval[string](b, js)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return got
}

// Cases (a) taken, (b) refused, (c) given up while pending, in a follower
// tab; each on a topic only the follower asks for, and on one the leader
// tab's connection had already answered before the follower asked.
func TestStage8SubscribedInAFollowerTab(t *testing.T) {
	env, release := heldServer(t)
	defer release()
	b, err := NewBrowser(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	tabs, two := openTabs(t, env, b, 2)
	if two.open != 1 || two.lead < 0 {
		t.Fatalf("2 tabs: %d open, leader %d; want 1 connection and a leader", two.open, two.lead)
	}
	leader, follower := tabs[two.lead], tabs[1-two.lead]
	if ok, err := Eval[bool](follower, "wsreadyDemo.client.state().follower === true"); err != nil || !ok {
		t.Fatalf("tab %d is not a follower: %v %v", 1-two.lead, ok, err)
	}

	// The leader tab takes fs.both and is refused secret.both first.
	if got := tabEval(t, leader, "leader", `(async () => {
		const c = wsreadyDemo.client;
		c.subscribe('fs.both', () => {});
		window.fsOffs = { 'secret.both': c.subscribe('secret.both', () => {}) };
		return [await fsName(c.subscribed('fs.both', { timeoutMs: 5000 }), 6000),
			await fsName(c.subscribed('secret.both', { timeoutMs: 5000 }), 6000)].join(' ');
	})()`); got != "taken TopicRefused:forbidden" {
		t.Fatalf("the leader tab's subscribed(): %s; want taken TopicRefused:forbidden", got)
	}

	for _, tc := range []struct{ what, topic, want string }{
		{"(a) a topic only the follower wants", "fs.mine", "taken"},
		{"(a) a topic the leader's connection already has", "fs.both", "taken"},
		{"(b) a refused topic only the follower wants", "secret.mine", "TopicRefused:forbidden"},
		{"(b) a topic the leader's connection was refused for good already", "secret.both", "TopicRefused:forbidden"},
		{"(b) a topic refused with the application's code", "odd.mine", "TopicRefused:no_odd"},
	} {
		got := tabEval(t, follower, tc.what, fmt.Sprintf(`(async () => {
			const c = wsreadyDemo.client;
			window.fsOffs = window.fsOffs || {};
			window.fsOffs[%[1]q] = c.subscribe(%[1]q, () => {});
			return fsName(c.subscribed(%[1]q, { timeoutMs: 5000 }), 6000);
		})()`, tc.topic))
		t.Logf("follower: %s (%s): %s", tc.what, tc.topic, got)
		if got != tc.want {
			t.Errorf("follower: %s (%s): subscribed() %s; want %s", tc.what, tc.topic, got, tc.want)
		}
	}
	// READY means the server took every topic asked for: while the
	// shared connection holds refused topics, ready() rejects at once in
	// both tabs, naming one; once every tab gives its refused topics up,
	// both are READY.
	for _, tb := range []*Browser{leader, follower} {
		if got := tabEval(t, tb, "ready() with refusals", `fsName(wsreadyDemo.client.ready({ timeoutMs: 3000 }), 1000)`); got != "TopicRefused:forbidden" && got != "TopicRefused:no_odd" {
			t.Errorf("ready() with refused topics: %s; want TopicRefused at once", got)
		}
	}
	for _, tb := range []*Browser{leader, follower} {
		tabEval(t, tb, "give up", `(() => { for (const off of Object.values(window.fsOffs)) off(); return 'ok'; })()`)
	}
	for _, tb := range []*Browser{leader, follower} {
		if got := tabEval(t, tb, "ready() without refusals", `fsName(wsreadyDemo.client.ready({ timeoutMs: 5000 }), 6000)`); got != "taken" {
			t.Errorf("ready() once the refused topics were given up: %s; want READY", got)
		}
	}
	// A taken topic's updates reach the follower through the leader.
	if _, err := Eval[bool](follower, `(() => { window.fsGot = 0; wsreadyDemo.client.subscribe('fs.mine', () => { fsGot++; }); return true; })()`); err != nil {
		t.Fatal(err)
	}
	if _, err := Eval[float64](leader, "wsreadyDemo.client.publish('fs.mine', {n: 1})"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(follower, "fsGot === 1", 5*time.Second); err != nil {
		t.Errorf("the follower's taken topic: %v", err)
	}

	// (c) Given up while pending: held.abort is not answered until the end.
	got := tabEval(t, follower, "(c)", `(async () => {
		const c = wsreadyDemo.client;
		const stop = c.subscribe('held.abort', () => {});
		const p = c.subscribed('held.abort', { timeoutMs: 10000 });
		await new Promise((r) => setTimeout(r, 500)); // the leader has asked the server; no answer comes
		const before = await fsName(p, 0);
		stop();
		return before + ' / ' + await fsName(p, 2000);
	})()`)
	t.Logf("follower: (c) a pending subscribed() given up: %s", got)
	if got != "pending after 0 ms / Aborted:" {
		t.Errorf("follower: (c) subscribed() before and after the topic was given up: %s; want pending after 0 ms / Aborted:", got)
	}
	if st, err := Eval[bool](follower, "wsreadyDemo.client.state().follower && wsreadyDemo.client.state().ready"); err != nil || !st {
		t.Errorf("the follower is no longer a READY follower: %v %v", st, err)
	}
}

// (d) The leader tab closes while a subscribed() is pending in the
// followers: the one that takes over and the one that still follows both
// settle once the new leader's connection has the topic; a later
// subscribed() settles too, and none waits for its timeoutMs.
func TestStage8SubscribedAcrossALeaderTakeover(t *testing.T) {
	env, release := heldServer(t)
	defer release()
	b, err := NewBrowser(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	tabs, three := openTabs(t, env, b, 3)
	if three.open != 1 || three.lead < 0 {
		t.Fatalf("3 tabs: %d open, leader %d; want 1 connection and a leader", three.open, three.lead)
	}
	lead := three.lead
	// Every follower asks for held.t; the server holds the subscribe.
	for i, tb := range tabs {
		if i == lead {
			continue
		}
		tabEval(t, tb, "held.t", `(() => {
			const c = wsreadyDemo.client;
			c.subscribe('held.t', () => {});
			window.fsHeld = { t0: Date.now(), p: c.subscribed('held.t', { timeoutMs: 15000 }) };
			window.fsHeld.out = fsName(window.fsHeld.p, 15000).then((r) => { window.fsHeld.at = Date.now(); return r; });
			return 'asked';
		})()`)
	}
	browserRuns(time.Second) // the held subscribes stay pending
	for i, tb := range tabs {
		if i == lead {
			continue
		}
		if got := tabEval(t, tb, "held.t before", "fsName(fsHeld.p, 0)"); got != "pending after 0 ms" {
			t.Fatalf("tab %d: subscribed('held.t') while the server holds it: %s; want pending", i, got)
		}
	}

	// Close the leader's tab; the next one's connection subscribes held.t
	// afresh and is held too (it is not READY meanwhile: a fresh
	// connection's READY waits for every topic).
	tabs[lead].Close()
	tabs[lead] = nil
	browserRuns(1500 * time.Millisecond) // another tab takes over and subscribes held.t afresh
	next := -1
	for i, tb := range tabs {
		if tb == nil {
			continue
		}
		if ok, _ := Eval[bool](tb, "wsreadyDemo.client.state().leader === true"); ok {
			next = i
		}
		if got := tabEval(t, tb, "held.t before the answer", "fsName(fsHeld.p, 0)"); got != "pending after 0 ms" {
			t.Errorf("tab %d: subscribed('held.t') after the takeover, before the server answered: %s; want pending", i, got)
		}
	}
	if next < 0 {
		t.Fatal("no tab leads 1.5 s after the leader's tab closed")
	}
	released := time.Now().UnixMilli()
	release()
	for i, tb := range tabs {
		if tb == nil {
			continue
		}
		role := "follower"
		if i == next {
			role = "new leader"
		}
		got := tabEval(t, tb, "held.t after", "fsHeld.out")
		at, _ := Eval[float64](tb, "fsHeld.at")
		t.Logf("tab %d (%s): the pending subscribed('held.t'): %s %d ms after the server answered", i, role, got, int64(at)-released)
		if got != "taken" {
			t.Errorf("tab %d (%s): the pending subscribed('held.t') across the takeover: %s; want taken", i, role, got)
		} else if int64(at)-released > 5000 {
			t.Errorf("tab %d (%s): subscribed('held.t') settled %d ms after the server answered; want within 5000", i, role, int64(at)-released)
		}
		later := tabEval(t, tb, "later", `(async () => {
			const c = wsreadyDemo.client, out = [];
			out.push(await fsName(c.subscribed('held.t', { timeoutMs: 5000 }), 6000));
			c.subscribe('fs.after', () => {});
			out.push(await fsName(c.subscribed('fs.after', { timeoutMs: 5000 }), 6000));
			c.subscribe('secret.after', () => {});
			out.push(await fsName(c.subscribed('secret.after', { timeoutMs: 5000 }), 6000));
			return out.join(' ');
		})()`)
		t.Logf("tab %d (%s): later subscribed(): %s", i, role, later)
		if later != "taken taken TopicRefused:forbidden" {
			t.Errorf("tab %d (%s): subscribed() after the takeover: %s; want taken taken TopicRefused:forbidden", i, role, later)
		}
	}
}
