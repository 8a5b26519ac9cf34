//go:build !js

package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The rule map in doc.go names files that exist, and every source file of
// the package is on it (by name, or by a family's glob): a file renamed or
// added without the map fails here.
func TestTheRuleMapNamesEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`[a-z_]+\*?\.go`)
	var patterns []string
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, "//\t") {
			continue // the map's lines only, not the prose
		}
		for _, p := range named.FindAllString(line, -1) {
			matches, _ := filepath.Glob(p)
			if len(matches) == 0 {
				t.Errorf("doc.go names %s: no such file", p)
			}
			patterns = append(patterns, p)
		}
	}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
			continue
		}
		found := false
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, f); ok {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s is not on doc.go's rule map", f)
		}
	}
}
