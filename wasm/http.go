//go:build js && wasm

package main

import (
	"errors"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/protocol"
)

// httpTransport is a socket over HTTP (stage 8, the README's "Stage 8 HTTP
// transport"), for a network that refuses WebSocket upgrades: POST
// <base>/session makes a session (the ticket in its body), an EventSource
// on <base>/sse?session=<id> carries the server's frames, and POST
// <base>/send?session=<id> the client's, one at a time: frames sent while
// a POST is in flight wait and go together in the next (bridge.Batch). The
// base is the WebSocket URL with ws -> http (bridge.HTTPURL).
//
// Its three layers are the WebSocket's: the stream's open is the socket's
// open, pings come on the stream. A refused session is reported as the
// WebSocket's close would be (bridge.Refusal: 429/503 -> 1013 with the
// retry-after, a 401/403 close body -> its code, else 1006), and so is a
// send POST refused for the server's bounds (429/503: 1013 with its
// Retry-After); a close the server sends on the stream (event: close) with
// its code; a stream error or a failed POST as 1006. The EventSource's own reconnect is never used:
// the core reconnects, and resumes from its cursors (stage 7).
//
// A stream that opens and delivers nothing within bridge.FirstEventTimeout
// (not even the server's first ping, written at once) is held back on the
// path: a proxy that buffers responses. The session then goes on in long
// polls (GET <base>/sse?session=<id>&poll=1): each answer completes with
// the events queued since the last id received (?lastEventId=, the
// stream's resume), the first asking for the welcome again (&welcome=1),
// which the held stream took. The socket opens with the first event either
// way, so the core has sent nothing before the switch and has lost nothing
// across it. A server whose stream was held back (it says so on the poll's
// answer) starts its next sessions in long polls for bridge.PollModeFor,
// then tries streaming again; the core re-probes WebSocket as in the
// streaming mode. A session in long polls checks every re-probe interval
// (the core's ReprobeInterval, 10 minutes by default) whether the path
// passes a stream now: an EventSource on GET <base>/sse?session=<id>&probe=1
// beside the polls, to which the server writes a ping at once and which it
// holds open 5 s; it is not the session's stream, so the polls go on and
// nothing is taken from them. The ping within bridge.FirstEventTimeout
// passes the check: between the next two polls the session's stream opens
// from the last id received, with a ping at once (&ping=1), and its first
// event moves the session onto it (no more polls; the next sessions stream
// from the start). No ping in time, or an error, and the polls go on, the
// next check an interval later; a stream that then delivers nothing in
// time is closed and the polls go on from the same id, so what it took
// comes again, once.
//
// Every answer of the browser (a fetch settled, a stream event) is handed
// to the driver's loop (socketEvents.run) before it changes the
// transport's state, so the transport is the loop's alone, like the core.
type httpTransport struct {
	ev      socketEvents
	url     string // the WebSocket URL the others derive from
	session string // the server's id, once POST /session answered
	tokened bool   // the session was made with a ticket: the core's auth frame is not sent

	es  safejs.Value // the EventSource, once the session is made
	esF []safejs.Func

	queue    [][]byte     // frames waiting for the POST in flight
	queued   int          // their bytes
	inflight int          // bytes of the POST in flight (0: none)
	ac       safejs.Value // aborts the fetch in flight (session or send)
	done     bool         // closed, or failed: nothing more is reported

	heard   bool         // an event came (stream or poll): the socket is open
	silentT safejs.Value // setTimeout's id: the stream's FirstEventTimeout
	silentF safejs.Func
	hasF    bool         // silentF is made: release frees it
	polling bool         // the session goes on in long polls
	welcome bool         // the next poll asks for the welcome again
	lastID  string       // the last event id received
	pollAC  safejs.Value // aborts the poll in flight

	reprobe time.Duration // how often a session in long polls checks whether the path streams
	// pollFrom is when the session went on in long polls, or last checked
	// the path, in Unix milliseconds: not a time.Time, since a time.Time
	// field in a value held in an interface (the transport) links
	// time.Time's String and its formatting into the wasm (20 KB brotli).
	pollFrom int64
	moving   bool // the stream is open to move onto from polls: its first event does
	gen      int  // the EventSource's generation: events of a closed one are dropped

	check     safejs.Value  // the stream probe's EventSource (?probe=1), while one is out
	checkF    []safejs.Func // its listeners, released when it ends
	checkT    safejs.Value  // setTimeout's id: its FirstEventTimeout
	checkTF   safejs.Func
	hasCheckT bool // checkTF is made: release frees it
	checkGen  int  // the probe's generation: events of an ended one are dropped
	passed    bool // the last probe's ping came in time: the next poll's answer moves onto the stream
}

