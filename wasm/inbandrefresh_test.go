//go:build js && wasm

package main

import (
	"strings"
	"testing"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/internal/bridge"
)

// noNetwork stands in a WebSocket that never opens (no network) and, on
// Node, which has no window, no-op addEventListener and
// removeEventListener, for a driver made with newDriver; the originals
// come back when the test ends.
func noNetwork(t *testing.T) {
	t.Helper()
	g := safejs.Global()
	fn, _ := g.Get("Function")
	orig, _ := g.Get("WebSocket")
	mk, err := fn.New(`return class { constructor(url) { this.url = url; } send() {} close() {} };`)
	if err != nil {
		t.Fatal(err)
	}
	class, err := mk.Invoke()
	if err != nil {
		t.Fatal(err)
	}
	g.Set("WebSocket", class)
	t.Cleanup(func() { g.Set("WebSocket", orig) })
	for _, name := range []string{"addEventListener", "removeEventListener"} {
		if v, _ := g.Get(name); v.Type() != safejs.TypeFunction {
			noop, _ := fn.New("")
			g.Set(name, noop)
			t.Cleanup(func() { g.Delete(name) })
		}
	}
}

// connect's inBandRefresh option reaches the core's Config: read from
// the page's options object as connectJS reads it, false sets
// client.Config.NoInBandRefresh (the connection then ends with 4001 at
// each token's expiry and the client dials again), true or leaving it
// out keeps the refresh on. Anything but a boolean is refused by
// connect, naming the option.
func TestInBandRefreshOption(t *testing.T) {
	noNetwork(t)
	token := js(t, nil, `return () => 'tok'`)
	for _, c := range []struct {
		opts string
		off  bool
	}{
		{`{url: 'ws://127.0.0.1:1/ws', tabs: false}`, false},
		{`{url: 'ws://127.0.0.1:1/ws', tabs: false, inBandRefresh: true}`, false},
		{`{url: 'ws://127.0.0.1:1/ws', tabs: false, inBandRefresh: false}`, true},
	} {
		o, err := bridge.ParseOptions(jsGetter{js(t, nil, `return `+c.opts)})
		if err != nil {
			t.Fatalf("%s: %v", c.opts, err)
		}
		d, err := newDriver(o, callbacks{token: token})
		if err != nil {
			t.Fatalf("%s: %v", c.opts, err)
		}
		cfg := d.cfg // what client.New was given
		d.stop()
		if !cfg.Auth || cfg.NoInBandRefresh != c.off {
			t.Errorf("%s: Config.Auth %v, NoInBandRefresh %v; want Auth (a token hook), NoInBandRefresh %v", c.opts, cfg.Auth, cfg.NoInBandRefresh, c.off)
		}
	}
	for _, bad := range []string{`'no'`, `0`, `'false'`} {
		v := connectJS([]safejs.Value{js(t, nil, `return {url: 'ws://127.0.0.1:1/ws', tabs: false, inBandRefresh: `+bad+`}`)})
		sv, ok := v.(safejs.Value)
		if !ok {
			t.Fatalf("inBandRefresh: %s: connect returned %T, want an {error} object", bad, v)
		}
		e, _ := sv.Get("error")
		msg, _ := e.String()
		if !strings.Contains(msg, "inBandRefresh must be true or false") {
			t.Errorf("inBandRefresh: %s: connect answered error %q, want one naming inBandRefresh", bad, msg)
		}
	}
}
