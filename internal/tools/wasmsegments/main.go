//go:build !js

// Command wasmsegments rewrites a Go wasm's data section with fewer, longer
// segments: two segments with fewer than -gap zero bytes between them become
// one that writes those zeros out. make wasm runs it on the wasm before
// precompressing it; it is a build tool, not part of the product.
//
// Why. Go's linker (cmd/link/internal/wasm, writeDataSec) starts a new
// segment wherever a run of 8 or more zero bytes can be left out, which is
// what makes the raw file smallest. The runtime's findfunctab is one
// 20-byte bucket per 4,096 of the program counter's space, and a wasm
// program counter is the function's index times 65,536: 16 buckets per
// function, each two bytes that are not zero and 18 that are, so each a
// segment of its own (34,000 of the wasm's 41,000). A segment's header
// (its flags, the offset's i32.const, the size) is about 7 bytes that
// brotli and gzip compress badly: the offsets climb by 20. Written out,
// the zeros compress to almost nothing, and the brotli file is 45 KB
// smaller (docs/performance.md, "Size of the browser client").
//
// What it keeps. The memory the module starts with is the same byte for
// byte: a segment only ever covers a gap in no other segment's range, and
// a fresh memory is zero there. Every other section is copied as it is.
// It refuses a module whose data it does not understand: a passive
// segment, an offset that is not an i32.const, segments that overlap.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
)

func main() {
	gap := flag.Int("gap", 64, "merge segments separated by fewer than this many zero bytes (0: none, the segments only sorted)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: wasmsegments [-gap N] FILE.wasm... (rewritten in place)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *gap < 0 {
		fmt.Fprintln(os.Stderr, "wasmsegments: -gap must be 0 or more")
		os.Exit(2)
	}
	for _, name := range flag.Args() {
		if err := rewrite(name, *gap); err != nil {
			fmt.Fprintln(os.Stderr, "wasmsegments:", name+":", err)
			os.Exit(1)
		}
	}
}

func rewrite(name string, gap int) error {
	in, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	out, before, after, err := mergeSegments(in, gap)
	if err != nil {
		return err
	}
	// A new file renamed over the old: an interrupted run leaves the
	// linker's wasm, never half of one.
	tmp := name + ".segments.tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	fmt.Printf("%s: %d data segments to %d, %d bytes to %d\n", name, before, after, len(in), len(out))
	return nil
}

// segment is an active data segment of memory 0: data written at offset.
type segment struct {
	offset int
	data   []byte
}

// Section ids (the WebAssembly core specification, 5.5).
const (
	sectionData      = 11
	sectionDataCount = 12
)

// mergeSegments returns module with its data section rewritten: segments
// in the order of their offsets, those fewer than gap zero bytes apart
// merged. before and after count the segments.
func mergeSegments(module []byte, gap int) (out []byte, before, after int, err error) {
	if len(module) < 8 || string(module[:4]) != "\x00asm" {
		return nil, 0, 0, errors.New("not a wasm module")
	}
	out = append(out, module[:8]...)
	dataSeen := false
	r := &reader{b: module, i: 8}
	for r.i < len(module) {
		start := r.i
		id := r.byte()
		size := int(r.uleb())
		if r.err != nil || size > len(module)-r.i {
			return nil, 0, 0, errors.New("a section runs past the end of the file")
		}
		body := module[r.i : r.i+size]
		r.i += size
		switch id {
		case sectionDataCount:
			// Go's linker writes none; a count would have to change.
			return nil, 0, 0, errors.New("the module has a data count section")
		case sectionData:
			if dataSeen {
				return nil, 0, 0, errors.New("two data sections")
			}
			dataSeen = true
			segs, err := readSegments(body)
			if err != nil {
				return nil, 0, 0, err
			}
			merged, err := merge(segs, gap)
			if err != nil {
				return nil, 0, 0, err
			}
			before, after = len(segs), len(merged)
			out = appendSection(out, sectionData, writeSegments(merged))
		default:
			out = append(out, module[start:r.i]...)
		}
	}
	if !dataSeen {
		return nil, 0, 0, errors.New("the module has no data section")
	}
	return out, before, after, nil
}

// readSegments reads a data section's segments: each must be active, of
// memory 0 (flag 0) and placed by an i32.const, as Go's linker writes them.
func readSegments(body []byte) ([]segment, error) {
	r := &reader{b: body}
	n := r.uleb()
	if r.err != nil || n > uint64(len(body)) {
		return nil, errors.New("a bad data section")
	}
	segs := make([]segment, 0, n)
	for k := uint64(0); k < n; k++ {
		flag := r.uleb()
		op := r.byte()
		if r.err != nil || flag != 0 || op != 0x41 { // 0x41: i32.const
			return nil, fmt.Errorf("data segment %d is not an active segment at an i32.const offset", k)
		}
		off := r.sleb32()
		end := r.byte()
		size := r.uleb()
		if r.err != nil || end != 0x0b || off < 0 || size > uint64(len(body)-r.i) {
			return nil, fmt.Errorf("data segment %d is malformed", k)
		}
		segs = append(segs, segment{offset: int(off), data: body[r.i : r.i+int(size)]})
		r.i += int(size)
	}
	if r.i != len(body) {
		return nil, errors.New("bytes after the last data segment")
	}
	return segs, nil
}

// merge sorts segs by offset, refuses overlapping ones and joins those
// fewer than gap bytes apart, the bytes between them zero.
func merge(segs []segment, gap int) ([]segment, error) {
	segs = slices.Clone(segs)
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.offset, b.offset) })
	var out []segment
	for _, s := range segs {
		if len(out) > 0 {
			last := &out[len(out)-1]
			end := last.offset + len(last.data)
			if s.offset < end {
				return nil, fmt.Errorf("data segments at %d and %d overlap", last.offset, s.offset)
			}
			if s.offset-end < gap {
				data := make([]byte, 0, s.offset+len(s.data)-last.offset)
				data = append(data, last.data...)
				data = append(data, make([]byte, s.offset-end)...)
				last.data = append(data, s.data...)
				continue
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func writeSegments(segs []segment) []byte {
	b := appendULEB(nil, uint64(len(segs)))
	for _, s := range segs {
		b = append(b, 0, 0x41) // active, memory 0; i32.const
		b = appendSLEB(b, int64(s.offset))
		b = append(b, 0x0b) // end
		b = appendULEB(b, uint64(len(s.data)))
		b = append(b, s.data...)
	}
	return b
}

func appendSection(b []byte, id byte, body []byte) []byte {
	b = append(b, id)
	b = appendULEB(b, uint64(len(body)))
	return append(b, body...)
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
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

// sleb32 reads a signed LEB128 of at most 5 bytes (an i32).
func (r *reader) sleb32() int64 {
	var v int64
	for s := 0; s < 35; s += 7 {
		c := r.byte()
		v |= int64(c&0x7f) << s
		if c < 0x80 {
			if c&0x40 != 0 {
				v -= 1 << (s + 7)
			}
			return v
		}
	}
	r.err = errors.New("bad LEB128")
	return 0
}