// pollSince is when a server's stream (by WebSocket URL) was last found held
// back: its sessions start in long polls for bridge.PollModeFor after. One
// entry per server URL the client dials (its urls option, a fixed list);
// the driver's loop alone uses it.
var pollSince = map[string]time.Time{}

// maxQueued bounds the bytes waiting behind a POST in flight (4 MiB, four
// bodies). Past it send fails: the core's send-stall rule or the request
// timeouts notice a path that does not drain.
const maxQueued = 4 * bridge.MaxPostBytes

var (
	errNoEventSource = errors.New("no EventSource in this environment")
	errNoFetch       = errors.New("no fetch in this environment")
	errQueueFull     = errors.New("the HTTP send queue is full (4 MiB wait behind a POST that does not complete)")
	errClosed        = errors.New("the HTTP transport is closed")
)

// openHTTP is the HTTP transport's opener: it starts POST <base>/session.
func openHTTP(spec dialSpec, ev socketEvents) (transport, error) {
	if es, err := safejs.Global().Get("EventSource"); err != nil || es.Type() != safejs.TypeFunction {
		return nil, errNoEventSource
	}
	u, err := bridge.HTTPURL(spec.url, "session", "")
	if err != nil {
		return nil, err
	}
	t := &httpTransport{ev: ev, url: spec.url, tokened: spec.token != "", es: safejs.Undefined(), ac: safejs.Undefined(),
		silentT: safejs.Undefined(), pollAC: safejs.Undefined(), reprobe: spec.reprobe,
		check: safejs.Undefined(), checkT: safejs.Undefined()}
	if t.reprobe <= 0 {
		t.reprobe = bridge.PollModeFor
	}
	body := "{}"
	if spec.token != "" {
		if body, err = jsonOf(map[string]any{"token": spec.token}); err != nil {
			return nil, err
		}
	}
	resp, err := t.post(u, body)
	if err != nil {
		return nil, err
	}
	if err := then(resp, func(r safejs.Value) {
		ev.run(func() { t.sessionAnswered(r) })
	}, t.brokenLater); err != nil {
		return nil, err
	}
	return t, nil
}

// jsonOf is JSON.stringify(m): the browser's encoder, so the wasm carries
// none of its own.
func jsonOf(m map[string]any) (string, error) {
	v, err := jsObject(m)
	if err != nil {
		return "", err
	}
	js, err := safejs.Global().Get("JSON")
	if err != nil {
		return "", err
	}
	s, err := js.Call("stringify", v)
	if err != nil {
		return "", err
	}
	return s.String()
}

// post starts fetch(url, {method: POST, body}) with an AbortController of
// its own (t.ac) and returns its promise.
func (t *httpTransport) post(url, body string) (safejs.Value, error) {
	return fetchWith(url, map[string]any{"method": "POST", "body": body, "cache": "no-store",
		"headers": map[string]any{"Content-Type": "application/json"}}, &t.ac)
}

