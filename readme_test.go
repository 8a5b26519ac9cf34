package wsready_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
)

// The README's code is copied from files that are compiled: each Go,
// TypeScript or JavaScript block in it follows a marker
//
//	<!-- snippet: LANG PATH#REGION -->
//
// and must be exactly the lines of PATH between "// snippet:begin REGION"
// and "// snippet:end REGION" (blank lines at either end of the region
// left out). The TypeScript ones live in examples/vite/src and are checked
// by tsc --strict in make example; the Go ones are package main programs
// under examples/readme, compiled by go vet ./... and run together below.

// A README snippet: where it is and what it says it copies.
type snippet struct {
	line   int    // of the opening fence, 1-based
	lang   string // the fence's language
	file   string // PATH, relative to the repository's root
	region string // REGION
	body   string // the block's text, each line ending in "\n"
	end    int    // the closing fence's line, 1-based
}

// go test ./ -run TestREADMESnippets -update-readme copies each region into
// the README after a change to an example file.
var updateREADME = flag.Bool("update-readme", false, "rewrite the README's snippets from the regions they copy")

var (
	snippetMarker = regexp.MustCompile(`^<!-- snippet: (\S+) ([^#\s]+)#(\S+) -->$`)
	fenceLang     = regexp.MustCompile("^```+\\s*([A-Za-z0-9_+-]*)")
)

// checkedLangs are the languages of code that must compile, so each block
// of them needs a marker; shell and other blocks are free text.
var checkedLangs = []string{"go", "ts", "typescript", "js", "javascript", "tsx", "jsx"}

// readmeSnippets returns the README's code blocks in checked languages, or
// an error for one without a marker (a snippet nothing compiles).
func readmeSnippets(readme string) ([]snippet, []error) {
	var out []snippet
	var errs []error
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceLang.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], "`"))]
		start := i
		var body strings.Builder
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], fence); i++ {
			body.WriteString(lines[i] + "\n")
		}
		if !slices.Contains(checkedLangs, m[1]) {
			continue
		}
		prev := start - 1
		for prev >= 0 && strings.TrimSpace(lines[prev]) == "" {
			prev--
		}
		var mk []string
		if prev >= 0 {
			mk = snippetMarker.FindStringSubmatch(strings.TrimSpace(lines[prev]))
		}
		if mk == nil {
			errs = append(errs, fmt.Errorf("README.md:%d: a %s block without a <!-- snippet: LANG PATH#REGION --> marker: copy it from a file that compiles", start+1, m[1]))
			continue
		}
		if mk[1] != m[1] {
			errs = append(errs, fmt.Errorf("README.md:%d: the marker says %s, the block %s", start+1, mk[1], m[1]))
			continue
		}
		out = append(out, snippet{line: start + 1, end: i + 1, lang: m[1], file: mk[2], region: mk[3], body: body.String()})
	}
	return out, errs
}

// region returns the lines of text between the region's markers, without
// blank lines at either end, each ending in "\n".
func region(text, name string) (string, error) {
	lines := strings.Split(text, "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case "// snippet:begin " + name:
			if begin >= 0 {
				return "", fmt.Errorf("two begin markers for %s", name)
			}
			begin = i
		case "// snippet:end " + name:
			if end >= 0 {
				return "", fmt.Errorf("two end markers for %s", name)
			}
			end = i
		}
	}
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no region %s (// snippet:begin %[1]s ... // snippet:end %[1]s)", name)
	}
	body := lines[begin+1 : end]
	for len(body) > 0 && strings.TrimSpace(body[0]) == "" {
		body = body[1:]
	}
	for len(body) > 0 && strings.TrimSpace(body[len(body)-1]) == "" {
		body = body[:len(body)-1]
	}
	if len(body) == 0 {
		return "", fmt.Errorf("region %s is empty", name)
	}
	return strings.Join(body, "\n") + "\n", nil
}

