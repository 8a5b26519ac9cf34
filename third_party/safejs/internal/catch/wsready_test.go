//go:build js && wasm

package catch

import (
	"fmt"
	"testing"
)

type stringer struct{}

func (stringer) String() string { return "a stringer" }

// TestPanicValueText: wsready's change builds the error without fmt; for
// the values it prints, the text is upstream's fmt.Errorf("%+v", value).
func TestPanicValueText(t *testing.T) {
	for _, v := range []any{"some error", stringer{}, 42, -7, true, false} {
		err := TrySideEffect(func() { panic(v) })
		if want := fmt.Sprintf("%+v", v); err == nil || err.Error() != want {
			t.Errorf("panic(%#v): got %v, want %q", v, err, want)
		}
	}
	err := TrySideEffect(func() { panic(3.5) })
	if err == nil || err.Error() != "panic with a value of a type safejs does not print" {
		t.Errorf("panic(3.5): got %v", err)
	}
}
