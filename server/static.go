//go:build !js

package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// staticHandler serves the page and its assets from an fs.FS.
//
//   - Every file gets a strong ETag and "Cache-Control: no-cache"
//     (revalidate, then reuse).
//   - A file is also served under a content-hashed name, name.HASH.ext
//     (HASH: the first 16 hex digits of its SHA-256), with "Cache-Control:
//     public, max-age=31536000, immutable": a CDN or a page that links the
//     hashed name never revalidates.
//   - A file with precompressed name.br or name.gz beside it is sent
//     compressed to clients that accept it, brotli first (Accept-Encoding
//     with q-values; identity otherwise). A text file (HTML, CSS, JS,
//     JSON, SVG, .d.ts) of at least compressMin bytes without either is
//     gzipped once, here, and sent so when that saves a tenth or more:
//     the page's scripts are a third of what a first load downloads
//     besides the wasm.
//   - The client's own files (.js, .wasm, .d.ts) carry
//     "Access-Control-Allow-Origin: *" so a page on another origin can load
//     them; the WebSocket itself stays origin-checked.
type staticHandler struct {
	files   map[string]*staticFile
	hashed  map[string]*staticFile // name.HASH.ext
	timeout time.Duration          // Options.RequestTimeout: the write deadline's base
}

// staticMinRate is the slowest link a static file's response is given
// time for beyond RequestTimeout: 16 KiB/s (128 kbit/s), so the wasm's
// 650 KB of brotli get 40 s more. A deadline of RequestTimeout alone (30 s
// by default) would cut it off below 173 kbit/s.
const staticMinRate = 16 << 10

type staticFile struct {
	name     string
	body     []byte
	gz, br   []byte
	etag     string
	gzETag   string
	brETag   string
	ctype    string
	hash     string
	modified time.Time
}

// StaticHandler serves the files of fsys (web.FS() holds the client's JS
// and wasm and the demo's page), index.html at the root: each with a
// strong ETag, also under a content-hashed name that may be cached for
// good, precompressed .br and .gz siblings sent to clients that accept
// them, and the client's files open to other origins. It reads fsys once,
// here: files changed later are not seen. Behind the Host check; GET and
// HEAD only; a response may take RequestTimeout plus its body's time at
// 16 KiB/s. wsready serve mounts it at /.
func (s *Server) StaticHandler(fsys fs.FS) http.Handler {
	h := newStaticHandler(fsys)
	h.timeout = s.opts.RequestTimeout
	return s.httpGuard(h, readMethods...)
}

func newStaticHandler(fsys fs.FS) *staticHandler {
	h := &staticHandler{files: map[string]*staticFile{}, hashed: map[string]*staticFile{}}
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".gz") || strings.HasSuffix(p, ".br") {
			return nil
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(body)
		f := &staticFile{name: p, body: body, etag: etagOf(body), ctype: contentType(p), hash: hex.EncodeToString(sum[:8])}
		if gz, err := fs.ReadFile(fsys, p+".gz"); err == nil {
			f.gz, f.gzETag = gz, etagOf(gz)
		}
		if br, err := fs.ReadFile(fsys, p+".br"); err == nil {
			f.br, f.brETag = br, etagOf(br)
		}
		if f.gz == nil && f.br == nil && compressible(f.ctype) && len(body) >= compressMin {
			if gz := gzipped(body); len(gz) <= len(body)-len(body)/10 {
				f.gz, f.gzETag = gz, etagOf(gz)
			}
		}
		h.files[p] = f
		h.hashed[hashedName(p, f.hash)] = f
		return nil
	})
	return h
}

// compressMin is the smallest text file StaticHandler gzips itself: below
// it the headers outweigh what compression saves.
const compressMin = 1024

// compressible reports a text type: what gzip shrinks (the wasm is
// precompressed by make wasm instead: compressing 3 MB here would slow
// every start).
func compressible(ctype string) bool {
	t, _, _ := strings.Cut(ctype, ";")
	return strings.HasPrefix(t, "text/") || t == "application/json" || t == "image/svg+xml"
}

// gzipped is body at gzip's best compression.
func gzipped(body []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level: no error
	zw.Write(body)                                         // a bytes.Buffer does not fail
	zw.Close()
	return b.Bytes()
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".wasm":
		return "application/wasm"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".ts":
		return "text/plain; charset=utf-8"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func (h *staticHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	hdr := w.Header()
	f, ok := h.files[name]
	if ok {
		hdr.Set("Cache-Control", "no-cache")
	} else if f, ok = h.hashed[name]; ok {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		http.NotFound(w, r)
		return
	}
	body, etag := f.body, f.etag
	hdr.Set("Content-Type", f.ctype)
	switch path.Ext(f.name) {
	case ".js", ".wasm", ".ts":
		hdr.Set("Access-Control-Allow-Origin", "*")
	}
	if f.gz != nil || f.br != nil {
		hdr.Set("Vary", "Accept-Encoding")
		switch enc := negotiate(r.Header.Get("Accept-Encoding"), f.br != nil, f.gz != nil); enc {
		case "br":
			body, etag = f.br, f.brETag
			hdr.Set("Content-Encoding", enc)
		case "gzip":
			body, etag = f.gz, f.gzETag
			hdr.Set("Content-Encoding", enc)
		}
	}
	hdr.Set("ETag", etag)
	if h.timeout > 0 && r.Method == http.MethodGet {
		// RequestTimeout plus the body's time at staticMinRate.
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.timeout + time.Duration(len(body))*time.Second/staticMinRate))
	}
	if hdr.Get("Content-Encoding") != "" {
		// ServeContent leaves the length out of an encoded whole
		// response (it assumes an encoding applied on the fly); ours is
		// stored, so its length is known (a range, a 304 or an error
		// replaces or removes this).
		hdr.Set("Content-Length", strconv.Itoa(len(body)))
	}
	http.ServeContent(w, r, "", f.modified, bytes.NewReader(body))
}

// hashedName is the content-hashed name a file is also served under:
// wsready.wasm with hash h is wsready.h.wasm.
func hashedName(name, h string) string {
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + h + ext
}

// negotiate picks the encoding to send from Accept-Encoding: the one with
// the highest q among those available, brotli before gzip on a tie; ""
// for identity (also when nothing acceptable is available).
func negotiate(accept string, haveBr, haveGz bool) string {
	best, bestQ := "", 0.0
	for _, part := range strings.Split(accept, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		enc = strings.ToLower(strings.TrimSpace(enc))
		q := 1.0
		if v, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if q <= 0 || !(enc == "br" && haveBr || enc == "gzip" && haveGz) {
			continue
		}
		if q > bestQ || q == bestQ && enc == "br" {
			best, bestQ = enc, q
		}
	}
	return best
}
