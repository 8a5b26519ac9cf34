// Command jsguard runs github.com/hack-pad/safejs's jsguard analyzer: it
// reports every call into syscall/js that can panic (everything but
// Global, Null, Undefined, Value.Type, IsNull, IsUndefined, Equal, IsNaN,
// Type.String and Func.Release), so the browser client calls the browser
// through safejs. make vet builds it into bin/ and runs it with
// GOOS=js GOARCH=wasm over the packages compiled into the wasm.
//
// It is a module of its own because jsguard needs a recent
// golang.org/x/tools to read Go 1.26 export data (safejs v0.1.0 pins
// v0.5.0, which panics on it), and that dependency stays out of wsready's
// go.mod.
package main

import (
	"github.com/hack-pad/safejs/jsguard"
	"golang.org/x/tools/go/analysis/singlechecker"
)

func main() {
	singlechecker.Main(jsguard.Analyzer)
}
