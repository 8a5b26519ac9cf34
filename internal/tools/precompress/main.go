//go:build !js

// Command precompress writes name.br (brotli, quality 11) and name.gz
// (gzip, best) beside each file given, for the server to send to clients
// that accept them. make wasm runs it on the wasm; it is a build tool, not
// part of the product.
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"

	"github.com/andybalholm/brotli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: precompress FILE...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		if err := compress(name); err != nil {
			fmt.Fprintln(os.Stderr, "precompress:", err)
			os.Exit(1)
		}
	}
}

func compress(name string) error {
	raw, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	var br bytes.Buffer
	w := brotli.NewWriterLevel(&br, brotli.BestCompression)
	w.Write(raw)
	if err := w.Close(); err != nil {
		return err
	}
	var gz bytes.Buffer
	g, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	g.Write(raw)
	if err := g.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(name+".br", br.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(name+".gz", gz.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes, brotli %d (%.2f MiB), gzip %d (%.2f MiB)\n", name, len(raw), br.Len(), float64(br.Len())/(1<<20), gz.Len(), float64(gz.Len())/(1<<20))
	return nil
}
