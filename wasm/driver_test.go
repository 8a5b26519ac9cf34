//go:build js && wasm

package main

import (
	"testing"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
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
// update effect turned into the page's object and handed to its onUpdate
// (a JS function that does nothing). The core's share is the client
// package's BenchmarkCoreMessage. make wasm compiles this package and
// internal/bridge without inlining (issue 22); this measures what that
// costs: go test with and without GOFLAGS set to the Makefile's WASM_FLAGS.
func BenchmarkDeliverUpdate(b *testing.B) {
	ctor, err := safejs.Global().Get("Function")
	if err != nil {
		b.Fatal(err)
	}
	noop, err := ctor.New("u", "")
	if err != nil {
		b.Fatal(err)
	}
	d := &driver{cb: callbacks{onUpdate: noop}}
	u := client.Update{Topic: "feed", Seq: 1, Data: []byte(`{"price":101.5,"symbol":"ACME"}`), Epoch: 3}
	b.ReportAllocs()
	for b.Loop() {
		u.Seq++
		if d.wants(u.Topic) && isFunc(d.cb.onUpdate) {
			v, err := updateObject(u)
			d.invoke(d.cb.onUpdate, v, err)
		}
	}
}

// updateObject makes the object jsObject(bridge.UpdateValue(u)) makes,
// keys in the same order.
func TestUpdateObjectIsUpdateValue(t *testing.T) {
	stringify := func(v safejs.Value) string {
		j, err := safejs.Global().Get("JSON")
		if err != nil {
			t.Fatal(err)
		}
		s, err := j.Call("stringify", v)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.String()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, u := range []client.Update{
		{Topic: "feed", Seq: 7, Data: []byte(`{"a":[1,2]}`), Epoch: 2},
		{Topic: "room:1", Seq: 1 << 40, Data: []byte(`"x"`), Epoch: 1 << 33},
	} {
		got, err := updateObject(u)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsObject(bridge.UpdateValue(u))
		if err != nil {
			t.Fatal(err)
		}
		if g, w := stringify(got), stringify(want); g != w {
			t.Fatalf("updateObject: %s, want %s", g, w)
		}
	}
}
