//go:build !js

package e2e

import (
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

// In-band refresh in Chromium: with 3 s tickets the page's client (stage
// 8, the library's; the demo's default stage 5 predates the session
// rules) keeps its one connection for 5 s, its token hook asked
// late in each ticket's life and the fresh ticket sent on the live socket:
// no handshake, no 4001.
func TestBrowserInBandRefresh(t *testing.T) {
	env, b := newEnvWith(t, &server.Options{Auth: server.AuthRequired, TicketLife: 3 * time.Second})
	if err := b.Navigate(env.Base + "/?stage=8"); err != nil {
		t.Fatal(err)
	}
	if err := WaitJS(b, "window.wsreadyDemo && wsreadyDemo.state && wsreadyDemo.state.ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	env.Demo.ResetCounters()
	time.Sleep(5 * time.Second) // real time: a browser's timers are its own
	hs := env.Srv.Stats().HandshakesWindow
	st, err := Eval[map[string]float64](b, "wsreadyDemo.client.stats()")
	if err != nil {
		t.Fatal(err)
	}
	ready, err := Eval[bool](b, "wsreadyDemo.state.ready")
	if err != nil {
		t.Fatal(err)
	}
	if hs != 0 || st["tokenRefreshes"] != 0 || st["refreshes"] < 1 || !ready {
		dbg, _ := Eval[string](b, "JSON.stringify({state: wsreadyDemo.state, records: wsreadyDemo.records.slice(-5)})")
		t.Fatalf("5 s of 3 s tickets: %d handshakes, %v refreshes after a 4001, %v in-band refreshes, READY %v; want 0, 0, at least 1, true; the page: %s",
			hs, st["tokenRefreshes"], st["refreshes"], ready, dbg)
	}
	if a := env.Srv.Stats().Auth; a.Refreshed < 1 {
		t.Fatalf("the server took %d refreshes", a.Refreshed)
	}
}