// fetchWith starts fetch(url, init) with an AbortController of its own,
// kept in *ac, and returns its promise.
func fetchWith(url string, init map[string]any, ac *safejs.Value) (safejs.Value, error) {
	g := safejs.Global()
	fetch, err := g.Get("fetch")
	if err != nil || fetch.Type() != safejs.TypeFunction {
		return safejs.Undefined(), errNoFetch
	}
	if ctor, err := g.Get("AbortController"); err == nil && ctor.Type() == safejs.TypeFunction {
		if c, err := ctor.New(); err == nil {
			*ac = c
			if sig, err := c.Get("signal"); err == nil {
				init["signal"] = sig
			}
		}
	}
	initV, err := jsObject(init)
	if err != nil {
		return safejs.Undefined(), err
	}
	return fetch.Invoke(url, initV)
}

// broken ends the socket as a transport loss (1006); brokenLater does so
// from a promise's rejection, through the driver's loop.
func (t *httpTransport) broken()                  { t.fail(protocol.CloseAbnormal, "") }
func (t *httpTransport) brokenLater(safejs.Value) { t.ev.run(t.broken) }

// sessionAnswered reads POST /session's answer: 200 {"session", ...}
// opens the stream; anything else is a refusal.
func (t *httpTransport) sessionAnswered(resp safejs.Value) {
	if t.done {
		return
	}
	status, _ := getNumber(resp, "status")
	code := int(status)
	retryAfter := header(resp, "Retry-After")
	switch code {
	case 200, 401, 403, 429, 503: // a body to read: the session, or the close a refusal names
		body, err := resp.Call("json")
		if err == nil {
			err = then(body, func(v safejs.Value) {
				t.ev.run(func() { t.sessionBody(code, retryAfter, v) })
			}, func(safejs.Value) {
				t.ev.run(func() { t.refused(code, retryAfter, safejs.Null()) })
			})
		}
		if err != nil {
			t.broken()
		}
		return
	}
	c, reason := bridge.Refusal(code, retryAfter, 0, "")
	t.fail(c, reason)
}

// header is a fetch Response's header name, or "".
func header(resp safejs.Value, name string) string {
	h, err := resp.Get("headers")
	if err != nil {
		return ""
	}
	v, err := h.Call("get", name)
	if err != nil || v.Type() != safejs.TypeString {
		return ""
	}
	s, _ := v.String()
	return s
}

// sessionBody reads the session's JSON body: with 200 the session id,
// with a refusal the close it names ({"close":{"code","reason"}}).
func (t *httpTransport) sessionBody(status int, retryAfter string, body safejs.Value) {
	if t.done {
		return
	}
	if status != 200 {
		t.refused(status, retryAfter, body)
		return
	}
	id, ok := getString(body, "session")
	if !ok || !bridge.ValidSession(id) {
		t.broken()
		return
	}
	t.session = id
	if at, ok := pollSince[t.url]; ok && time.Since(at) < bridge.PollModeFor {
		t.polling, t.pollFrom = true, time.Now().UnixMilli()
		t.poll()
	} else if err := t.openStream(""); err != nil {
		t.broken()
		return
	}
	if len(t.queue) > 0 {
		t.flush()
	}
}

// refused reports a refusal: the close its body names, if it names one
// (bridge.Refusal says which it takes).
func (t *httpTransport) refused(status int, retryAfter string, body safejs.Value) {
	code, reason := 0, ""
	if body.Type() == safejs.TypeObject {
		if cl, err := body.Get("close"); err == nil && cl.Type() == safejs.TypeObject {
			if n, ok := getNumber(cl, "code"); ok && n == float64(int(n)) {
				code = int(n)
			}
			reason, _ = getString(cl, "reason")
		}
	}
	c, r := bridge.Refusal(status, retryAfter, code, reason)
	t.fail(c, r)
}

