// Package web embeds wsready's browser files, so a Go server can serve
// them (wsready serve does, through server.Server.StaticHandler):
//
//   - wsready.js, the JS loader (an ES module: connect), and wsready.d.ts,
//     its type declarations;
//   - embed.html, a minimal page that uses only the JS API;
//   - index.html, app.js, style.css and favicon.svg: the demo page, whose
//     buttons call a wsready server's /api;
//   - wsready.wasm (with wsready.wasm.br and wsready.wasm.gz beside it, which
//     server.Server.StaticHandler sends to browsers that accept them) and Go's
//     wasm_exec.js: the client itself.
//
// The last group is built, never committed: it is present only after
// make wasm (make build and make run do it) wrote it into web/static before
// the Go build that embeds it. Without it FS serves the rest, and a page's
// connect rejects: the import of wasm_exec.js fails, or wsready.js reports
// "wsready: cannot load .../wsready.wasm: HTTP 404". A module that requires
// or vendors github.com/wsready/wsready gets only the committed files, so
// it builds the client itself,
//
//	GOOS=js GOARCH=wasm go build -trimpath -ldflags=-s -o wsready.wasm github.com/wsready/wsready/wasm
//
// and serves it with the same Go's $(go env GOROOT)/lib/wasm/wasm_exec.js
// beside wsready.js (or points connect's wasmURL and wasmExecURL at them),
// or takes the npm package, which ships all of them.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS returns the files to serve at /: web/static as it was when the
// program was built (see the package comment for what may be missing).
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	return sub
}
