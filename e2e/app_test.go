//go:build !js

package e2e

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/examples/app/app"
)

// The example application (examples/app, docs/app.md) in Chromium: its
// page, built by make example from the npm tarball, served by the app
// itself, with two users signed in through the app's own login in two
// browser contexts (two cookie jars). The page's window.appState is what
// these tests read; window.app holds the actions they drive.

const appDist = "../examples/app/web/dist"

// startApp runs the app on a loopback port with the built page.
func startApp(t *testing.T, cfg app.Config) (*app.App, string) {
	t.Helper()
	if _, err := os.Stat(appDist + "/index.html"); err != nil {
		t.Fatal("examples/app/web/dist is missing: run make example (make test does)")
	}
	cfg.Static = os.DirFS(appDist)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	hs := a.HTTPServer()
	go hs.Serve(ln)
	t.Cleanup(func() { a.Close(); hs.Close() })
	return a, "http://" + ln.Addr().String()
}

// signIn opens the app in b, signs in as user with the page's own login
// button, and waits until the page is READY with its cart and the lobby.
func signIn(t *testing.T, b *Browser, base, user string) {
	t.Helper()
	if err := b.Navigate(base + "/"); err != nil {
		t.Fatal(err)
	}
	button := fmt.Sprintf("document.querySelector('button[data-user=%q]')", user)
	if err := WaitJS(b, button, 20*time.Second); err != nil {
		t.Fatalf("%s: no login button: %v", user, err)
	}
	if _, err := Eval[bool](b, button+".click(), true"); err != nil {
		t.Fatal(err)
	}
	waitPage(t, b, user, fmt.Sprintf("appState.user === %q && appState.ready && appState.cart !== null && appState.lobby.includes(%q)", user, user), 30*time.Second)
}

// waitPage waits for a predicate on the page, showing its appState if it
// never holds.
func waitPage(t *testing.T, b *Browser, who, expr string, d time.Duration) {
	t.Helper()
	if err := WaitJS(b, "window.appState && ("+expr+")", d); err != nil {
		st, _ := Eval[map[string]any](b, "window.appState")
		t.Fatalf("%s: %v\nappState: %v", who, err, st)
	}
}

