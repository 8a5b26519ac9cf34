//go:build !js

package native

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's Go snippet compiles in a module of its own that requires
// wsready (replaced by this checkout), as a newcomer would use it.
func TestREADMESnippetBuildsInAnOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- snippet: go[^>]*-->\\s*```go\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no Go snippet")
	}
	dir := t.TempDir()
	gomod := "module example.com/app\n\ngo 1.26.0\n\nrequire github.com/wsready/wsready v0.0.0\n\nreplace github.com/wsready/wsready => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
