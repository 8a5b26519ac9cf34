package wsready_test

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link and #anchor in README.md,
// docs/*.md (the guides) and docs/measured/*.md (what make targets write,
// checked as committed): the file or directory must exist in this
// repository, and an anchor must name a heading (or an <a id>) of the
// Markdown file it points into, by GitHub's rules. External links are
// counted, not fetched (this machine has no network for them).
func TestDocLinks(t *testing.T) {
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "docs/measured/*.md"} {
		docs, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			files = append(files, filepath.ToSlash(d))
		}
	}
	var total linkCount
	for _, f := range files {
		n, errs := checkLinks(os.DirFS("."), f)
		for _, e := range errs {
			t.Error(e)
		}
		total.relative += n.relative
		total.external += n.external
	}
	if total.relative == 0 {
		t.Fatal("no relative link found: the checker reads nothing")
	}
	t.Logf("%d files: %d relative links and anchors checked; %d external links not fetched", len(files), total.relative, total.external)
}

// The checker itself: each kind of broken link is reported, and nothing in
// a code block or a code span counts as a link.
func TestDocLinksCheckerFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A doc\n\n## Topics, publish and resume (stage 7)\n\n## Topics, publish and resume (stage 7)\n\n<a id=\"custom\"></a>\ntext\n")
	write("src/x.go", "package x\n")
	write("README.md", strings.Join([]string{
		"# Top `title`",
		"[ok file](docs/a.md) [ok anchor](docs/a.md#topics-publish-and-resume-stage-7)",
		"[ok duplicate](docs/a.md#topics-publish-and-resume-stage-7-1) [ok html](docs/a.md#custom)",
		"[ok self](#top-title) [ok dir](src) [ok line](src/x.go#L1) ![ok image](docs/a.md)",
		"[web](https://example.com/x) [mail](mailto:a@example.com)",
		"[bad file](docs/missing.md) [bad anchor](docs/a.md#nope) [bad self](#nowhere)",
		"[bad dir](nodir/) [escapes](../outside.md) [bad code anchor](src/x.go#main)",
		"[ref]: docs/gone.md",
		"`[not a link](in-a-code-span.md)` ``[nor](this.md)``",
		"`a code span [that wraps](to-the-next-line.md)",
		"ends here` and [a link whose text",
		"wraps](docs/wrapped.md)",
		"",
		"```md",
		"[not a link](in-a-code-block.md)",
		"```",
	}, "\n")+"\n")
	n, errs := checkLinks(os.DirFS(dir), "README.md")
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		"README.md:6: docs/missing.md: no such file",
		"README.md:6: docs/a.md#nope: no heading or <a id> makes that anchor",
		"README.md:6: #nowhere: no heading or <a id> makes that anchor",
		"README.md:7: nodir/: no such file",
		"README.md:7: ../outside.md: points outside the repository",
		"README.md:7: src/x.go#main: an anchor into a file that is not Markdown must be a line (#L12 or #L12-L20)",
		"README.md:8: docs/gone.md: no such file",
		"README.md:12: docs/wrapped.md: no such file",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n.relative != 16 || n.external != 2 {
		t.Errorf("counted %d relative and %d external links, want 16 and 2", n.relative, n.external)
	}
}

// GitHub's anchors: the heading's text, lowercased, punctuation dropped,
// each space a hyphen; markup is not part of the text.
func TestAnchorOf(t *testing.T) {
	for heading, want := range map[string]string{
		"Topics, publish and resume (stage 7)":                        "topics-publish-and-resume-stage-7",
		"Benchmarks: the server against a lean baseline (make bench)": "benchmarks-the-server-against-a-lean-baseline-make-bench",
		"Stage 8: where users are (the core's rules)":                 "stage-8-where-users-are-the-cores-rules",
		"`wsready serve` and its flags":                               "wsready-serve-and-its-flags",
		"**Bold** and [a link](x.md) and snake_case":                  "bold-and-a-link-and-snake_case",
		"Close codes 1000-4429":                                       "close-codes-1000-4429",
		"Two  spaces":                                                 "two--spaces",
		"Über größe":                                                  "über-größe",
	} {
		if got := anchorOf(heading); got != want {
			t.Errorf("anchorOf(%q) = %q, want %q", heading, got, want)
		}
	}
}

type linkCount struct{ relative, external int }

var (
	inlineLink  = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink     = regexp.MustCompile(`(?m)^[ ]{0,3}\[[^\]]+\]:[ \t]+<?([^\s>]+)>?`)
	htmlLink    = regexp.MustCompile(`(?i)<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"`)
	htmlAnchor  = regexp.MustCompile(`(?i)<a\s[^>]*?(?:id|name)="([^"]+)"`)
	atxHeading  = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$`)
	lineAnchor  = regexp.MustCompile(`^L\d+(-L\d+)?$`)
	hasScheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	fenceOpener = regexp.MustCompile("^\\s{0,3}(```+|~~~+)")
	setextLine  = regexp.MustCompile(`^\s{0,3}(=+|-+)\s*$`)
)

