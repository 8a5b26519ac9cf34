//go:build !js

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
)

// Stage 7 in the browser: publish() and subscribe() through the JS API,
// refusals with their codes, the urls option moving past a dead server, and
// resume: "session" carrying the cursor across a reload of the page, so the
// reloaded page replays what it missed instead of skipping it.
func TestTopicsPublishAndResumeAcrossAReload(t *testing.T) {
	env, b := newEnv(t)
	if err := b.Navigate(env.Base + "/?stage=7"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "wsreadyDemo.state && wsreadyDemo.state.ready && wsreadyDemo.lastSeq > 0", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// publish() resolves with the seq; a second client subscribed from 0
	// gets both updates in order; the page's own subscription too.
	got, err := Eval[map[string]any](b, `(async () => {
		const m = await import('./wsready.js');
		const first = await wsreadyDemo.publish('one');
		const second = await wsreadyDemo.publish('two');
		const c2 = await m.connect({ stage: 7 });
		await c2.ready({ timeoutMs: 10000 });
		const seen = [];
		const stop = c2.subscribe('demo', (u) => seen.push([u.seq, u.data.text]), { since: 0 });
		for (let i = 0; i < 100 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
		stop();
		const out = { first, second, seen: JSON.stringify(seen) };
		out.feed = await c2.publish('feed', 1).then(() => 'published', (e) => e.name + ' ' + e.code);
		try { c2.subscribe('a b', () => {}); out.badTopic = 'accepted'; } catch (e) { out.badTopic = e.name; }
		out.badData = await c2.publish('demo', 10n).then(() => 'published', (e) => e.name);
		out.topics = JSON.stringify(c2.topics().map((t) => t.topic));
		await c2.close();
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if got["first"] != 1.0 || got["second"] != 2.0 || got["seen"] != `[[1,"one"],[2,"two"]]` {
		t.Fatalf("publish and subscribe: %v", got)
	}
	if got["feed"] != "ServerError forbidden" || got["badTopic"] != "TypeError" || got["badData"] != "TypeError" {
		t.Fatalf("refusals: %v", got)
	}
	if !strings.Contains(got["topics"].(string), `"demo"`) {
		t.Fatalf("topics(): %v", got["topics"])
	}

	// urls: the first server is gone, the client moves to the next.
	moved, err := Eval[string](b, `(async () => {
		const m = await import('./wsready.js');
		const c3 = await m.connect({ stage: 7, urls: ['ws://127.0.0.1:9/ws', m.defaultURL()], backoffBaseMs: 100, backoffCapMs: 500 });
		try { await c3.ready({ timeoutMs: 15000 }); return 'ready after ' + c3.stats().dials + ' dials'; }
		catch (e) { return e.name; } finally { await c3.close(); }
	})()`)
	if err != nil || !strings.HasPrefix(moved, "ready after") {
		t.Fatalf("urls: %q %v", moved, err)
	}

	// Reload: the cursor survives in sessionStorage; the new page asks for
	// a replay from it and delivers exactly the next seq first.
	// The old page's last seq is read as it goes (pagehide, after the
	// client saved its cursor there): reading it earlier races the feed.
	if _, err := Eval[bool](b, `addEventListener('pagehide', () => sessionStorage.setItem('e2e.lastSeq', String(wsreadyDemo.lastSeq))), true`); err != nil {
		t.Fatal(err)
	}
	// Away while the feed moves on by 6, then back in the same tab: its
	// sessionStorage holds the cursor saved at pagehide.
	if err := b.Navigate("about:blank"); err != nil {
		t.Fatal(err)
	}
	from := env.Demo.Stats().FeedSeq
	if !poll.UntilEvery(10*time.Second, 50*time.Millisecond, func() bool { return env.Demo.Stats().FeedSeq >= from+6 }) {
		t.Fatalf("the feed did not move on by 6 within 10 s (seq %d, was %d)", env.Demo.Stats().FeedSeq, from)
	}
	if err := b.Navigate(env.Base + "/?stage=7"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "wsreadyDemo.state && wsreadyDemo.state.ready && wsreadyDemo.seqs.length > 3", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	before, err := Eval[float64](b, `Number(sessionStorage.getItem('e2e.lastSeq'))`)
	if err != nil || before < 1 {
		t.Fatalf("the old page's last seq: %v %v", before, err)
	}
	after, err := Eval[map[string]any](b, `({ first: wsreadyDemo.seqs[0], replayed: wsreadyDemo.client.stats().replayed,
		missed: wsreadyDemo.client.stats().missedUpdates, lost: wsreadyDemo.lost.length })`)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := after["first"].(float64)
	if first != before+1 || after["replayed"].(float64) < 1 || after["missed"] != 0.0 || after["lost"] != 0.0 {
		t.Fatalf("after the reload (last seq before %v): %v; want a replay starting right after the old page's last, nothing lost", before, after)
	}
	t.Logf("reload: last seq %v before, the new page's first %v, %v replayed", before, first, after["replayed"])
}
