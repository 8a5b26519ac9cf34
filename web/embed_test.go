package web_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wsready/wsready/web"
)

// TestFSServesTheCommittedFiles: the files in the repository are at the
// root of FS (not under static/) and a plain file server sends them.
func TestFSServesTheCommittedFiles(t *testing.T) {
	for _, name := range []string{"wsready.js", "wsready.d.ts", "embed.html", "index.html", "app.js", "style.css", "favicon.svg"} {
		if _, err := fs.Stat(web.FS(), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	srv := httptest.NewServer(http.FileServerFS(web.FS()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/wsready.js")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "export async function connect") {
		t.Fatalf("GET /wsready.js: %s, %d bytes", resp.Status, len(body))
	}
}

// TestFSHasTheClientWhenBuilt: after make wasm the client and Go's loader
// are embedded too, and served as application/wasm.
func TestFSHasTheClientWhenBuilt(t *testing.T) {
	if _, err := fs.Stat(web.FS(), "wsready.wasm"); err != nil {
		t.Skip("web/static/wsready.wasm is not built (make wasm)")
	}
	for _, name := range []string{"wasm_exec.js", "wsready.wasm.br", "wsready.wasm.gz"} {
		if _, err := fs.Stat(web.FS(), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	srv := httptest.NewServer(http.FileServerFS(web.FS()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/wsready.wasm")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/wasm" {
		t.Fatalf("GET /wsready.wasm: %s, Content-Type %q", resp.Status, ct)
	}
}
