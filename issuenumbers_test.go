package wsready_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// issueNumber is how a tracker's number reads in prose: the word issue
// or issues, a space and digits. A comment or a page says what was done and why instead;
// the CHANGELOG alone keeps its history as it was written.
var issueNumber = regexp.MustCompile(`(?i)\bissues? [0-9]+`)

// TestNoIssueNumbers: no issue number in the code, its comments, the test
// stories or the docs (generated ones included, so a generator's text is
// held to it as committed).
func TestNoIssueNumbers(t *testing.T) {
	texts := []string{".go", ".md", ".txt", ".js", ".mjs", ".ts", ".json", ".html", ".css", ".yml", ".yaml", ".sh", ".conf", ".cfg"}
	var hits []string
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") && name != ".github" && name != ".ci" || name == "node_modules" || name == "build" || name == "bin" || name == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		path = filepath.ToSlash(path)
		if path == "CHANGELOG.md" || !(slices.Contains(texts, filepath.Ext(name)) || name == "Makefile" || name == "Caddyfile" || name == "run") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		if issueNumber.Match(b) {
			for i, line := range strings.Split(string(b), "\n") {
				if m := issueNumber.FindString(line); m != "" {
					hits = append(hits, path+":"+strconv.Itoa(i+1)+": "+m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files read: the walk reads nothing", checked)
	}
	for _, h := range hits {
		t.Errorf("%s: say what and why instead of the issue's number", h)
	}
}