// firstDifference says where two texts part, for a failure message.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the block: README has %q, the file %q", i+1, gl, wl)
		}
	}
	return "they differ"
}

// checkSnippet compares one README block with the file region it names,
// and checks that the file is one the build compiles.
func checkSnippet(root string, s snippet, tsIncluded []string) error {
	where := fmt.Sprintf("README.md:%d (%s#%s)", s.line, s.file, s.region)
	switch {
	case s.lang == "go" && strings.HasPrefix(s.file, "examples/") && strings.HasSuffix(s.file, ".go"):
	case (s.lang == "ts" || s.lang == "typescript") && strings.HasPrefix(s.file, "examples/vite/src/") && strings.HasSuffix(s.file, ".ts"):
		if !slices.Contains(tsIncluded, strings.TrimPrefix(s.file, "examples/vite/")) {
			return fmt.Errorf("%s: examples/vite/tsconfig.json does not include it, so make example does not check it", where)
		}
	default:
		return fmt.Errorf("%s: a %s snippet must come from a file that is compiled: a .go file under examples/ or a .ts file under examples/vite/src", where, s.lang)
	}
	text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.file)))
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	want, err := region(string(text), s.region)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if s.body != want {
		return fmt.Errorf("%s: the README's block is not the file's region (go test ./ -run TestREADMESnippets -update-readme copies it): %s", where, firstDifference(s.body, want))
	}
	return nil
}

// tsIncluded is the include list of the Vite example's tsconfig.json.
func tsIncluded(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("examples/vite/tsconfig.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct{ Include []string }
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("examples/vite/tsconfig.json: %v", err)
	}
	return cfg.Include
}

