//go:build js && wasm

package main

import (
	"testing"

	"github.com/hack-pad/safejs"
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
