//go:build js && wasm

package main

import (
	"strings"
	"testing"

	"github.com/wsready/wsready/client"
)

// The server steering over HTTP is the retry-after path, never a transport
// loss: a tenant refusal (503 and 1013 with its slot, as the server answers
// it; 403 and 1013 from an older server) is 1013 with the slot, and a send
// POST refused for the server's bounds (429 with Retry-After) ends the
// socket with 1013 and the Retry-After as its slot. The bodies are the
// server's own.
func TestHTTPServerSteeringKeepsItsSlot(t *testing.T) {
	const tenantBody = `{"error":"refused: see close","retryAfterMs":1000,"close":{"code":1013,"reason":"retry-after-ms=1000"}}`
	for _, c := range []struct {
		name   string
		answer string
		want   string
	}{
		{"tenant refusal", `__respond(0, 503, '` + tenantBody + `', {'Retry-After': '1'})`, "closed 1013 retry-after-ms=1000"},
		{"tenant refusal, older server", `__respond(0, 403, '` + tenantBody + `', {'Retry-After': '1'})`, "closed 1013 retry-after-ms=1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeHTTP(t)
			var r recorder
			tr, err := openHTTP(dialSpec{url: "ws://h.test/ws", via: client.TransportHTTP, token: "tok"}, r.events())
			if err != nil {
				t.Fatal(err)
			}
			defer tr.release()
			js(t, nil, c.answer)
			waitFor(t, "the close", func() bool { return len(r.got) > 0 })
			settle()
			if strings.Join(r.got, "|") != c.want {
				t.Fatalf("events %q, want %q", r.got, c.want)
			}
		})
	}
	t.Run("send POST refused", func(t *testing.T) {
		fakeHTTP(t)
		var r recorder
		tr, _ := openHTTP(dialSpec{url: "ws://h.test/ws", via: client.TransportHTTP}, r.events())
		defer tr.release()
		js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
		waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
		js(t, nil, `__emit(0, 'open'); __emit(0, 'message', '{"type":"ping","intervalMs":1000}')`)
		if err := tr.send([]byte(`{"type":"probe","id":1}`)); err != nil {
			t.Fatal(err)
		}
		js(t, nil, `__respond(1, 429, '{"error":"the server holds its most POST bodies: try again later","retryAfterMs":1000}', {'Retry-After': '1'})`)
		waitFor(t, "the close", func() bool { return len(r.got) > 2 })
		if strings.Join(r.got, "|") != "opened|message {\"type\":\"ping\",\"intervalMs\":1000}|closed 1013 retry-after-ms=1000" || !jsBool(t, js(t, nil, `return globalThis.__sources`), 0, "closed") {
			t.Fatalf("events %q", r.got)
		}
	})
}
