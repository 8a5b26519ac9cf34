package wsready_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsIndex keeps docs/ split in two: the guides (hand-written
// Markdown, and deploy/'s tested proxy configurations) at its top, what
// make targets write in docs/measured/; and docs/README.md links every
// guide and every measured file, so none is linked from nowhere.
func TestDocsIndex(t *testing.T) {
	index, err := os.ReadFile("docs/README.md")
	if err != nil {
		t.Fatalf("docs/README.md, the index of the guides and the measured files: %v", err)
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([^)#\s]+)`).FindAllStringSubmatch(string(index), -1) {
		linked[m[1]] = true
	}
	top, err := os.ReadDir("docs")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		name := e.Name()
		switch {
		case e.IsDir():
			if name != "measured" && name != "deploy" {
				t.Errorf("docs/%s/: docs/ holds the guides, deploy/ and measured/ only", name)
			}
		case name == "README.md":
		case strings.HasSuffix(name, ".md"):
			if !linked[name] {
				t.Errorf("docs/README.md does not link the guide %s", name)
			}
		default:
			t.Errorf("docs/%s: generated output (figures, charts, screenshots) belongs in docs/measured/", name)
		}
	}
	measured, err := os.ReadDir("docs/measured")
	if err != nil {
		t.Fatal(err)
	}
	if len(measured) == 0 {
		t.Fatal("docs/measured/ is empty")
	}
	for _, e := range measured {
		if p := filepath.ToSlash(filepath.Join("measured", e.Name())); !linked[p] {
			t.Errorf("docs/README.md does not link %s", p)
		}
	}
}
