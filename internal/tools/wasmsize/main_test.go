//go:build !js

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestOwnPackage(t *testing.T) {
	for sym, want := range map[string]string{
		"github.com/wsready/wsready/client.(*Core).Received": "github.com/wsready/wsready/client",
		"type:*github.com/wsready/wsready/client.Core":       "github.com/wsready/wsready/client",
		"slices.Sort[go.shape.string]":                       "slices",
		"slices.Insert[go.shape.[]*a/b.c,go.shape.*uint8]":   "slices",
		"math/rand/v2.(*PCG).Uint64":                         "math/rand/v2",
		"runtime.memequal64·f":                               "runtime",
		"main.main":                                          "main",
		"go:string.\"x.y\"":                                  "",
		"type:func(time.Time)":                               "",
		"type:.namedata.*main.T-":                            "",
		"go:itab.*errors.errorString,error":                  "",
		"_rt0_wasm_js":                                       "",
	} {
		got, ok := ownPackage(sym)
		if got != want || ok != (want != "") {
			t.Errorf("ownPackage(%q) = %q, %v; want %q", sym, got, ok, want)
		}
	}
}

func TestParseDumpdepChargesAnonymousToFirstReacher(t *testing.T) {
	parent, order := parseDumpdep([]byte("# pkg\n_ -> main.main\nmain.main -> go:string.\"a -> b\"\nfmt.Sprint -> go:string.\"a -> b\"\nmain.main -> type:func(time.Time) <UsedInIface>\n"))
	if len(order) != 3 {
		t.Fatalf("order = %q, want 3 symbols", order)
	}
	if got := packageOf(`go:string."a -> b"`, parent); got != "main" {
		t.Errorf("the string is charged to %q, want main (who reached it first)", got)
	}
	if got := packageOf("type:func(time.Time)", parent); got != "main" {
		t.Errorf("the marked type is charged to %q, want main", got)
	}
}

// The whole count on a real build: the runtime, the program and strconv
// (Go 1.26 keeps its code in internal/strconv) are charged, with their
// functions, and fmt, which is not linked, is not; the total is the
// shipped (-s) file's size.
func TestRunOnATinyProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = f
	err = run("./testdata/tiny", 0, false, "internal/strconv")
	os.Stdout = stdout
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	s := string(b)
	for _, want := range []string{"\nruntime ", "\ninternal/strconv ", "\nmain (./testdata/tiny) ", " internal/strconv.", "total without the name section"} {
		if !contains(s, want) {
			t.Errorf("the report lacks %q:\n%s", want, s)
		}
	}
	// The total is what make wasm ships: the same build with -s.
	stripped := filepath.Join(dir, "s.wasm")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", stripped, "./testdata/tiny")
	build.Env = wasmEnv()
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	st, err := os.Stat(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%-52s %9d ", "total without the name section", st.Size()); !contains(s, want) {
		t.Errorf("the report's total is not the -s build's %d bytes:\n%s", st.Size(), s)
	}
	if contains(s, "\nfmt ") {
		t.Errorf("fmt is not linked, yet the report charges it:\n%s", s)
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
