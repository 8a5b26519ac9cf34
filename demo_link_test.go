package wsready_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// demoPackage is the demo's package: the failure switches, the feed and
// the site (server/demo).
const demoPackage = "github.com/wsready/wsready/server/demo"

// demoSymbols are the demo as the linker names it: anything of its
// package, and the server's Control methods, which only the demo calls
// (server/faults.go).
var demoSymbols = regexp.MustCompile(`wsready/server/demo\.\S+|wsready/server\.faultControl\.\S+`)

// A program that embeds the server without the demo (examples/app) does
// not depend on the demo's package, and its binary holds none of the
// demo's code: an application gets a server without the demo's paths.
// The demo is a package of its own, which wsready serve does depend on.
func TestTheAppDoesNotLinkTheDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/app")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	deps := func(pkg string) []string {
		t.Helper()
		out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	if !slices.Contains(deps("./cmd/wsready"), demoPackage) {
		t.Fatalf("wsready serve does not depend on %s: the demo is not a package of its own", demoPackage)
	}
	for _, dep := range deps("./examples/app") {
		if strings.Contains(dep, "/server/demo") {
			t.Errorf("examples/app depends on %s", dep)
		}
	}
	bin := filepath.Join(t.TempDir(), "app")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./examples/app").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	syms, err := exec.Command(gobin, "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(syms)) {
		if m := demoSymbols.FindString(line); m != "" && !seen[m] {
			seen[m] = true
			t.Errorf("examples/app links the demo's %s", m)
		}
	}
}
