//go:build !js

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// module builds a wasm module: a type section (kept as it is) and a data
// section holding segs in the order given.
func module(segs ...segment) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = appendSection(b, 1, []byte{1, 0x60, 0, 0}) // one type: func() -> ()
	return appendSection(b, sectionData, writeSegments(segs))
}

func seg(offset int, data string) segment { return segment{offset: offset, data: []byte(data)} }

// dataOf returns a module's data segments and its other sections' bytes.
func dataOf(t *testing.T, m []byte) (segs []segment, rest []byte) {
	t.Helper()
	r := &reader{b: m, i: 8}
	for r.i < len(m) {
		start := r.i
		id := r.byte()
		size := int(r.uleb())
		if r.err != nil || size > len(m)-r.i {
			t.Fatalf("a section runs past the end")
		}
		if id == sectionData {
			var err error
			if segs, err = readSegments(m[r.i : r.i+size]); err != nil {
				t.Fatal(err)
			}
		} else {
			rest = append(rest, m[start:r.i+size]...)
		}
		r.i += size
	}
	return segs, rest
}

// memoryImage is the memory segs initialize, up to the end of the last.
func memoryImage(segs []segment) []byte {
	var img []byte
	for _, s := range segs {
		if end := s.offset + len(s.data); end > len(img) {
			img = append(img, make([]byte, end-len(img))...)
		}
		copy(img[s.offset:], s.data)
	}
	return img
}

func TestMergeJoinsShortGapsOnly(t *testing.T) {
	// Out of order, as Go's linker may write them; gaps of 0, 3, 4 and 100.
	in := module(seg(200, "far"), seg(10, "ab"), seg(12, "cd"), seg(17, "ef"), seg(23, "gh"))
	out, before, after, err := mergeSegments(in, 4)
	if err != nil {
		t.Fatal(err)
	}
	segs, rest := dataOf(t, out)
	if before != 5 || after != 3 || len(segs) != 3 {
		t.Fatalf("%d segments to %d (%d read back), want 5 to 3", before, after, len(segs))
	}
	want := []segment{seg(10, "abcd\x00\x00\x00ef"), seg(23, "gh"), seg(200, "far")}
	for i, s := range segs {
		if s.offset != want[i].offset || !bytes.Equal(s.data, want[i].data) {
			t.Errorf("segment %d = %d %q, want %d %q", i, s.offset, s.data, want[i].offset, want[i].data)
		}
	}
	inSegs, inRest := dataOf(t, in)
	if !bytes.Equal(memoryImage(segs), memoryImage(inSegs)) {
		t.Error("the memory the module starts with changed")
	}
	if !bytes.Equal(rest, inRest) {
		t.Error("a section other than the data changed")
	}
	again, _, n, err := mergeSegments(out, 4)
	if err != nil || n != 3 || !bytes.Equal(again, out) {
		t.Errorf("a second pass changed the module (%d segments, %v)", n, err)
	}
	// -gap 0 merges none: the segments are only sorted.
	sorted, _, n, err := mergeSegments(in, 0)
	if segs, _ := dataOf(t, sorted); err != nil || n != 5 || segs[0].offset != 10 || segs[4].offset != 200 {
		t.Errorf("gap 0: %d segments, %v", n, err)
	}
}

func TestMergeRefusesWhatItDoesNotUnderstand(t *testing.T) {
	passive := []byte("\x00asm\x01\x00\x00\x00")
	passive = appendSection(passive, sectionData, []byte{1, 1, 2, 'h', 'i'}) // flag 1: passive
	dataCount := appendSection(module(seg(0, "x")), sectionDataCount, []byte{1})
	for name, m := range map[string][]byte{
		"overlapping":       module(seg(10, "abcd"), seg(12, "xy")),
		"passive":           passive,
		"a data count":      dataCount,
		"not wasm":          []byte("\x7fELF\x02\x01\x01\x00"),
		"no data":           []byte("\x00asm\x01\x00\x00\x00"),
		"truncated":         module(seg(0, "abc"))[:20],
		"a negative offset": module(seg(-8, "abc")),
	} {
		if _, _, _, err := mergeSegments(m, 64); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A real Go program, packed, starts with the same memory, keeps every
// other section, and runs under Node as it did: its output names a
// function found by its program counter through the runtime's tables.
func TestPackedProgramRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm and runs it under Node")
	}
	execJS := filepath.Join(runtime.GOROOT(), "lib", "wasm", "go_js_wasm_exec")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node to run the wasm")
	}
	dir := t.TempDir()
	wasm := filepath.Join(dir, "tiny.wasm")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", wasm, "./testdata/tiny")
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	in, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	out, before, after, err := mergeSegments(in, 64)
	if err != nil {
		t.Fatal(err)
	}
	if after*100 > before {
		t.Errorf("%d segments to %d: expected at most a hundredth of them left", before, after)
	}
	inSegs, inRest := dataOf(t, in)
	outSegs, outRest := dataOf(t, out)
	if !bytes.Equal(memoryImage(outSegs), memoryImage(inSegs)) {
		t.Error("the memory the program starts with changed")
	}
	if !bytes.Equal(outRest, inRest) {
		t.Error("a section other than the data changed")
	}
	if err := os.WriteFile(wasm, out, 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(execJS, wasm)
	run.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	got, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the packed program failed: %v\n%s", err, got)
	}
	if s := strings.TrimSpace(string(got)); s != "10 main.where:17" {
		t.Errorf("the packed program printed %q, want \"10 main.where:17\"", s)
	}
}
