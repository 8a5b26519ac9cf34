//go:build !js

package e2e

import (
	"testing"
	"time"
)

// client.subscribed(topic) rejects with Aborted as soon as subscribe()'s
// function gives the topic up, even while nothing else happens (here no
// server answers and the next dial is 20 s away): it re-checked only when
// an event, a state or a topic error came, so it stayed pending until
// then.
func TestSubscribedAbortsWhenTheSubscriptionIsGivenUp(t *testing.T) {
	env, b := newEnv(t)
	if err := b.Navigate(env.Base + "/?stage=7"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "wsreadyDemo.state && wsreadyDemo.state.ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := Eval[string](b, `(async () => {
		const m = await import('./wsready.js');
		const c = await m.connect({ stage: 7, urls: ['ws://127.0.0.1:9/ws'], transports: ['websocket'], backoffBaseMs: 20000, backoffCapMs: 20000 });
		await new Promise((r) => setTimeout(r, 1000)); // the first dial has failed; the next is 20 s away
		const stop = c.subscribe('x', () => {});
		const p = c.subscribed('x').then(() => 'taken', (e) => e.name);
		stop();
		const out = await Promise.race([p, new Promise((r) => setTimeout(() => r('still pending after 2 s'), 2000))]);
		await c.close();
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if got != "Aborted" {
		t.Fatalf("subscribed() after the subscription was given up: %s", got)
	}
}
