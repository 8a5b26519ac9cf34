//go:build js && wasm

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
)

// sourceURL is the i-th EventSource's URL.
func sourceURL(t *testing.T, i int) string {
	t.Helper()
	return jsString(t, js(t, nil, `return globalThis.__sources`), i, "url")
}

// emitMessage dispatches a message event with lastEventId to source i, as
// a browser's EventSource would (closed or not: a step it queued before
// its close).
func emitMessage(t *testing.T, i int, data, lastID string) {
	t.Helper()
	js(t, []string{"i", "data", "id"}, `for (const fn of globalThis.__sources[i].listeners.message || []) fn({ data, lastEventId: id });`, i, data, lastID)
}

// A session in long polls tries its stream again every re-probe interval,
// between two polls, from the last id received and asking for a ping at
// once (&probe=1). A probe that delivers nothing within FirstEventTimeout
// is closed (what it queued after is dropped) and the polls go on from the
// same id; one whose first event comes moves the session onto the stream:
// no more polls and no more probes, the next sessions stream from the
// start, and from then on a stream error ends the socket as a stream's
// does. Before, a session in long polls polled until it ended.
func TestHTTPLongPollsProbeTheStreamAgain(t *testing.T) {
	fakeHTTP(t)
	const url = "ws://h.test/ws"
	delete(pollSince, url)
	t.Cleanup(func() { delete(pollSince, url) })
	const reprobe = 300 * time.Millisecond
	var r recorder
	tr, _ := openHTTP(dialSpec{url: url, via: client.TransportHTTP, reprobe: reprobe}, r.events())
	defer tr.release()
	js(t, nil, `__respond(0, 200, '{"session":"S"}')`)
	waitFor(t, "the stream", func() bool { return sourceCount(t) > 0 })
	js(t, nil, `__emit(0, 'open')`)
	waitFor(t, "the first poll", func() bool { return fetchCount(t) > 1 }) // FirstEventTimeout: 3 s
	js(t, nil, `__respond(1, 200, 'data: {"type":"welcome","session":"S"}\n\nid: feed=7\ndata: {"type":"update","seq":7}\n\n', {'X-Wsready-Stream': 'held'})`)
	waitFor(t, "the second poll", func() bool { return fetchCount(t) > 2 })

	// Within the interval: polls. Past it, the answer's next is a probe.
	jsRuns(reprobe)
	js(t, nil, `__respond(2, 200, 'id: feed=8\ndata: {"type":"update","seq":8}\n\n')`)
	waitFor(t, "the stream probe", func() bool { return sourceCount(t) > 1 })
	if u := sourceURL(t, 1); u != "http://h.test/ws/sse?session=S&probe=1&lastEventId=feed%3D8" {
		t.Fatalf("the probe's URL %s", u)
	}
	if n := fetchCount(t); n != 3 {
		t.Fatalf("%d fetches beside the probe; want no poll while it is out", n)
	}

	// Silent (a proxy still buffers): closed after FirstEventTimeout, and
	// the polls go on from the same id.
	js(t, nil, `__emit(1, 'open')`)
	waitFor(t, "the poll after the silent probe", func() bool { return fetchCount(t) > 3 })
	if !jsBool(t, js(t, nil, `return globalThis.__sources`), 1, "closed") {
		t.Fatal("the silent probe was not closed")
	}
	if u := fetchField(t, 3, "url"); u != "http://h.test/ws/sse?session=S&poll=1&lastEventId=feed%3D8" {
		t.Fatalf("the poll after the silent probe %s", u)
	}
	if _, ok := pollSince[url]; !ok {
		t.Fatal("a silent probe did not keep the next sessions in long polls")
	}
	before := len(r.got)
	emitMessage(t, 1, `{"type":"update","seq":9}`, "feed=9") // queued by the closed probe
	settle()
	if len(r.got) != before {
		t.Fatalf("the closed probe's event was delivered: %q", r.got[before:])
	}

	// The path passes streams again: the next probe's ping moves the
	// session onto it.
	jsRuns(reprobe)
	js(t, nil, `__respond(3, 200, 'id: feed=9\ndata: {"type":"update","seq":9}\n\n')`)
	waitFor(t, "the second probe", func() bool { return sourceCount(t) > 2 })
	if u := sourceURL(t, 2); u != "http://h.test/ws/sse?session=S&probe=1&lastEventId=feed%3D9" {
		t.Fatalf("the second probe's URL %s", u)
	}
	js(t, nil, `__emit(2, 'open'); __emit(2, 'message', '{"type":"ping","intervalMs":1000}')`)
	emitMessage(t, 2, `{"type":"update","seq":10}`, "feed=10")
	settle()
	jsRuns(2 * reprobe) // no poll, no other probe
	if n, m := fetchCount(t), sourceCount(t); n != 4 || m != 3 {
		t.Fatalf("%d fetches and %d streams after the probe delivered; want 4 and 3 (on the stream)", n, m)
	}
	if _, ok := pollSince[url]; ok {
		t.Fatal("after a probe delivered, the next sessions would still start in long polls")
	}
	var seqs []string
	for _, g := range r.got {
		if i := strings.Index(g, `"seq":`); i >= 0 {
			seqs = append(seqs, strings.TrimSuffix(g[i+len(`"seq":`):], "}"))
		}
	}
	if got := strings.Join(seqs, ","); got != "7,8,9,10" {
		t.Fatalf("updates delivered %s; want 7,8,9,10, once each", got)
	}
	if !strings.Contains(strings.Join(r.got, "|"), `message {"type":"ping","intervalMs":1000}`) {
		t.Fatalf("the probe's ping was not delivered: %q", r.got)
	}
	js(t, nil, `__emit(2, 'error')`)
	settle()
	if l := r.last(); l != "closed 1006 " {
		t.Fatalf("a stream error after the move: %q; want the socket closed 1006", l)
	}
}
