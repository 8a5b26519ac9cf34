package wsready_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/deploy.md's proxy configurations are the files beside it that the
// browser suite runs (e2e/proxy_test.go): each block marked
// <!-- file: PATH --> must be PATH's text exactly, so what users copy is
// what was tested.
func TestDeployDocBlocksAreTheTestedFiles(t *testing.T) {
	doc, err := os.ReadFile("docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile("(?m)^<!-- file: (\\S+) -->\n```\\S*\n")
	found := map[string]bool{}
	for _, m := range marker.FindAllStringSubmatchIndex(string(doc), -1) {
		path := string(doc[m[2]:m[3]])
		rest := string(doc[m[1]:])
		end := strings.Index(rest, "```\n")
		if end < 0 {
			t.Fatalf("docs/deploy.md: the block of %s is not closed", path)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("docs/deploy.md names %s: %v", path, err)
		}
		if rest[:end] != string(want) {
			t.Errorf("docs/deploy.md: the block marked %s differs from the file: copy the file into the block", path)
		}
		found[path] = true
	}
	for _, path := range []string{"docs/deploy/nginx.conf", "docs/deploy/haproxy.cfg", "docs/deploy/Caddyfile"} {
		if !found[path] {
			t.Errorf("docs/deploy.md has no block marked <!-- file: %s -->", path)
		}
	}
}
