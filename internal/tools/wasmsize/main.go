//go:build !js

// Command wasmsize prints what each Go package costs in the browser
// client's wasm: bytes of code and of data, sorted, the top N (default 25),
// and the whole. make size runs it; it is a build tool, not part of the
// product.
//
// How it counts. It builds the package for GOOS=js GOARCH=wasm with
// -trimpath (and GOFLAGS: make size sets make wasm's flags there) and the
// linker's -dumpdep (the symbols that survive dead-code
// elimination, and who reached each first), without -s so the wasm keeps its
// name section. Code is exact: each function's body in the wasm's code
// section, found by its name. Data is the size each surviving data symbol
// has in its package's compiled archive (`go tool nm -size`, the archives
// `go list -export` names). A symbol without a package of its own (a string
// literal, an anonymous type, an itab) is charged to the package of the
// symbol that reached it first. What the linker makes itself (the pc-value
// tables, the function tables) is in no archive: it is printed as one line,
// the data section's remainder. The br column compresses each package's
// code alone (quality 11): a lower bound is not claimed, it only ranks;
// what a cut saves is measured on the whole file (make size).
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
)

func main() {
	top := flag.Int("top", 25, "packages to print, largest first (0: all)")
	syms := flag.String("syms", "", "also print the largest functions of this package (its import path, or main), for finding what to cut")
	noBr := flag.Bool("nobr", false, "skip the per-package brotli column (it takes a few seconds)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: wasmsize [-top N] [-nobr] [PACKAGE] (default ./wasm)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *top < 0 {
		fmt.Fprintln(os.Stderr, "wasmsize: -top must be >= 0")
		os.Exit(2)
	}
	pkg := "./wasm"
	switch flag.NArg() {
	case 0:
	case 1:
		pkg = flag.Arg(0)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err := run(pkg, *top, !*noBr, *syms); err != nil {
		fmt.Fprintln(os.Stderr, "wasmsize:", err)
		os.Exit(1)
	}
}

// wasmEnv is the environment every go command here runs in.
func wasmEnv() []string { return append(os.Environ(), "GOOS=js", "GOARCH=wasm") }

type cost struct {
	pkg        string
	code, data int
	bodies     [][]byte
	br         int
}

func run(pkg string, top int, withBr bool, symsOf string) error {
	dir, err := os.MkdirTemp("", "wasmsize")
	if err != nil {
		return fmt.Errorf("failed to make a temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "x.wasm")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-dumpdep", "-o", out, pkg)
	build.Env = wasmEnv()
	dump, err := build.CombinedOutput()
	if err != nil {
		return fmt.Errorf("failed to build %s: %w\n%s", pkg, err, tail(dump))
	}
	parent, order := parseDumpdep(dump)

	funcs, sections, err := parseWasm(out)
	if err != nil {
		return fmt.Errorf("failed to read the wasm: %w", err)
	}
	dataSizes, err := archiveDataSizes(pkg)
	if err != nil {
		return err
	}

	costs := map[string]*cost{}
	charge := func(p string) *cost {
		c := costs[p]
		if c == nil {
			c = &cost{pkg: p}
			costs[p] = c
		}
		return c
	}
	// The name section spells each function with every byte other than a
	// letter, a digit, '_' or '.' made '_': map those back to the symbols.
	symbolOf := map[string]string{}
	for _, s := range order {
		symbolOf[nameRegexp.ReplaceAllString(s, "_")] = s
	}
	var codeSeen int
	var symList []wasmFunc
	for _, f := range funcs {
		sym, ok := symbolOf[f.name]
		if !ok {
			sym = f.name // the runtime's assembly entry points: their names need no change
		}
		p := packageOf(sym, parent)
		if p == symsOf {
			symList = append(symList, wasmFunc{name: sym, body: f.body})
		}
		c := charge(p)
		c.code += len(f.body)
		c.bodies = append(c.bodies, f.body)
		codeSeen += len(f.body)
	}
	var dataSeen int
	for _, s := range order {
		n, ok := dataSizes[s]
		if !ok {
			continue
		}
		charge(packageOf(s, parent)).data += n
		dataSeen += n
	}

	list := make([]*cost, 0, len(costs))
	for _, c := range costs {
		if c.pkg == "main" {
			c.pkg = "main (" + pkg + ")"
		}
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b *cost) int {
		return cmp.Or(cmp.Compare(b.code+b.data, a.code+a.data), cmp.Compare(a.pkg, b.pkg))
	})
	shown := list
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	if withBr {
		for _, c := range shown {
			c.br = brotliSize(bytes.Join(c.bodies, nil))
		}
	}

	raw, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("failed to read the wasm: %w", err)
	}
	flags := "-trimpath"
	if gf := os.Getenv("GOFLAGS"); gf != "" {
		flags += " " + gf // make size passes make wasm's WASM_FLAGS this way
	}
	fmt.Printf("%s for js/wasm (%s, name section kept for this count: %d bytes; make wasm's -s drops it)\n", pkg, flags, sections["name"])
	fmt.Printf("%-52s %9s %9s %9s %8s\n", "package", "total", "code", "data", "br(code)")
	var sTotal, sCode, sData int
	for _, c := range shown {
		br := "-"
		if withBr {
			br = strconv.Itoa(c.br)
		}
		fmt.Printf("%-52s %9d %9d %9d %8s\n", c.pkg, c.code+c.data, c.code, c.data, br)
		sTotal += c.code + c.data
		sCode += c.code
		sData += c.data
	}
	if rest := len(list) - len(shown); rest > 0 {
		fmt.Printf("%-52s %9d %9d %9d\n", fmt.Sprintf("(%d more packages)", rest), codeSeen+dataSeen-sTotal, codeSeen-sCode, dataSeen-sData)
	}
	linker := sections["data"] - dataSeen
	fmt.Printf("%-52s %9d %9s %9d\n", "(linker tables: pc-value, function tables)", linker, "", linker)
	fmt.Printf("%-52s %9d\n", "(section headers, imports, types, exports)", len(raw)-sections["code"]-sections["data"]-sections["name"])
	fmt.Printf("%-52s %9d %9d %9d   (%d packages)\n", "total without the name section", len(raw)-sections["name"], sections["code"], sections["data"], len(list))
	if symsOf != "" {
		slices.SortFunc(symList, func(a, b wasmFunc) int { return cmp.Compare(len(b.body), len(a.body)) })
		fmt.Printf("\nthe largest functions charged to %s (%d):\n", symsOf, len(symList))
		for _, f := range symList[:min(len(symList), max(top, 25))] {
			fmt.Printf("%9d %s\n", len(f.body), f.name)
		}
	}
	if codeSeen > sections["code"] {
		return errors.New("function bodies exceed the code section: the wasm was misread")
	}
	return nil
}

