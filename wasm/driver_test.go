//go:build js && wasm

package main

import (
	"strings"
	"testing"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/internal/stages"
)

// TestFuncOfRecoversAPanic: a Go callback that panics is reported on the
// console and returns undefined; the program goes on (safejs.FuncOf alone
// would let the panic end it, and every page handle with it).
func TestFuncOfRecoversAPanic(t *testing.T) {
	console, err := safejs.Global().Get("console")
	if err != nil {
		t.Fatal(err)
	}
	orig, err := console.Get("error")
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	spy, err := safejs.FuncOf(func(_ safejs.Value, args []safejs.Value) any {
		if len(args) > 0 {
			s, _ := args[0].String()
			logged = append(logged, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Release()
	if err := console.Set("error", spy.Value()); err != nil {
		t.Fatal(err)
	}
	defer console.Set("error", orig)

	calls := 0
	f, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		calls++
		if len(args) > 0 {
			panic("boom")
		}
		return "fine"
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	v, err := f.Value().Invoke(1)
	if err != nil {
		t.Fatalf("a panicking callback threw into JS: %v", err)
	}
	if !v.IsUndefined() {
		t.Fatalf("a panicking callback returned %v, want undefined", v.Type())
	}
	if len(logged) != 1 || logged[0] != "wsready: a callback panicked: boom" {
		t.Fatalf("console.error got %q", logged)
	}
	v, err = f.Value().Invoke()
	if err != nil || v.Type() != safejs.TypeString {
		t.Fatalf("the callback after a panic: %v, %v", v.Type(), err)
	}
	if s, _ := v.String(); s != "fine" || calls != 2 {
		t.Fatalf("the callback after a panic gave %q after %d calls", s, calls)
	}
}

// BenchmarkDeliverUpdate is the driver's share of the per-frame step: an
// update effect handed to the page's onUpdate (a JS function that does
// nothing). The core's share is the client package's BenchmarkCoreMessage.
// make wasm compiles this package and internal/bridge without inlining
// (docs/performance.md); this measures what that costs: go test with and without
// GOFLAGS set to the Makefile's WASM_FLAGS.
func BenchmarkDeliverUpdate(b *testing.B) {
	ctor, err := safejs.Global().Get("Function")
	if err != nil {
		b.Fatal(err)
	}
	// The data decoded as wsready.js does: that work was wasm_exec.js's
	// when the data crossed as a string.
	noop, err := ctor.New("topic", "seq", "epoch", "n", "bytes", `globalThis.__td ||= new TextDecoder(); globalThis.__td.decode(bytes.subarray(0, n));`)
	if err != nil {
		b.Fatal(err)
	}
	d := &driver{cb: callbacks{onUpdate: noop}}
	u := client.Update{Topic: "feed", Seq: 1, Data: []byte(`{"price":101.5,"symbol":"ACME"}`), Epoch: 3}
	b.ReportAllocs()
	for b.Loop() {
		u.Seq++
		if d.wants(u.Topic) && isFunc(d.cb.onUpdate) {
			d.deliver(u)
		}
	}
}

// An update reaches the page's onUpdate in one call with its topic, seq,
// epoch, and its data as the first n bytes of a buffer (wsready.js makes
// the page's object of them), whatever the topic of the update before it,
// the data longer or shorter than the one before.
func TestUpdateIsOneCall(t *testing.T) {
	ctor, err := safejs.Global().Get("Function")
	if err != nil {
		t.Fatal(err)
	}
	record, err := ctor.New("topic", "seq", "epoch", "n", "bytes", "at",
		`globalThis.__updates = (globalThis.__updates || []).concat([[topic, seq, epoch, at >= 0 ? 'at ' + at + ' ' + n : new TextDecoder().decode(bytes.subarray(0, n))]]);`)
	if err != nil {
		t.Fatal(err)
	}
	g := safejs.Global()
	g.Set("__updates", safejs.Undefined())
	t.Cleanup(func() { g.Set("__updates", safejs.Undefined()) })
	cfg, err := stages.Config(stages.Max, func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	core, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{core: core, q: bridge.NewQueue(), cb: callbacks{onUpdate: record}, sockets: map[client.SocketID]transport{}}
	for _, u := range []client.Update{
		{Topic: "feed", Seq: 7, Data: []byte(`{"a":[1,2]}`), Epoch: 2},
		{Topic: "feed", Seq: 8, Data: []byte(`3`), Epoch: 2},
		{Topic: "room:1", Seq: 1 << 40, Data: []byte(`"x"`), Epoch: 1 << 33},
		{Topic: "feed", Seq: 9, Data: []byte(`null`), Epoch: 2},
		{Topic: "feed", Seq: 10, Data: []byte(`"` + strings.Repeat("é", 1500) + `"`), Epoch: 2}, // past the first buffer
		{Topic: "feed", Seq: 11, Data: []byte(`{}`), Epoch: 2},
		{Topic: "feed", Seq: 12, Data: nil, Epoch: 2},
	} {
		d.deliver(u)
	}
	// The frame being stepped held as text by the page: the data's offset
	// in it, no bytes (but data not in it, or none, by the buffer).
	inText = []byte(`{"type":"update","topic":"feed","seq":13,"data":{"v":[1]}}`)
	for _, u := range []client.Update{
		{Topic: "feed", Seq: 13, Data: []byte(`{"v":[1]}`), Epoch: 2},
		{Topic: "feed", Seq: 14, Data: []byte(`{"w":2}`), Epoch: 2},
		{Topic: "feed", Seq: 15, Data: nil, Epoch: 2},
	} {
		d.deliver(u)
	}
	inText = nil
	j, err := g.Get("JSON")
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Get("__updates")
	if err != nil {
		t.Fatal(err)
	}
	s, err := j.Call("stringify", got)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := s.String()
	want := `[["feed",7,2,"{\"a\":[1,2]}"],["feed",8,2,"3"],["room:1",1099511627776,8589934592,"\"x\""],["feed",9,2,"null"],` +
		`["feed",10,2,"\"` + strings.Repeat("é", 1500) + `\""],["feed",11,2,"{}"],["feed",12,2,""],` +
		`["feed",13,2,"at 48 9"],["feed",14,2,"{\"w\":2}"],["feed",15,2,""]]`
	if out != want {
		t.Fatalf("onUpdate got %s, want %s", out, want)
	}
}
