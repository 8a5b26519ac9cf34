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

// A session in long polls checks every re-probe interval whether the path
// streams now: a stream probe (&probe=1) beside the polls, which go on. A
// probe whose ping does not come within FirstEventTimeout is closed (what
// it queues after is dropped) and the next sessions keep starting in long
// polls; one whose ping comes makes the next poll's answer open the
// session's stream from the last id, with a ping at once (&ping=1), and
// its first event moves the session onto it: no more polls and no more
// probes, the next sessions stream from the start, every update once, and
// from then on a stream error ends the socket as a stream's does. Before,
// a session in long polls polled until it ended.
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

	// Past the interval, a poll's answer starts a probe, and the next poll.
	jsRuns(reprobe)
	js(t, nil, `__respond(2, 200, 'id: feed=8\ndata: {"type":"update","seq":8}\n\n')`)
	waitFor(t, "the probe and the next poll", func() bool { return sourceCount(t) > 1 && fetchCount(t) > 3 })
	if u := sourceURL(t, 1); u != "http://h.test/ws/sse?session=S&probe=1" {
		t.Fatalf("the probe's URL %s", u)
	}
	if u := fetchField(t, 3, "url"); u != "http://h.test/ws/sse?session=S&poll=1&lastEventId=feed%3D8" {
		t.Fatalf("the poll beside the probe %s", u)
	}

	// No ping (a proxy still buffers): closed after FirstEventTimeout;
	// its late ping counts for nothing.
	js(t, nil, `__emit(1, 'open')`)
	waitFor(t, "the silent probe closed", func() bool {
		return jsBool(t, js(t, nil, `return globalThis.__sources`), 1, "closed")
	})
	if _, ok := pollSince[url]; !ok {
		t.Fatal("a silent probe did not keep the next sessions in long polls")
	}
	emitMessage(t, 1, `{"type":"ping","intervalMs":1000}`, "")
	settle()
	js(t, nil, `__respond(3, 200, 'id: feed=9\ndata: {"type":"update","seq":9}\n\n')`)
	waitFor(t, "the next probe and poll", func() bool { return sourceCount(t) > 2 && fetchCount(t) > 4 })
	if u := sourceURL(t, 2); u != "http://h.test/ws/sse?session=S&probe=1" {
		t.Fatalf("after the silent probe's late ping, the next source %s; want another probe (not the stream)", u)
	}

	// The path passes streams again: the probe's ping makes the next
	// answer open the stream, and its first event moves the session.
	js(t, nil, `__emit(2, 'open'); __emit(2, 'message', '{"type":"ping","intervalMs":1000}')`)
	settle()
	if !jsBool(t, js(t, nil, `return globalThis.__sources`), 2, "closed") {
		t.Fatal("the probe that passed was not closed")
	}
	js(t, nil, `__respond(4, 200, 'id: feed=10\ndata: {"type":"update","seq":10}\n\n')`)
	waitFor(t, "the stream", func() bool { return sourceCount(t) > 3 })
	if u := sourceURL(t, 3); u != "http://h.test/ws/sse?session=S&ping=1&lastEventId=feed%3D10" {
		t.Fatalf("the stream's URL %s", u)
	}
	js(t, nil, `__emit(3, 'open'); __emit(3, 'message', '{"type":"ping","intervalMs":1000}')`)
	emitMessage(t, 3, `{"type":"update","seq":11}`, "feed=11")
	settle()
	jsRuns(2 * reprobe) // no poll, no other probe
	if n, m := fetchCount(t), sourceCount(t); n != 5 || m != 4 {
		t.Fatalf("%d fetches and %d streams after the stream delivered; want 5 and 4 (on the stream)", n, m)
	}
	if _, ok := pollSince[url]; ok {
		t.Fatal("on the stream, the next sessions would still start in long polls")
	}
	var seqs []string
	pings := 0
	for _, g := range r.got {
		if i := strings.Index(g, `"seq":`); i >= 0 {
			seqs = append(seqs, strings.TrimSuffix(g[i+len(`"seq":`):], "}"))
		}
		if strings.Contains(g, `"type":"ping"`) {
			pings++
		}
	}
	if got := strings.Join(seqs, ","); got != "7,8,9,10,11" {
		t.Fatalf("updates delivered %s; want 7,8,9,10,11, once each", got)
	}
	if pings != 1 {
		t.Fatalf("%d pings delivered; want the stream's only (a probe's is not the session's)", pings)
	}
	js(t, nil, `__emit(3, 'error')`)
	settle()
	if l := r.last(); l != "closed 1006 " {
		t.Fatalf("a stream error after the move: %q; want the socket closed 1006", l)
	}
}