// checkLinks reads one Markdown file of fsys (paths are slash-separated,
// relative to the repository's root) and returns how many links it
// counted and an error for each one that points nowhere.
func checkLinks(fsys fs.FS, name string) (linkCount, []error) {
	var n linkCount
	text, err := fs.ReadFile(fsys, name)
	if err != nil {
		return n, []error{err}
	}
	var errs []error
	anchors := map[string]map[string]bool{}
	// The whole text at once, so that a link whose text wraps onto the
	// next line is read too; code is blanked out, its newlines kept.
	paras := strings.Split(strings.Join(proseLines(string(text)), "\n"), "\n\n")
	for i, p := range paras {
		paras[i] = withoutCodeSpans(p) // a code span ends with its paragraph
	}
	prose := strings.Join(paras, "\n\n")
	type found struct {
		at     int
		target string
	}
	var targets []found
	for _, re := range []*regexp.Regexp{inlineLink, refLink, htmlLink} {
		for _, m := range re.FindAllStringSubmatchIndex(prose, -1) {
			targets = append(targets, found{m[2], prose[m[2]:m[3]]})
		}
	}
	slices.SortFunc(targets, func(a, b found) int { return a.at - b.at })
	for _, f := range targets {
		if hasScheme.MatchString(f.target) {
			n.external++
			continue
		}
		n.relative++
		if err := checkTarget(fsys, name, f.target, anchors); err != nil {
			line := strings.Count(prose[:f.at], "\n") + 1
			errs = append(errs, fmt.Errorf("%s:%d: %s: %w", name, line, f.target, err))
		}
	}
	return n, errs
}

// checkTarget checks one relative link of the file from.
func checkTarget(fsys fs.FS, from, target string, anchors map[string]map[string]bool) error {
	file, anchor, _ := strings.Cut(target, "#")
	if file == "" {
		file = from
	} else {
		file = path.Join(path.Dir(from), file)
		if file == ".." || strings.HasPrefix(file, "../") {
			return fmt.Errorf("points outside the repository")
		}
	}
	if _, err := fs.Stat(fsys, file); err != nil {
		return fmt.Errorf("no such file")
	}
	if anchor == "" {
		return nil
	}
	if !strings.HasSuffix(file, ".md") {
		if lineAnchor.MatchString(anchor) {
			return nil
		}
		return fmt.Errorf("an anchor into a file that is not Markdown must be a line (#L12 or #L12-L20)")
	}
	if anchors[file] == nil {
		text, err := fs.ReadFile(fsys, file)
		if err != nil {
			return err
		}
		anchors[file] = anchorsOf(string(text))
	}
	if !anchors[file][anchor] {
		return fmt.Errorf("no heading or <a id> makes that anchor")
	}
	return nil
}

// anchorsOf lists the anchors a Markdown file has: one per heading (a
// repeated one gets -1, -2, ... as GitHub numbers them) and each <a id>
// or <a name>.
func anchorsOf(text string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	lines := proseLines(text)
	for i, line := range lines {
		heading := ""
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			heading = m[2]
		} else if i > 0 && setextLine.MatchString(line) && isParagraph(lines[i-1]) {
			heading = lines[i-1] // a setext heading: a paragraph's line underlined with === or ---
		}
		if heading != "" {
			a := anchorOf(heading)
			if k := seen[a]; k > 0 {
				set[fmt.Sprintf("%s-%d", a, k)] = true
			} else {
				set[a] = true
			}
			seen[a]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			set[m[1]] = true
		}
	}
	return set
}

var (
	mdLink  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// anchorOf is GitHub's anchor for a heading: its text (links by their
// text, without code and emphasis marks or HTML tags), lowercased, with
// every character but letters, digits, marks, '_', '-' and spaces dropped
// and each space made a hyphen.
func anchorOf(heading string) string {
	s := mdLink.ReplaceAllString(heading, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isParagraph reports whether a line is paragraph text (what a setext
// underline turns into a heading), not a heading, list item, table row or
// quote of its own.
func isParagraph(line string) bool {
	s := strings.TrimSpace(line)
	if s == "" || atxHeading.MatchString(line) {
		return false
	}
	for _, p := range []string{"|", ">", "- ", "* ", "+ ", "<"} {
		if strings.HasPrefix(s, p) {
			return false
		}
	}
	return true
}

// withoutCodeSpans drops the code spans of a text (a run of backticks up
// to the next run of the same length), keeping their newlines so that line
// numbers stay, so their text is not read as a link.
func withoutCodeSpans(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			b.WriteString(line)
			return b.String()
		}
		b.WriteString(line[:i])
		n := i
		for n < len(line) && line[n] == '`' {
			n++
		}
		ticks := line[i:n]
		end := -1
		for j := n; j < len(line); {
			k := strings.Index(line[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			m := k + len(ticks)
			if m == len(line) || line[m] != '`' {
				end = m
				break
			}
			for m < len(line) && line[m] == '`' {
				m++
			}
			j = m
		}
		if end < 0 { // no closing run: the backticks are text
			b.WriteString(ticks)
			line = line[n:]
			continue
		}
		b.WriteString(strings.Repeat("\n", strings.Count(line[i:end], "\n")))
		line = line[end:]
	}
}

// proseLines returns the file's lines with fenced code blocks blanked out,
// so that nothing in them is read as a link or a heading; line numbers
// stay.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, line := range lines {
		if fence != "" {
			if strings.HasPrefix(strings.TrimSpace(line), fence) {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		if m := fenceOpener.FindStringSubmatch(line); m != nil {
			fence = m[1]
			lines[i] = ""
		}
	}
	return lines
}
