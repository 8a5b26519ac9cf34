//go:build !js

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// wasmGoalBytes is the browser client's size goal: 0.62 MiB (650,117
// bytes) brotli, as make wasm builds and precompresses it
// (docs/performance.md's goals table).
const wasmGoalBytes = 650_117

// wasmCeilingBytes is what the test holds the wasm to: 610,941 bytes when
// make wasm began writing the data section as a few segments
// (internal/tools/wasmsegments: 655,627 to 610,941), and 2 KB for brotli's
// moves with code that does not change (docs/performance.md). A change
// that grows it past the ceiling fails make test; one that shrinks it may
// lower this.
const wasmCeilingBytes = 613_000

// TestWasmWithinItsCeiling builds the wasm as make wasm does (its flags
// read from the Makefile, so the two cannot drift), merges its data
// segments and precompresses it with the same tools and fails when the
// brotli file is over the ceiling; it says how far it is from the goal.
// After make wasm the build is cached: a link and a compression, a few
// seconds.
func TestWasmWithinItsCeiling(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^WASM_FLAGS := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no WASM_FLAGS := line")
	}
	env := wasmEnv()
	if e := regexp.MustCompile(`(?m)^WASM_ENV := (.*)$`).FindSubmatch(mk); e != nil {
		env = append(env, strings.Fields(string(e[1]))...)
	}
	out := filepath.Join(t.TempDir(), "wsready.wasm")
	ld := regexp.MustCompile(`(?m)^WASM_LDFLAGS := (.*)$`).FindSubmatch(mk)
	if ld == nil {
		t.Fatal("the Makefile has no WASM_LDFLAGS := line")
	}
	args := append([]string{"build", "-trimpath", "-ldflags=" + string(ld[1])}, strings.Fields(string(m[1]))...)
	build := exec.Command("go", append(args, "-o", out, "./wasm")...)
	build.Dir, build.Env = root, env
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("failed to build the wasm: %v\n%s", err, b)
	}
	// make wasm's recipe runs wasmsegments between the build and
	// precompress: so does this test.
	if !regexp.MustCompile(`(?m)^wasm:\n(\t.*\n)*\t\$\(GO\) run \./internal/tools/wasmsegments \$\(STATIC\)/wsready\.wasm\n\t\$\(GO\) run \./internal/tools/precompress `).Match(mk) {
		t.Fatal("make wasm no longer runs internal/tools/wasmsegments right before precompress: update this test with it")
	}
	seg := exec.Command("go", "run", "./internal/tools/wasmsegments", out)
	seg.Dir = root
	if b, err := seg.CombinedOutput(); err != nil {
		t.Fatalf("failed to merge the wasm's data segments: %v\n%s", err, b)
	}
	pc := exec.Command("go", "run", "./internal/tools/precompress", out)
	pc.Dir = root
	if b, err := pc.CombinedOutput(); err != nil {
		t.Fatalf("failed to precompress the wasm: %v\n%s", err, b)
	}
	fi, err := os.Stat(out + ".br")
	if err != nil {
		t.Fatal(err)
	}
	switch n := fi.Size(); {
	case n > wasmCeilingBytes:
		t.Fatalf("the wasm is %d bytes brotli, over its ceiling of %d by %d (its goal is %d; make size: what each package costs)",
			n, wasmCeilingBytes, n-wasmCeilingBytes, wasmGoalBytes)
	default:
		t.Logf("the wasm is %d bytes brotli: %d under its ceiling, %d under its goal", n, wasmCeilingBytes-n, wasmGoalBytes-n)
	}
}
