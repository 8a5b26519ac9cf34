package wsready_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxTestSleeps bounds the time.Sleep calls in the tests of every module in
// the repository. A test waits on what it awaits (a channel, a counter, a
// state: internal/poll), or runs on fake time (testing/synctest, the
// server's Options.Now, the client core's clock); a sleep stays only where
// wall time is the point (a real browser or process runs on it, a library's
// own timer), and says so.
const maxTestSleeps = 25

// TestSleepsInTestsAreFewAndSayWhy: at most maxTestSleeps time.Sleep calls in
// *_test.go files (third_party/ aside: not ours), each with a comment on its
// line or the line before saying why real time is the point.
func TestSleepsInTestsAreFewAndSayWhy(t *testing.T) {
	var sleeps, bare []string
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "third_party" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if !strings.Contains(line, "time.Sleep(") || strings.Contains(line, `"time.Sleep("`) {
				continue // the needle above is not a call
			}
			at := filepath.ToSlash(path) + ":" + strconv.Itoa(i+1)
			sleeps = append(sleeps, at)
			if !strings.Contains(line, "// ") && (i == 0 || !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "// ")) {
				bare = append(bare, at)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d test files read: the walk reads nothing", files)
	}
	if len(sleeps) > maxTestSleeps {
		t.Errorf("%d time.Sleep calls in tests, at most %d: wait on the condition (internal/poll) or on fake time (testing/synctest) instead:\n%s",
			len(sleeps), maxTestSleeps, strings.Join(sleeps, "\n"))
	}
	if len(bare) > 0 {
		t.Errorf("time.Sleep without a comment (on its line or the one before) saying why real time is the point:\n%s", strings.Join(bare, "\n"))
	}
}
