package web_test

import (
	"net/http"

	"github.com/wsready/wsready/web"
)

// Serve the page, the loader and (once make wasm built it) the client.
func Example() {
	http.Handle("/", http.FileServerFS(web.FS()))
}