// openStream opens the EventSource: its open is the socket's, its messages
// the server's frames, an "event: close" the server's close, an error the
// end (1006), or during a stream probe the end of the probe. query is
// added to its URL (a probe's).
func (t *httpTransport) openStream(query string) error {
	u, err := bridge.HTTPURL(t.url, "sse", t.session)
	if err != nil {
		return err
	}
	u += query
	ctor, err := safejs.Global().Get("EventSource")
	if err != nil {
		return err
	}
	es, err := ctor.New(u)
	if err != nil {
		return err
	}
	t.es = es
	t.gen++
	gen := t.gen
	on := func(name string, fn func(e safejs.Value)) {
		f, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
			e := safejs.Undefined()
			if len(args) > 0 {
				e = args[0]
			}
			fn(e)
			return nil
		})
		if err != nil {
			return
		}
		t.esF = append(t.esF, f)
		es.Call("addEventListener", name, f.Value())
	}
	// current: the step is this EventSource's, still the transport's
	// (one closed meanwhile may have queued steps before its close).
	current := func() bool { return gen == t.gen }
	on("open", func(safejs.Value) {
		t.ev.run(func() {
			if current() {
				t.streamOpened()
			}
		})
	})
	on("message", func(e safejs.Value) {
		data, _ := getString(e, "data")
		id, hasID := getString(e, "lastEventId")
		t.ev.run(func() {
			if !current() {
				return
			}
			if hasID && id != "" {
				t.lastID = id
			}
			t.streamEvent([]byte(data))
		})
	})
	on("close", func(e safejs.Value) {
		code, reason := float64(0), ""
		if data, ok := getString(e, "data"); ok {
			if js, err := safejs.Global().Get("JSON"); err == nil {
				if v, err := js.Call("parse", data); err == nil && v.Type() == safejs.TypeObject {
					code, _ = getNumber(v, "code")
					reason, _ = getString(v, "reason")
				}
			}
		}
		c, r := bridge.StreamClose(code, reason)
		t.ev.run(func() {
			if current() {
				t.fail(c, r)
			}
		})
	})
	on("error", func(safejs.Value) {
		t.ev.run(func() {
			switch {
			case !current():
			case t.moving:
				t.moveFailed()
			default:
				t.broken()
			}
		})
	})
	return nil
}

// closeStream closes the EventSource, if any, and frees its listeners (a
// closed EventSource calls none): what it still queued is dropped (gen).
func (t *httpTransport) closeStream() {
	if !t.es.IsUndefined() {
		t.es.Call("close")
		t.es = safejs.Undefined()
	}
	t.gen++
	for _, f := range t.esF {
		f.Release()
	}
	t.esF = nil
}

// streamOpened arms the stream's FirstEventTimeout: an open stream that
// delivers nothing within it is held back (silent). A stream probe's is
// armed when it starts.
func (t *httpTransport) streamOpened() {
	if t.done || t.heard || t.polling {
		return
	}
	t.armSilent()
}

// armSilent arms the FirstEventTimeout (silent), unless it is armed.
func (t *httpTransport) armSilent() {
	if !t.silentT.IsUndefined() {
		return
	}
	if !t.hasF {
		f, err := funcOf(func(safejs.Value, []safejs.Value) any {
			t.ev.run(t.silent)
			return nil
		})
		if err != nil {
			return
		}
		t.silentF, t.hasF = f, true
	}
	if id, err := safejs.Global().Call("setTimeout", t.silentF.Value(), bridge.FirstEventTimeout.Milliseconds()); err == nil {
		t.silentT = id
	}
}

// stopSilentTimer clears the FirstEventTimeout, if armed.
func (t *httpTransport) stopSilentTimer() {
	if !t.silentT.IsUndefined() {
		safejs.Global().Call("clearTimeout", t.silentT)
		t.silentT = safejs.Undefined()
	}
}

// streamEvent takes one server frame from the stream: while moving from
// polls the first moves the session onto the stream (no more polls, and
// the next sessions stream from the start).
func (t *httpTransport) streamEvent(frame []byte) {
	if t.done {
		return
	}
	if t.moving {
		t.moving, t.polling = false, false
		t.stopSilentTimer()
		t.endCheck()
		delete(pollSince, t.url)
	}
	t.event(frame)
}

