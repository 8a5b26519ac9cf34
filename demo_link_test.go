package wsready_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoSymbols are the demo's failure switches as the linker names them:
// their state (switchState, then demoFaults), the Freeze gate's switch
// and the gated connection it held every WebSocket behind.
var demoSymbols = regexp.MustCompile(`wsready/server\.(switchState|\(\*?demoFaults\)|\(\*gate\)\.set|\(\*?gatedConn\))`)

// A program that embeds the server without the demo (examples/app) does
// not depend on a demo package, and its binary holds none of the demo's
// switches: an application gets a server without the demo's paths.
func TestTheAppDoesNotLinkTheDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/app")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", "./examples/app").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for dep := range strings.Lines(string(out)) {
		if strings.Contains(dep, "/server/demo") {
			t.Errorf("examples/app depends on %s", strings.TrimSpace(dep))
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