func evalPage[T any](t *testing.T, b *Browser, expr string) T {
	t.Helper()
	v, err := Eval[T](b, expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// Two users: each gets its own cart's updates and never the other's; the
// other's subscribe is refused with forbidden (the socket stays; READY
// waits until the page gives the topic up, as the app's page does); cart.add answers with the app's cart or its typed error; each
// sees the other in the lobby's presence, and the leave when one closes.
func TestApp(t *testing.T) {
	_, base := startApp(t, app.Config{})
	b, err := NewBrowser(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	alice, err := b.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := b.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bob.Close)
	signIn(t, alice, base, "alice")
	// The page as make example builds it (wsready/vite) and the app serves
	// it (wsready's StaticHandler): its wasm fetched once, brotli.
	wasmFetchedOnceBrotli(t, alice)
	signIn(t, bob, base, "bob")
	// Cookie mode (the app's default): the upgrade's session cookie said
	// who connected (Identify); the page fetched no token.
	if v := evalPage[map[string]any](t, alice, "({tokens: appState.tokens, calls: appState.tokenCalls})"); v["tokens"] != "cookie" || v["calls"] != float64(0) {
		t.Fatalf("token mode and calls: %v, want cookie and none", v)
	}

	// Presence: both in the lobby, on both pages.
	waitPage(t, alice, "alice", "appState.lobby.join() === 'alice,bob'", 10*time.Second)
	waitPage(t, bob, "bob", "appState.lobby.join() === 'alice,bob'", 10*time.Second)

	// Alice's cart.add: the app's answer, and the update on her private topic.
	r := evalPage[map[string]any](t, alice, "app.addToCart('apple', 3)")
	cart, _ := r["value"].(map[string]any)
	if r["ok"] != true || cart["user"] != "alice" || cart["version"] != float64(1) {
		t.Fatalf("alice's cart.add: %v", r)
	}
	waitPage(t, alice, "alice", "appState.cartUpdates === 1 && appState.cart.version === 1 && appState.cart.lines[0].qty === 3", 10*time.Second)

	// Bob asks for Alice's topic through the page: forbidden, his socket
	// stays (the same socket: one open), and the page gives the topic up.
	evalPage[bool](t, bob, "app.trySubscribe('user:alice.cart'), true")
	waitPage(t, bob, "bob", "appState.topicErrors.some(e => e.topic === 'user:alice.cart' && e.code === 'forbidden') && appState.lastError.code === 'forbidden'", 10*time.Second)
	// subscribed() says the same: Bob's own cart is taken; Alice's was
	// given up by the page (not asked for now); Carol's (asked now) is
	// refused with the server's code, and holds READY (ready() rejects at
	// once, the state names it) until it is given up.
	r = evalPage[map[string]any](t, bob, `(async () => {
		const c = app.client, out = {};
		const name = async (p) => { try { await p; return 'taken'; } catch (e) { return e.name + ':' + (e.code ?? ''); } };
		out.own = await name(c.subscribed('user:bob.cart', { timeoutMs: 5000 }));
		out.alice = await name(c.subscribed('user:alice.cart', { timeoutMs: 5000 }));
		const off = c.subscribe('user:carol.cart', () => {});
		out.carol = await name(c.subscribed('user:carol.cart', { timeoutMs: 5000 }));
		out.held = await name(c.ready({ timeoutMs: 5000 }));
		out.named = c.state().refused?.topic + ':' + c.state().refused?.code;
		off();
		out.ready = await name(c.ready({ timeoutMs: 5000 }));
		out.never = await name(c.subscribed('never-asked'));
		return out;
	})()`)
	if r["own"] != "taken" || r["alice"] != "TypeError:" || r["carol"] != "TopicRefused:forbidden" || r["held"] != "TopicRefused:forbidden" ||
		r["named"] != "user:carol.cart:forbidden" || r["ready"] != "taken" || r["never"] != "TypeError:" {
		t.Fatalf("bob's subscribed() and ready(): %v", r)
	}
	r = evalPage[map[string]any](t, alice, "app.addToCart('pear', 2)")
	if r["ok"] != true {
		t.Fatalf("alice's second cart.add: %v", r)
	}
	waitPage(t, alice, "alice", "appState.cartUpdates === 2 && appState.cart.version === 2 && appState.cart.lines.length === 2", 10*time.Second)
	browserRuns(300 * time.Millisecond) // anything misrouted to Bob has arrived by now
	st := evalPage[map[string]any](t, bob, "({ready: appState.ready, live: app.client.state().ready, opens: app.client.stats().opens, "+
		"seen: appState.topicsSeen, cartUpdates: appState.cartUpdates, version: appState.cart.version})")
	if st["ready"] != true || st["live"] != true || st["opens"] != float64(1) {
		t.Fatalf("bob after the refusal: %v, want READY on his first socket", st)
	}
	if st["cartUpdates"] != float64(0) || st["version"] != float64(0) || strings.Contains(fmt.Sprint(st["seen"]), "alice") {
		t.Fatalf("bob saw alice's cart: %v", st)
	}

	// Bob's own cart: an answer of his, and his page only.
	r = evalPage[map[string]any](t, bob, "app.addToCart('fig', 1)")
	if cart, _ := r["value"].(map[string]any); r["ok"] != true || cart["user"] != "bob" || cart["version"] != float64(1) {
		t.Fatalf("bob's cart.add: %v", r)
	}
	waitPage(t, bob, "bob", "appState.cartUpdates === 1 && appState.cart.lines[0].sku === 'fig'", 10*time.Second)

	// The app's typed errors, with its code and message.
	for _, tc := range []struct{ call, code, msg string }{
		{"app.addToCart('apple', 0)", "invalid_qty", "qty must be 1 to 10"},
		{"app.addToCart('kiwi', 1)", "unknown_sku", "no such product"},
	} {
		r := evalPage[map[string]any](t, bob, tc.call)
		if r["ok"] != false || r["code"] != tc.code || !strings.Contains(fmt.Sprint(r["message"]), tc.msg) {
			t.Fatalf("%s: %v, want %s: %s", tc.call, r, tc.code, tc.msg)
		}
		last := evalPage[map[string]any](t, bob, "appState.lastError")
		if last["code"] != tc.code || last["where"] != "cart.add" {
			t.Fatalf("%s: lastError %v", tc.call, last)
		}
	}
	if v := evalPage[float64](t, alice, "appState.cart.version"); v != 2 {
		t.Fatalf("alice's cart moved to version %v with bob's refused adds", v)
	}

	// Alice closes her browser context: Bob sees her leave.
	alice.Close()
	waitPage(t, bob, "bob", "appState.lobby.join() === 'bob' && appState.presenceEvents.some(p => p.event === 'leave' && p.user === 'alice')", 10*time.Second)
	if v := evalPage[bool](t, bob, "appState.ready"); !v {
		t.Fatal("bob left READY")
	}
}

// The JWT variant: the app mints HS256 JWTs living 3 s (whole seconds, so
// 2-3 s); wsready closes with 4001 at each exp, the page's token hook
// fetches a new one, and the page is READY again with every lobby update
// delivered once, in order.
func TestAppJWT(t *testing.T) {
	a, base := startApp(t, app.Config{Tokens: app.TokensJWT, JWTLife: 3 * time.Second})
	b, err := NewBrowser(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	carol, err := b.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(carol.Close)
	signIn(t, carol, base, "carol")
	if v := evalPage[string](t, carol, "appState.tokens"); v != "jwt" {
		t.Fatalf("tokens %q, want jwt", v)
	}
	waitPage(t, carol, "carol", "app.client.topics().some(s => s.topic === 'room:lobby' && s.subscribed)", 10*time.Second)

	// Lobby updates from Go, every 100 ms for 8 s: across two expiries or more
	// (the first JWT was minted at sign-in, each lives 2-3 s).
	const n = 80
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		if _, err := a.Server().Publish(t.Context(), app.Lobby, fmt.Appendf(nil, `{"user":"app","text":"tick %d"}`, i+1)); err != nil {
			t.Fatalf("publish %d: %v", i+1, err)
		}
		<-tick.C
	}
	waitPage(t, carol, "carol", fmt.Sprintf("appState.ready && appState.lobbySeqs.length >= %d", n), 10*time.Second)
	st := evalPage[map[string]any](t, carol, "({seqs: appState.lobbySeqs, refreshes: appState.refreshes, forced: appState.tokenForced, "+
		"calls: appState.tokenCalls, readyCount: appState.readyCount, refreshStats: app.client.stats().refreshes, ended: appState.ended})")
	seqs, _ := st["seqs"].([]any)
	if len(seqs) != n {
		t.Fatalf("%d lobby updates, want %d: %v", len(seqs), n, seqs)
	}
	for i, s := range seqs {
		if s != float64(i+1) {
			t.Fatalf("lobby seqs %v: want 1..%d once each, in order", seqs, n)
		}
	}
	// In-band refresh (on by default): fresh JWTs sent on the live
	// connection before each exp, READY throughout, no 4001.
	if st["forced"].(float64) < 2 || st["refreshStats"].(float64) < 2 || st["refreshes"].(float64) != 0 || st["readyCount"].(float64) != 1 || st["ended"] != nil {
		t.Fatalf("over 8 s of 3 s JWTs: %v, want two in-band refreshes or more, no 4001, READY once and throughout", st)
	}
	t.Logf("8 s of 3 s JWTs: %v in-band refreshes, %v token calls (%v forced), READY %v times, %d updates delivered once each",
		st["refreshStats"], st["calls"], st["forced"], st["readyCount"], n)
}