// event takes one server frame from the stream or a poll: the first opens
// the socket.
func (t *httpTransport) event(frame []byte) {
	if t.done {
		return
	}
	if !t.heard {
		t.heard = true
		t.stopSilentTimer()
		t.ev.opened()
	}
	t.ev.message(frame)
}

// silent is the stream's FirstEventTimeout: nothing came, so the session
// goes on in long polls, the first asking for the welcome again; or a
// stream probe's, which failed.
func (t *httpTransport) silent() {
	t.silentT = safejs.Undefined()
	if t.done {
		return
	}
	if t.moving {
		t.moveFailed()
		return
	}
	if t.heard || t.polling {
		return
	}
	t.closeStream()
	t.polling, t.welcome, t.pollFrom = true, true, time.Now().UnixMilli()
	t.poll()
}

// checkStream starts a stream probe beside the polls (GET
// <base>/sse?session=<id>&probe=1): the server writes a ping at once, so
// the ping within FirstEventTimeout says the path passes streams now. The
// next check is an interval on, whatever this one finds.
func (t *httpTransport) checkStream() {
	t.pollFrom = time.Now().UnixMilli()
	u, err := bridge.HTTPURL(t.url, "sse", t.session)
	if err != nil {
		return
	}
	ctor, err := safejs.Global().Get("EventSource")
	if err != nil {
		return
	}
	es, err := ctor.New(u + "&probe=1")
	if err != nil {
		return
	}
	t.check = es
	t.checkGen++
	gen := t.checkGen
	on := func(name string, fn func()) {
		f, err := funcOf(func(safejs.Value, []safejs.Value) any {
			t.ev.run(func() {
				if gen == t.checkGen && !t.done {
					fn()
				}
			})
			return nil
		})
		if err != nil {
			return
		}
		t.checkF = append(t.checkF, f)
		es.Call("addEventListener", name, f.Value())
	}
	on("message", func() {
		t.endCheck()
		t.passed = true
	})
	on("error", t.checkFailed)
	if !t.hasCheckT {
		f, err := funcOf(func(safejs.Value, []safejs.Value) any {
			t.ev.run(func() {
				t.checkT = safejs.Undefined()
				if !t.check.IsUndefined() && !t.done {
					t.checkFailed()
				}
			})
			return nil
		})
		if err != nil {
			t.endCheck()
			return
		}
		t.checkTF, t.hasCheckT = f, true
	}
	if id, err := safejs.Global().Call("setTimeout", t.checkTF.Value(), bridge.FirstEventTimeout.Milliseconds()); err == nil {
		t.checkT = id
	}
}

// checkFailed ends a stream probe whose ping did not come in time (or
// that failed): the path still holds streams back, so the next sessions
// start in long polls too.
func (t *httpTransport) checkFailed() {
	t.endCheck()
	pollSince[t.url] = time.Now()
}

// endCheck closes the stream probe, if one is out, and frees its
// listeners; what it queued is dropped (checkGen).
func (t *httpTransport) endCheck() {
	if !t.checkT.IsUndefined() {
		safejs.Global().Call("clearTimeout", t.checkT)
		t.checkT = safejs.Undefined()
	}
	if !t.check.IsUndefined() {
		t.check.Call("close")
		t.check = safejs.Undefined()
	}
	t.checkGen++
	for _, f := range t.checkF {
		f.Release()
	}
	t.checkF = nil
}

// moveToStream opens the session's stream between two polls (none is in
// flight), after a stream probe passed: from the last id received, with a
// ping at once (&ping=1). Its first event within FirstEventTimeout (armed
// now: a stream the path holds may not even open) moves the session onto
// it.
func (t *httpTransport) moveToStream() {
	q := "&ping=1"
	if t.lastID != "" {
		q += "&lastEventId=" + bridge.QueryEscape(t.lastID)
	}
	if err := t.openStream(q); err != nil {
		t.pollFrom = time.Now().UnixMilli()
		t.poll()
		return
	}
	t.moving = true
	t.armSilent()
}