// tail returns the last lines of a build's output, for an error.
func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// parseDumpdep reads the linker's -dumpdep lines ("from -> to"): the first
// symbol that reached each one, and every reached symbol in order.
func parseDumpdep(b []byte) (parent map[string]string, order []string) {
	parent = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		// The linker marks some targets: "type:T <UsedInIface>".
		if i := strings.LastIndex(to, " <"); i >= 0 && strings.HasSuffix(to, ">") {
			to = to[:i]
		}
		if i := strings.LastIndex(from, " <"); i >= 0 && strings.HasSuffix(from, ">") {
			from = from[:i]
		}
		if _, seen := parent[to]; !seen {
			parent[to] = from
			order = append(order, to)
		}
	}
	return parent, order
}

// packageOf names the package a symbol is charged to: its own, or for a
// symbol without one, that of the first symbol that reached it.
func packageOf(sym string, parent map[string]string) string {
	for range 64 { // a chain of anonymous symbols longer than this is charged as is
		if p, ok := ownPackage(sym); ok {
			return p
		}
		up, ok := parent[sym]
		if !ok || up == "_" {
			break
		}
		sym = up
	}
	return "(runtime entry, anonymous)"
}

// ownPackage returns the import path in a symbol's name: "a/b.F" and
// "a/b.(*T).M" are a/b's, "type:*a/b.T" too; a string literal, an anonymous
// type, an itab or a linker symbol has none.
func ownPackage(sym string) (string, bool) {
	s := strings.TrimPrefix(sym, "type:")
	if s != sym {
		s = strings.TrimLeft(s, "*")
		if strings.HasPrefix(s, "func(") || strings.HasPrefix(s, "struct") || strings.HasPrefix(s, "map[") ||
			strings.HasPrefix(s, "[") || strings.HasPrefix(s, "chan") || strings.HasPrefix(s, "interface") ||
			strings.HasPrefix(s, "noalg.") || strings.HasPrefix(s, ".") {
			return "", false
		}
	}
	if strings.HasPrefix(s, "go:") || strings.HasPrefix(s, "go.") || strings.HasPrefix(s, "_") {
		return "", false
	}
	if i := strings.IndexAny(s, "[("); i >= 0 {
		s = s[:i]
	}
	slash := strings.LastIndexByte(s, '/')
	dot := strings.IndexByte(s[slash+1:], '.')
	if dot < 0 {
		return "", false
	}
	p := s[:slash+1+dot]
	if p == "" || p == "go" || p == "type" {
		return "", false
	}
	return p, true
}