func TestREADMESnippetsAreCopiesOfCompiledFiles(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippets, errs := readmeSnippets(string(readme))
	for _, e := range errs {
		t.Error(e)
	}
	inc := tsIncluded(t)
	if *updateREADME {
		lines := strings.Split(string(readme), "\n")
		for i := len(snippets) - 1; i >= 0; i-- { // from the end: line numbers before stay
			s := snippets[i]
			text, err := os.ReadFile(filepath.FromSlash(s.file))
			if err != nil {
				t.Fatal(err)
			}
			body, err := region(string(text), s.region)
			if err != nil {
				t.Fatalf("%s: %v", s.file, err)
			}
			lines = slices.Replace(lines, s.line, s.end-1, strings.Split(strings.TrimSuffix(body, "\n"), "\n")...)
		}
		if err := os.WriteFile("README.md", []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		snippets, _ = readmeSnippets(strings.Join(lines, "\n"))
	}
	langs := map[string]int{}
	for _, s := range snippets {
		if err := checkSnippet(".", s, inc); err != nil {
			t.Error(err)
		}
		langs[s.lang]++
	}
	// The front door shows a web page's use and a Go program's.
	if langs["ts"] == 0 || langs["go"] == 0 {
		t.Errorf("the README has %d TypeScript and %d Go snippets; it should show both", langs["ts"], langs["go"])
	}
}

// The checks themselves fail where they should.
func TestREADMESnippetChecker(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "examples/vite/src"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := "// header\n// snippet:begin web\n\nconst a = 1;\nconsole.log(a);\n\n// snippet:end web\n"
	if err := os.WriteFile(filepath.Join(dir, "examples/vite/src/x.ts"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := strings.Join([]string{
		"# t",
		"<!-- snippet: ts examples/vite/src/x.ts#web -->",
		"```ts",
		"const a = 1;",
		"console.log(a);",
		"```",
		"",
		"<!-- snippet: ts examples/vite/src/x.ts#web -->",
		"",
		"```ts",
		"const a = 2;",
		"console.log(a);",
		"```",
		"```go",
		"package main",
		"```",
		"```sh",
		"make run",
		"```",
		"<!-- snippet: go examples/vite/src/x.ts#web -->",
		"```ts",
		"const a = 1;",
		"```",
	}, "\n") + "\n"
	snippets, errs := readmeSnippets(readme)
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "README.md:14: a go block without a <!-- snippet") || !strings.Contains(errs[1].Error(), "README.md:21: the marker says go, the block ts") {
		t.Fatalf("errors %v", errs)
	}
	if len(snippets) != 2 {
		t.Fatalf("%d snippets, want 2", len(snippets))
	}
	if err := checkSnippet(dir, snippets[0], []string{"src/x.ts"}); err != nil {
		t.Errorf("the copy is exact: %v", err)
	}
	err := checkSnippet(dir, snippets[1], []string{"src/x.ts"})
	if err == nil || !strings.Contains(err.Error(), `line 1 of the block: README has "const a = 2;", the file "const a = 1;"`) {
		t.Errorf("a changed line: %v", err)
	}
	if err := checkSnippet(dir, snippets[0], []string{"src/usage.ts"}); err == nil || !strings.Contains(err.Error(), "does not include it") {
		t.Errorf("a file tsc does not check: %v", err)
	}
	if _, err := region(file, "other"); err == nil {
		t.Error("a missing region is not an error")
	}
}

// The README's two Go programs, built from examples/readme as a reader
// would build them, work together: the server on a free loopback port, the
// client against it gets READY, the server's topic's updates and its echo
// back, and ends cleanly on Ctrl-C.
func TestREADMEGoSnippetsRunTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two programs")
	}
	bin := t.TempDir()
	for _, p := range []string{"server", "client"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, p), "./examples/readme/"+p)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./examples/readme/%s: %v\n%s", p, err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, filepath.Join(bin, "server"), "-addr", addr)
	var srvLog strings.Builder
	srv.Stdout, srv.Stderr = &srvLog, &srvLog
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
		if t.Failed() {
			t.Logf("the server's output:\n%s", srvLog.String())
		}
	}()
	// The server listens.
	if !poll.UntilEvery(20*time.Second, 50*time.Millisecond, func() bool {
		var c net.Conn
		if c, err = net.Dial("tcp", addr); err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("the server did not listen on %s: %v", addr, err)
	}

	cli := exec.CommandContext(ctx, filepath.Join(bin, "client"), "ws://"+addr+"/realtime")
	stdout, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var cliErr strings.Builder
	cli.Stderr = &cliErr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() { // ends when the client's stdout closes
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// What the client prints, in any order: the updates may come before
	// READY is printed.
	want := map[string]*regexp.Regexp{
		"READY": regexp.MustCompile(`^READY: true$`),
		"clock": regexp.MustCompile(`^clock #[1-9][0-9]* \{"unixMs":[0-9]{13}\}$`),
		"echo":  regexp.MustCompile(`^echo \{"hello":"world"\} <nil>$`),
	}
	seen := map[string]bool{}
	var got []string
	timeout := time.After(30 * time.Second)
	for len(seen) < len(want) {
		select {
		case l, ok := <-lines:
			if !ok {
				cli.Wait()
				t.Fatalf("the client ended before printing all of %v:\n%s\n%s", slices.Collect(maps.Keys(want)), strings.Join(got, "\n"), cliErr.String())
			}
			got = append(got, l)
			matched := false
			for k, re := range want {
				if re.MatchString(l) {
					seen[k], matched = true, true
				}
			}
			if !matched {
				t.Errorf("the client printed %q, which is none of %v", l, slices.Collect(maps.Keys(want)))
			}
		case <-timeout:
			cli.Process.Kill()
			cli.Wait()
			t.Fatalf("after 30 s the client had printed only:\n%s\n%s", strings.Join(got, "\n"), cliErr.String())
		}
	}
	// Ctrl-C ends it cleanly: it unsubscribes, closes and exits 0.
	if err := cli.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines { // more clock lines until it exits
		}
	}()
	if err := cli.Wait(); err != nil {
		t.Errorf("the client after Ctrl-C: %v\n%s", err, cliErr.String())
	}
}