// moveFailed ends a stream that delivered nothing in time (or failed)
// while moving from polls: the polls go on from the same id (what the
// stream took comes again) and the next sessions start in long polls.
func (t *httpTransport) moveFailed() {
	t.moving = false
	t.stopSilentTimer()
	t.closeStream()
	now := time.Now()
	t.pollFrom, pollSince[t.url] = now.UnixMilli(), now
	t.poll()
}

// poll asks for the session's next events: GET the poll URL with
// lastEventId; its answer (pollAnswered) asks again.
func (t *httpTransport) poll() {
	u, err := bridge.PollURL(t.url, t.session, t.lastID, t.welcome)
	var p safejs.Value
	if err == nil {
		p, err = fetchWith(u, map[string]any{"cache": "no-store"}, &t.pollAC)
	}
	if err == nil {
		err = then(p, func(r safejs.Value) {
			status, _ := getNumber(r, "status")
			held := header(r, "X-Wsready-Stream") == "held"
			if status != 200 {
				t.ev.run(t.broken)
				return
			}
			body, err := r.Call("text")
			if err == nil {
				err = then(body, func(v safejs.Value) {
					text, _ := v.String()
					t.ev.run(func() { t.pollAnswered(text, held) })
				}, t.brokenLater)
			}
			if err != nil {
				t.ev.run(t.broken)
			}
		}, t.brokenLater)
	}
	if err != nil {
		t.broken()
	}
}

// pollAnswered takes a poll's events (a close ends the socket as the
// stream's would) and polls again. held: the server says a stream of this
// session took events the client never got, so the next sessions start in
// long polls.
func (t *httpTransport) pollAnswered(body string, held bool) {
	if t.done {
		return
	}
	t.pollAC = safejs.Undefined()
	t.welcome = false
	if held {
		pollSince[t.url] = time.Now()
	}
	for _, e := range bridge.ParseEvents(body) {
		if e.Name == "close" {
			code, reason := float64(0), ""
			if js, err := safejs.Global().Get("JSON"); err == nil {
				if v, err := js.Call("parse", e.Data); err == nil && v.Type() == safejs.TypeObject {
					code, _ = getNumber(v, "code")
					reason, _ = getString(v, "reason")
				}
			}
			t.fail(bridge.StreamClose(code, reason))
			return
		}
		if e.HasID {
			t.lastID = e.ID
		}
		t.event([]byte(e.Data))
		if t.done {
			return
		}
	}
	if t.passed {
		t.passed = false
		t.moveToStream()
		return
	}
	if t.check.IsUndefined() && time.Duration(time.Now().UnixMilli()-t.pollFrom)*time.Millisecond >= t.reprobe {
		t.checkStream()
	}
	t.poll()
}

func (t *httpTransport) send(frame []byte) error {
	if t.done {
		return errClosed
	}
	if t.tokened && bridge.IsAuthFrame(frame) {
		return nil // the ticket went with POST /session
	}
	if t.queued+len(frame) > maxQueued {
		return errQueueFull
	}
	t.queue = append(t.queue, frame)
	t.queued += len(frame)
	if t.inflight == 0 && t.session != "" {
		t.flush()
	}
	return nil
}

// flush POSTs what waits, as much as one body holds.
func (t *httpTransport) flush() {
	body, n := bridge.Batch(t.queue, bridge.MaxPostBytes)
	if n == 0 {
		return
	}
	for i := range n {
		t.queued -= len(t.queue[i])
		t.queue[i] = nil
	}
	t.queue = t.queue[n:]
	if len(t.queue) == 0 {
		t.queue = nil // let the backing array go
	}
	t.inflight = len(body)
	u, err := bridge.HTTPURL(t.url, "send", t.session)
	var resp safejs.Value
	if err == nil {
		resp, err = t.post(u, string(body))
	}
	if err == nil {
		err = then(resp, func(r safejs.Value) {
			status, _ := getNumber(r, "status")
			retryAfter := header(r, "Retry-After")
			t.ev.run(func() { t.posted(int(status), retryAfter) })
		}, t.brokenLater)
	}
	if err != nil {
		t.broken()
	}
}