// archiveDataSizes returns the size of every data symbol defined in the
// compiled archives of pkg and its dependencies (the first definition of a
// symbol several archives carry).
func archiveDataSizes(pkg string) (map[string]int, error) {
	list := exec.Command("go", "list", "-trimpath", "-export", "-deps", "-f", "{{.Export}}", pkg)
	list.Env = wasmEnv()
	list.Stderr = os.Stderr
	names, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("failed to list the archives of %s: %w", pkg, err)
	}
	nm := exec.Command("go", append([]string{"tool", "nm", "-size"}, strings.Fields(string(names))...)...)
	nm.Stderr = os.Stderr
	b, err := nm.Output()
	if err != nil {
		return nil, fmt.Errorf("failed to read the symbols of %s's archives: %w", pkg, err)
	}
	sizes := map[string]int{}
	for line := range strings.Lines(string(b)) {
		// "archive:\t[addr] size kind name"; the address is blank for
		// an undefined symbol, the name may hold spaces.
		_, rest, ok := strings.Cut(strings.TrimRight(line, "\n"), ":\t")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 3 {
			continue
		}
		if len(f) >= 4 && f[2] != "U" { // an address first
			rest = strings.TrimLeft(rest, " ")
			rest = strings.TrimLeft(rest[strings.IndexByte(rest, ' '):], " ")
		} else {
			rest = strings.TrimLeft(rest, " ")
		}
		g := strings.SplitN(rest, " ", 3)
		if len(g) < 3 {
			continue
		}
		n, err := strconv.Atoi(g[0])
		kind, name := g[1], g[2]
		if err != nil || kind == "U" || kind == "T" || kind == "t" {
			continue
		}
		if _, ok := sizes[name]; !ok {
			sizes[name] = n
		}
	}
	return sizes, nil
}

// nameRegexp is the Go linker's (cmd/link/internal/wasm): what it replaces
// with '_' in the name section.
var nameRegexp = regexp.MustCompile(`[^\w.]`)

type wasmFunc struct {
	name string
	body []byte
}

// parseWasm reads a wasm module's sections (sizes by name: "code", "data",
// a custom section's own name) and its functions' bodies named from the
// name section.
func parseWasm(path string) ([]wasmFunc, map[string]int, error) {
	d, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(d) < 8 || string(d[:4]) != "\x00asm" {
		return nil, nil, errors.New("not a wasm module")
	}
	r := &reader{b: d, i: 8}
	sections := map[string]int{}
	var bodies [][]byte
	var imported int
	names := map[int]string{}
	for r.i < len(d) && r.err == nil {
		start := r.i
		id := r.byte()
		n := int(r.uleb())
		if r.err != nil || r.i+n > len(d) {
			return nil, nil, errors.New("truncated section")
		}
		sec := &reader{b: d[:r.i+n], i: r.i}
		r.i += n
		switch id {
		case 2: // imports: function indices count them first
			for k := sec.uleb(); k > 0 && sec.err == nil; k-- {
				sec.skip(int(sec.uleb()))
				sec.skip(int(sec.uleb()))
				switch sec.byte() {
				case 0:
					sec.uleb()
					imported++
				case 1:
					sec.byte()
					sec.limits()
				case 2:
					sec.limits()
				case 3:
					sec.byte()
					sec.byte()
				}
			}
		case 10:
			sections["code"] = n
			for k := sec.uleb(); k > 0 && sec.err == nil; k-- {
				size := int(sec.uleb())
				if sec.i+size > len(sec.b) {
					return nil, nil, errors.New("truncated function body")
				}
				bodies = append(bodies, sec.b[sec.i:sec.i+size])
				sec.i += size
			}
		case 11:
			sections["data"] = n
		case 0:
			name := string(sec.bytes(int(sec.uleb())))
			sections[name] = r.i - start // with its header: what -s takes off
			if name != "name" {
				continue
			}
			for sec.i < len(sec.b) && sec.err == nil {
				sub := sec.byte()
				size := int(sec.uleb())
				end := sec.i + size
				if sub == 1 {
					for k := sec.uleb(); k > 0 && sec.err == nil; k-- {
						idx := int(sec.uleb())
						names[idx] = string(sec.bytes(int(sec.uleb())))
					}
				}
				sec.i = end
			}
		}
		if sec.err != nil {
			return nil, nil, sec.err
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	if len(names) == 0 {
		return nil, nil, errors.New("the wasm has no name section (built with -s?)")
	}
	funcs := make([]wasmFunc, len(bodies))
	for k, b := range bodies {
		name, ok := names[imported+k]
		if !ok {
			name = "_unnamed"
		}
		funcs[k] = wasmFunc{name: name, body: b}
	}
	return funcs, sections, nil
}

type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) byte() byte {
	if r.i >= len(r.b) {
		r.err = errors.New("truncated")
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) uleb() uint64 {
	var v uint64
	for s := 0; s < 64; s += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << s
		if c < 0x80 {
			return v
		}
	}
	r.err = errors.New("bad LEB128")
	return 0
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.i+n > len(r.b) {
		r.err = errors.New("truncated")
		return nil
	}
	r.i += n
	return r.b[r.i-n : r.i]
}

func (r *reader) skip(n int) { r.bytes(n) }

func (r *reader) limits() {
	if r.byte()&1 == 1 {
		r.uleb()
	}
	r.uleb()
}

func brotliSize(b []byte) int {
	var buf bytes.Buffer
	w := brotli.NewWriterLevel(&buf, brotli.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Len()
}
