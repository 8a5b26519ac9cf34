// Package web holds the demo page, the JS loader, its type declarations and
// (once built) the WebAssembly client, embedded so the server binary runs
// alone. Not API: the browser client ships as the npm package (make npm).
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS returns the files to serve at /.
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	return sub
}