// posted takes a POST /send's answer: 2xx sends what waited; 429 or 503
// (the server's bounds on what it holds) ends the socket as the server
// steering, 1013 with the Retry-After as its slot, which the core waits out
// before it dials again; anything else (404: the session is gone) loses
// the socket, as a transport loss.
func (t *httpTransport) posted(status int, retryAfter string) {
	if t.done {
		return
	}
	t.inflight = 0
	t.ac = safejs.Undefined()
	if status == 429 || status == 503 {
		t.fail(bridge.Refusal(status, retryAfter, 0, ""))
		return
	}
	if status < 200 || status > 299 {
		t.broken()
		return
	}
	if len(t.queue) > 0 {
		t.flush()
	}
}

func (t *httpTransport) buffered() int { return t.queued + t.inflight }

// fail ends the socket with code and reason, once.
func (t *httpTransport) fail(code int, reason string) {
	if t.done {
		return
	}
	t.stop()
	t.ev.closed(code, reason)
}

// close ends the socket from this side: the stream and any fetch in flight
// are dropped (the server forgets a session whose stream stays away), and
// the close is reported with the code the core gave, as a WebSocket's
// onclose would.
func (t *httpTransport) close(code int, reason string) error {
	t.fail(code, reason)
	return nil
}

// stop closes the stream and aborts the fetch in flight.
func (t *httpTransport) stop() {
	t.done = true
	t.closeStream()
	t.endCheck()
	if !t.ac.IsUndefined() {
		t.ac.Call("abort")
		t.ac = safejs.Undefined()
	}
	if !t.pollAC.IsUndefined() {
		t.pollAC.Call("abort")
		t.pollAC = safejs.Undefined()
	}
	t.stopSilentTimer()
	t.queue, t.queued, t.inflight = nil, 0, 0
}

func (t *httpTransport) release() {
	if !t.done {
		t.stop()
	}
	for _, f := range t.esF {
		f.Release()
	}
	t.esF = nil
	if t.hasF {
		t.silentF.Release()
		t.hasF = false
	}
	if t.hasCheckT {
		t.checkTF.Release()
		t.hasCheckT = false
	}
}

// probeHTTP carries out EffProbeHTTP on the server the next dial goes to;
// its answer reaches the core as HTTPProbe.
func (d *driver) probeHTTP() {
	probe(d.urls[d.nextURL], func(ok bool) { d.q.Push(func(now time.Time) { d.core.HTTPProbe(ok, now) }) })
}

// probe makes one plain request, GET <base>/probe, within 5 s, and calls
// answer (once, from a callback: it must only report) with whether any 2xx
// came back.
func probe(wsURL string, answer func(ok bool)) {
	u, err := bridge.HTTPURL(wsURL, "probe", "")
	g := safejs.Global()
	fetch, ferr := g.Get("fetch")
	if err != nil || ferr != nil || fetch.Type() != safejs.TypeFunction {
		answer(false)
		return
	}
	init := map[string]any{"cache": "no-store"}
	if as, err := g.Get("AbortSignal"); err == nil && as.Type() == safejs.TypeFunction {
		if tf, err := as.Get("timeout"); err == nil && tf.Type() == safejs.TypeFunction {
			if sig, err := as.Call("timeout", 5000); err == nil {
				init["signal"] = sig
			}
		}
	}
	initV, err := jsObject(init)
	var p safejs.Value
	if err == nil {
		p, err = fetch.Invoke(u, initV)
	}
	if err == nil {
		err = then(p, func(r safejs.Value) {
			ok, _ := r.Get("ok")
			b, _ := ok.Bool()
			answer(b)
		}, func(safejs.Value) { answer(false) })
	}
	if err != nil {
		answer(false)
	}
}
