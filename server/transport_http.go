//go:build !js

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The HTTP transport (stage 8): the same frames for a client whose
// WebSocket never opens (a proxy that strips the upgrade). Under the mount
// of Handler, beside the WebSocket endpoint (docs/http-transport.md; the
// event stream itself is sse.go):
//
//	GET  <mount>/probe             204: a plain HTTP request reaches the server
//	POST <mount>/session           {"token":"..."} or {}: admission and auth, as for an
//	                               upgrade; 200 {"session":ID,"intervalMs":N}, or a refusal
//	GET  <mount>/sse?session=ID    text/event-stream: every server frame as data:, updates
//	                               with id: (the session's per-topic cursors), a close as
//	                               event: close; Last-Event-ID resumes the cursors
//	POST <mount>/send?session=ID   one client frame or a JSON array of them: 204
//	GET  <mount>/sse?session=ID&poll=1   a long poll: the events queued, then the answer ends
//	GET  <mount>/sse?session=ID&probe=1  a ping, held open 5 s: does the path stream now?
//
// A session is a conn like a WebSocket's, with an httpTransport: the same
// reader (frames from POSTs, handed over one at a time), the same send
// queue and writer (over HTTP/1.1 without TLS the stream's connection is
// hijacked and the writer sends each event to its socket itself, as on a
// WebSocket: sse_raw.go; over HTTP/2 or TLS the writer parks each frame
// with the transport and the stream's handler, which alone writes the
// response, writes it and runs the writer on: no flusher goroutine either
// way), the same pings, switches, drain and sweep. The session id is the welcome frame's: 16 random bytes, a
// capability for this session only; it is never logged. A session with no
// stream attached for two ping intervals plus SweepGrace is dropped, and
// one whose first stream does not come within HTTPAttachTimeout too.

// closeUnknownSession is the close code in the 404 answer for a session
// the server does not have (expired, closed, another node's): not in the
// protocol's table, so a client backs off and dials again (a transport
// loss, never terminal).
const closeUnknownSession = 4404

// maxSendBody bounds a POST <mount>/send body: 16 frames' worth.
const maxSendBody = 16 * protocol.MaxFrameBytes

// maxSessionBody bounds a POST <mount>/session body: a token and room.
const maxSessionBody = protocol.MaxTokenBytes + 1024

// closeTimeout bounds how long a close waits for its event to be written,
// as coder/websocket bounds a close handshake.
const closeTimeout = 5 * time.Second

// errSessionGone is an HTTP session that ended.
var errSessionGone = errors.New("the session ended")

// errStreamEnded is a write that found its stream gone.
var errStreamEnded = errors.New("the event stream ended")

// httpRoute returns the HTTP transport's handler for r, or nil when r is
// not one of its requests (then it is the WebSocket endpoint's).
func (s *Server) httpRoute(r *http.Request) http.HandlerFunc {
	switch path.Base(r.URL.Path) {
	case "probe":
		return s.serveProbe
	case "session":
		return s.serveSession
	case "sse":
		return s.serveSSE
	case "send":
		return s.serveSend
	}
	return nil
}

// corsPreflight applies the Origin rule to an HTTP transport request: a
// request that carries an Origin (a cross-origin fetch or EventSource; a
// same-origin POST too) must come from the request's own host or match
// OriginPatterns, else 403 with the close a WebSocket would get (1008). An
// allowed origin gets the CORS headers; an OPTIONS preflight is answered
// here. It reports whether it answered.
func (s *Server) corsPreflight(w http.ResponseWriter, r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	if !s.originAllowed(o, r.Host) {
		s.logs.Debug("cross-origin request refused") // without the origin: the peer's text
		writeJSON(w, http.StatusForbidden, closeBody{Error: "cross-origin request refused",
			Close: &closeInfo{Code: protocol.ClosePolicyViolation, Reason: protocol.ReasonOriginNotAllowed}})
		return true
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", o)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Retry-After, X-Wsready-Stream")
	if r.Method != http.MethodOptions {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// closeBody is the JSON of an HTTP transport answer that is not a
// success: an error for people, and for a refusal the close a WebSocket
// would have been given (code and reason), so a client classifies it the
// same way. RetryAfterMs repeats Retry-After in milliseconds.
type closeBody struct {
	Error        string     `json:"error"`
	RetryAfterMs int64      `json:"retryAfterMs,omitempty"`
	Close        *closeInfo `json:"close,omitempty"`
}

type closeInfo struct {
	Code   int    `json:"code"`
	Reason string `json:"reason"`
}

// allowMethods answers 405 unless r's method is one of methods; it
// reports whether r may go on.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	allow := strings.Join(methods, ", ")
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, closeBody{Error: "method " + r.Method + " not allowed here: " + allow})
	return false
}

// jsonBody answers 415 unless r says Content-Type application/json. A
// frame or a token never comes as a form or text/plain: a cross-site form
// cannot post one, and a cross-origin page must pass the preflight.
func jsonBody(w http.ResponseWriter, r *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "application/json" {
		return true
	}
	writeJSON(w, http.StatusUnsupportedMediaType, closeBody{Error: "Content-Type must be application/json"})
	return false
}

// serveProbe is GET <mount>/probe: 204, whatever the switches say. It
// proves a plain HTTP request reaches this server (the client's fallback
// rule asks it after its WebSocket attempts fail); it is neither admitted
// nor counted.
func (s *Server) serveProbe(w http.ResponseWriter, r *http.Request) {
	if s.corsPreflight(w, r) || !allowMethods(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// serveSession is POST <mount>/session: the HTTP transport's handshake.
// Admission applies as to an upgrade (a refusal is 503 or 429 with
// Retry-After and the close a WebSocket would get), then Options.Identify
// reads the request as it reads an upgrade (a refusal is 403, or 500, with
// the close), then auth as the first frame would: {"token":"..."} is the
// auth frame's ticket; a refused ticket is 401 (4001, expired) or 403
// (4003) with the close, and no session. 200
// {"session":ID,"intervalMs":N} makes a session: open its stream (GET
// <mount>/sse?session=ID) within two ping intervals plus SweepGrace.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) {
	if s.corsPreflight(w, r) {
		if r.Method != http.MethodOptions {
			s.metrics.handshakeVia(outOrigin, transportSSE)
		}
		return
	}
	if !allowMethods(w, r, http.MethodPost) || !jsonBody(w, r) {
		return
	}
	rc := http.NewResponseController(w)
	deadline := time.Now().Add(s.opts.RequestTimeout)
	rc.SetReadDeadline(deadline)
	rc.SetWriteDeadline(deadline)
	var req struct {
		Token *string `json:"token"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSessionBody))
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, closeBody{Error: "the body must be {} or {\"token\":\"...\"}, at most " + strconv.Itoa(maxSessionBody) + " bytes"})
		return
	}

	ip := s.clientIP(r) // behind TrustedProxies, the client's (proxy.go), as for an upgrade
	if ref := s.admit(r, ip); ref != nil {
		s.metrics.handshakeVia(ref.kind, transportSSE)
		writeRefusal(w, ref.status, ref.why, ref.after, protocol.CloseTryAgainLater, slotText(ref.after))
		return
	}
	if f := s.hook(); f != nil && f.Overloaded() {
		s.release(ip)
		s.count(func(k *connCounters) { k.overloaded++ })
		s.metrics.handshakeVia(outOverload, transportSSE)
		d := s.faultSettings().OverloadRetryAfter
		writeRefusal(w, http.StatusServiceUnavailable, "overloaded: try again later", d, protocol.CloseTryAgainLater, protocol.RetryAfterReason(d))
		return
	}
	id, refuseCode, refuseWhy := s.identify(r)
	if refuseCode != 0 {
		s.release(ip)
		s.metrics.handshakeVia(outAuth, transportSSE)
		status := http.StatusForbidden
		if refuseCode == protocol.CloseInternalError {
			status = http.StatusInternalServerError
		}
		writeRefusal(w, status, "refused: see close", 0, refuseCode, refuseWhy)
		return
	}
	if id.Tenant != "" {
		if ref := s.tenantHandshakeRefusal(id); ref != nil { // the tenant's handshake ceiling (tenants.go)
			s.release(ip)
			s.metrics.handshakeVia(ref.kind, transportSSE)
			writeRefusal(w, ref.status, ref.why, ref.after, protocol.CloseTryAgainLater, protocol.RetryAfterReason(ref.after))
			return
		}
	}
	c, late := s.register(newHTTPTransport, r.RemoteAddr, ip, id)
	if c == nil {
		s.release(ip)
		s.metrics.handshakeVia(outShutdown, transportSSE)
		writeRefusal(w, http.StatusServiceUnavailable, "server shutting down: try again later", 0, protocol.CloseGoingAway, "server shutting down")
		return
	}
	c.identified()
	// The auth frame a WebSocket client sends first, through the same
	// path (handle), before the session's reader starts.
	if mode := s.opts.Auth; mode != AuthOff && !c.closing.Load() {
		if req.Token != nil {
			c.handle(protocol.Encode(protocol.Message{Type: protocol.TypeAuth, Token: *req.Token}))
		} else {
			c.authChecked = true
			if mode == AuthRequired && !c.byRequest {
				c.closeAsync(protocol.CloseForbidden, "auth required")
			}
		}
	}
	s.closeIfLate(c, late)
	go func() {
		defer s.wg.Done() // register counted this session
		c.run()
	}()
	t := c.tr.(*httpTransport)
	if c.closing.Load() {
		// Refused: the close is the answer, and there is no session.
		<-c.ctx.Done() // closeWith has recorded it (no stream: it returns at once)
		code, reason := t.closedWith()
		status := http.StatusForbidden
		switch code {
		case protocol.CloseTokenExpired:
			status = http.StatusUnauthorized
		case protocol.CloseServiceRestart, protocol.CloseGoingAway, protocol.CloseTryAgainLater:
			// A capacity refusal (MaxConnsPerTenant's 1013, a Restart or
			// drain that came meanwhile) is 503 with Retry-After, as
			// admission's: the client waits out the slot.
			status = http.StatusServiceUnavailable
		}
		after, _ := protocol.ParseRetryAfter(reason)
		writeRefusal(w, status, "refused: see close", after, code, reason)
		return
	}
	s.metrics.handshakeVia(outAccepted, transportSSE)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, struct {
		Session    string `json:"session"`
		IntervalMs int64  `json:"intervalMs"`
	}{c.session, s.opts.PingInterval.Milliseconds()})
}

// writeRefusal answers a refused session: status, Retry-After (whole
// seconds) when after > 0, and the close a WebSocket would have got.
func writeRefusal(w http.ResponseWriter, status int, why string, after time.Duration, code int, reason string) {
	if after > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(after)))
	}
	writeJSON(w, status, closeBody{Error: why, RetryAfterMs: after.Milliseconds(), Close: &closeInfo{Code: code, Reason: reason}})
}

// session returns the HTTP session r names (?session=ID), or answers 404
// and returns nil.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (*conn, *httpTransport) {
	id := r.URL.Query().Get("session")
	var c *conn
	if len(id) == 22 {
		s.mu.Lock()
		c = s.sessions[id]
		s.mu.Unlock()
	}
	if c == nil {
		unknownSession(w)
		return nil, nil
	}
	return c, c.tr.(*httpTransport)
}

// unknownSession answers 404 for a session the server does not have: a
// transport loss for the client, which dials again.
func unknownSession(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, closeBody{Error: "unknown or expired session: start another (POST session)",
		Close: &closeInfo{Code: closeUnknownSession, Reason: "unknown session"}})
}

// serveSend is POST <mount>/send?session=ID: one client frame, or a JSON
// array of frames, handed in order to the session's reader (the path a
// WebSocket's frames take: the same checks per type, errors as error
// frames on the stream); 204 once the reader has taken the last. While
// Freeze or Deaf is on the body is not read: the POST waits, as a frozen
// or deaf WebSocket leaves a client's bytes unread. A frame over
// MaxFrameBytes, or a body over 16 of them, closes the session with 1009
// (413), as an oversized WebSocket message does.
//
// What a peer can make the node hold is bounded before a body is read: at
// most MaxSendPOSTs POSTs in progress per session, and at most
// MaxSendBytes of bodies on the node (each body reserved at its
// Content-Length, or maxSendBody without one); past either the POST is
// answered 429 with Retry-After and its body is dropped, never held. The
// session stays: the client may send again after the wait.
func (s *Server) serveSend(w http.ResponseWriter, r *http.Request) {
	if s.corsPreflight(w, r) || !allowMethods(w, r, http.MethodPost) || !jsonBody(w, r) {
		return
	}
	c, t := s.session(w, r)
	if c == nil {
		return
	}
	if r.ContentLength > maxSendBody {
		bodyTooBig(w, c)
		return
	}
	if n := t.posts.Add(1); n > int32(s.opts.MaxSendPOSTs) {
		t.posts.Add(-1)
		s.sendBusy(w, r, "this session has "+strconv.Itoa(s.opts.MaxSendPOSTs)+" POSTs in progress: send one at a time")
		return
	}
	defer t.posts.Add(-1)
	if !s.holdPOST(c, r) {
		if c.ctx.Err() != nil {
			unknownSession(w) // it ended while held
		}
		return
	}
	size := int64(maxSendBody) // no Content-Length (chunked): the most it may be
	if r.ContentLength >= 0 {
		size = r.ContentLength
	}
	if !s.takeSendBytes(size) {
		s.sendBusy(w, r, "the server holds its most POST bodies: try again later")
		return
	}
	defer s.sendBytes.Add(-size)
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.opts.MessageTimeout))
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxSendBody), r.ContentLength)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		bodyTooBig(w, c)
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, closeBody{Error: "failed to read the body"})
		return
	}
	frames, err := splitFrames(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, closeBody{Error: err.Error()})
		return
	}
	for _, f := range frames {
		if len(f) > protocol.MaxFrameBytes {
			c.closeAsync(protocol.CloseMessageTooBig, "frame too large")
			writeJSON(w, http.StatusRequestEntityTooLarge, closeBody{Error: "a frame is over " + strconv.Itoa(protocol.MaxFrameBytes) + " bytes",
				Close: &closeInfo{Code: protocol.CloseMessageTooBig, Reason: "frame too large"}})
			return
		}
	}
	rc.SetWriteDeadline(time.Now().Add(s.opts.RequestTimeout))
	switch t.hand(r.Context(), frames) {
	case nil:
		w.WriteHeader(http.StatusNoContent)
	case errSessionGone:
		unknownSession(w)
	default: // the client went away
	}
}

// sendRetryAfter is the wait a POST refused by MaxSendPOSTs or
// MaxSendBytes is told (Retry-After, whole seconds).
const sendRetryAfter = time.Second

// sendBusy answers a POST <mount>/send refused by its bounds: 429 with
// Retry-After. The session stays. The body is read and dropped first
// (within MessageTimeout, at most maxSendBody, through a small shared
// buffer: it costs no memory): a client still writing a body the server
// never reads would have its connection reset and lose the answer.
func (s *Server) sendBusy(w http.ResponseWriter, r *http.Request, why string) {
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.MessageTimeout))
	io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxSendBody))
	w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(sendRetryAfter)))
	writeJSON(w, http.StatusTooManyRequests, closeBody{Error: why, RetryAfterMs: sendRetryAfter.Milliseconds()})
}

// bodyTooBig closes c with 1009 for a body over maxSendBody and answers 413.
func bodyTooBig(w http.ResponseWriter, c *conn) {
	c.closeAsync(protocol.CloseMessageTooBig, "body too large")
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusRequestEntityTooLarge, closeBody{Error: "the body is over " + strconv.Itoa(maxSendBody) + " bytes",
		Close: &closeInfo{Code: protocol.CloseMessageTooBig, Reason: "body too large"}})
}

// takeSendBytes reserves n bytes of MaxSendBytes for a body; false if the
// node's bodies would pass it.
func (s *Server) takeSendBytes(n int64) bool {
	limit := int64(s.opts.MaxSendBytes)
	for {
		cur := s.sendBytes.Load()
		if cur+n > limit {
			return false
		}
		if s.sendBytes.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// readBody reads a body of length bytes (-1: unknown) from r into one
// buffer of that size, so a body costs its own bytes and not the doubling
// of a growing one; without a length it reads as io.ReadAll does (r is
// bounded by its caller).
func readBody(r io.Reader, length int64) ([]byte, error) {
	if length < 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, length)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// holdPOST waits while Freeze or Deaf holds a POST's body (unread); false
// if the session or the request ended first.
func (s *Server) holdPOST(c *conn, r *http.Request) bool {
	for _, g := range s.postGates() {
		if !waitGate(g, c.ctx.Done(), r.Context().Done()) {
			return false
		}
	}
	return true
}

// postGates are the switches that hold a POST's body: Freeze and Deaf.
func (s *Server) postGates() []*gate { return []*gate{s.freezeGate(), s.deafGate()} }

// waitGate blocks while g is frozen; false if a or b closed first.
func waitGate(g *gate, a, b <-chan struct{}) bool {
	for g.isFrozen() {
		g.mu.Lock()
		ch := g.open
		g.mu.Unlock()
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-a:
			return false
		case <-b:
			return false
		}
	}
	return true
}

// splitFrames reads a send body: a JSON array of frames, or else one
// frame (whatever its bytes: the reader's checks answer a bad one with an
// error frame, as on a WebSocket). An empty body or an array that is not
// JSON is refused.
func splitFrames(body []byte) ([][]byte, error) {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return nil, errors.New("the body is empty: send one frame or a JSON array of frames")
	case trimmed[0] != '[':
		return [][]byte{body}, nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, errors.New("the body starts with [ but is not a JSON array of frames")
	}
	frames := make([][]byte, len(raw))
	for i, f := range raw {
		frames[i] = f
	}
	return frames, nil
}

// serveSSE is GET <mount>/sse?session=ID: the session's stream. It
// attaches to the session (a stream already attached is ended: the newer
// one wins, as an EventSource that reconnects before the server saw its
// old stream go) and writes every frame the session's writer hands it
// until the session ends, the client goes, or a write makes no progress
// within WriteTimeout (the stream is dropped, the session waits for
// another). Last-Event-ID (or ?lastEventId=, for a driver that opens a new
// EventSource on the same session) resumes the topics from its cursors.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request) {
	if s.corsPreflight(w, r) || !allowMethods(w, r, http.MethodGet) {
		return
	}
	c, t := s.session(w, r)
	if c == nil {
		return
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("lastEventId")
	}
	cursors, err := parseCursors(last, s.opts.MaxSubscriptions)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, closeBody{Error: err.Error()})
		return
	}
	// ?poll=1: the long-poll mode, for a path that buffers the stream
	// (servePoll). ?welcome=1 with it: the client got nothing from the
	// session's streams so far, the welcome included.
	// ?probe=1: not the session's stream but a check that the path
	// passes one (serveStreamProbe). ?ping=1 on a stream: a ping goes
	// first, at once, so a client that moves an idle session from long
	// polls onto a stream hears from it within its wait.
	q := r.URL.Query()
	poll := q.Get("poll") == "1"
	if !poll && q.Get("probe") == "1" {
		s.serveStreamProbe(w, r, t)
		return
	}
	probe := !poll && q.Get("ping") == "1"
	st := &sseStream{reqs: make(chan *writeReq), end: make(chan struct{}), exited: make(chan struct{})}
	if !poll && st.hijackStream(w, r) {
		s.serveRawSSE(st, t, cursors, rawHead(w.Header()), probe)
		return
	}
	st.w, st.rc, st.reqDone = w, http.NewResponseController(w), r.Context().Done()
	pre, ok := t.attach(st, cursors)
	if !ok {
		close(st.exited)
		unknownSession(w)
		return
	}
	if probe {
		pre = append([][]byte{s.ping}, pre...)
	}
	defer t.detach(st)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	if poll {
		s.servePoll(st, t, pre, q.Get("welcome") == "1")
		return
	}
	w.WriteHeader(http.StatusOK)
	// The headers go out at once, whatever the switches: the client sees
	// its stream open (as a frozen server still completes an upgrade).
	if st.rc.Flush() != nil {
		return
	}
	// retry: how soon an EventSource reconnects after losing the stream,
	// well within the session's life without one.
	if st.writeRaw(s, []byte("retry: "+itoa64(s.opts.PingInterval.Milliseconds())+"\n\n")) != nil {
		return
	}
	for _, f := range pre {
		if st.writeFrame(s, t, f) != nil {
			return
		}
	}
	for {
		if !st.writeParked(s, t) {
			return
		}
		select {
		case <-t.kick: // a frame was parked: the loop's top writes it
		case req := <-st.reqs: // the close event
			err := st.writeRaw(s, closeEvent(req.code, req.reason))
			req.done <- err
			return
		case <-st.end:
			return
		case <-st.reqDone:
			return
		}
	}
}

// streamProbeHold is how long a stream probe's response stays open after
// its ping (5 s): past the client's wait for the ping (3 s,
// bridge.FirstEventTimeout), so a proxy that buffers the response until it
// ends delivers the ping too late to count.
const streamProbeHold = 5 * time.Second

// serveStreamProbe answers GET <mount>/sse?session=ID&probe=1: a check, for
// a client whose session is in long polls, that the path passes a stream
// now. It writes a ping event at once and holds the response open for
// streamProbeHold (or until the client goes or the session ends); the
// client counts the path as streaming if the ping arrives within its wait.
// It is not the session's stream: the session's frames go on to its polls,
// so the check loses and delays nothing. One at a time per session (a
// second is answered 429), so a peer holds at most one per session.
func (s *Server) serveStreamProbe(w http.ResponseWriter, r *http.Request, t *httpTransport) {
	if !t.streamProbe.CompareAndSwap(false, true) {
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusTooManyRequests, closeBody{Error: "a stream probe of this session is in progress"})
		return
	}
	defer t.streamProbe.Store(false)
	hold := time.NewTimer(streamProbeHold)
	defer hold.Stop()
	// Framed as the session's stream would be (a proxy may pass one
	// framing and hold the other back): over HTTP/1.1 without TLS a
	// hijacked connection, its body ending with it (sse_raw.go); else the
	// handler's response.
	if r.ProtoMajor == 1 && r.TLS == nil {
		if nc, _, err := http.NewResponseController(w).Hijack(); err == nil {
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(s.opts.WriteTimeout))
			if _, err := nc.Write(append(rawHead(w.Header()), appendData(nil, s.ping)...)); err != nil {
				return
			}
			select { // the client leaving is not watched: the hold is short and one per session
			case <-hold.C:
			case <-t.gone:
			}
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if _, err := w.Write(appendData(nil, s.ping)); err != nil || rc.Flush() != nil {
		return
	}
	select {
	case <-hold.C:
	case <-r.Context().Done():
	case <-t.gone:
	}
}

// servePoll answers a long poll (GET <mount>/sse?poll=1): the events a
// stream would carry, in the same format and with the same resume, but the
// response ends once it holds at least one event and the session has
// nothing more parked, or after one ping interval with none (the server
// pings every interval, so a healthy session answers within one). Each
// answer completes, so a proxy that buffers responses passes it; the client
// asks again at once, with the last id it got as ?lastEventId=. With
// welcome (the client's streams delivered nothing, not even the welcome,
// which the session wrote to one of them), the welcome comes first again.
// Between polls the session is detached: it lives its detachLimit, and
// what it sends meanwhile is parked for the next poll, as for a stream.
//
// X-Wsready-Stream: held on the answer says the welcome was written to a
// stream the client says gave it nothing: the path holds streams back (a
// frozen server writes nothing, so it never says so), and the client starts
// its next sessions in long polls.
func (s *Server) servePoll(st *sseStream, t *httpTransport, pre [][]byte, welcome bool) {
	var again []byte
	if welcome {
		t.mu.Lock()
		again = t.welcome
		t.mu.Unlock()
	}
	if again != nil {
		st.w.Header().Set("X-Wsready-Stream", "held")
	}
	st.w.WriteHeader(http.StatusOK)
	if again != nil && st.writeFrame(s, t, again) != nil {
		return
	}
	for _, f := range pre {
		if st.writeFrame(s, t, f) != nil {
			return
		}
	}
	wait := time.NewTimer(s.opts.PingInterval)
	defer wait.Stop()
	for {
		if !st.writeParked(s, t) || st.frames > 0 {
			return
		}
		select {
		case <-t.kick: // a frame was parked: the loop's top writes it
		case req := <-st.reqs: // the close event
			req.done <- st.writeRaw(s, closeEvent(req.code, req.reason))
			return
		case <-st.end:
			return
		case <-st.reqDone:
			return
		case <-wait.C:
			return // nothing within an interval: an empty answer, asked again
		}
	}
}

// serveRawSSE is serveSSE on a hijacked connection (sse_raw.go): it
// attaches st, writes the head, retry: and what the resume replays (as the
// handler path does, blocking, from the handler's goroutine), then makes
// the stream live (the session's writer sends to it from then on), starts
// its goroutine and writes what was parked meanwhile; then the handler
// returns, and net/http's request and buffers go with it. A close that
// came during the preamble is written in place of going live. probe: a
// ping goes before the replay (serveSSE's ?ping=1).
func (s *Server) serveRawSSE(st *sseStream, t *httpTransport, cursors map[string]int64, head []byte, probe bool) {
	pre, ok := t.attach(st, cursors)
	if !ok {
		close(st.exited)
		b, _ := json.Marshal(closeBody{Error: "unknown or expired session: start another (POST session)",
			Close: &closeInfo{Code: closeUnknownSession, Reason: "unknown session"}}) // plain fields: it cannot fail
		st.nc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		st.nc.Write([]byte("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
			strconv.Itoa(len(b)+1) + "\r\n\r\n" + string(b) + "\n"))
		st.nc.Close()
		return
	}
	if probe {
		pre = append([][]byte{s.ping}, pre...) // serveSSE's ?ping=1
	}
	fail := func() { t.detach(st) } // closes the socket
	if st.writeHead(s, head) != nil ||
		st.writeRaw(s, []byte("retry: "+itoa64(s.opts.PingInterval.Milliseconds())+"\n\n")) != nil {
		fail()
		return
	}
	for _, f := range pre {
		if st.writeFrame(s, t, f) != nil {
			fail()
			return
		}
	}
	t.mu.Lock()
	req := st.closeReq
	st.ready = req == nil
	t.mu.Unlock()
	if req != nil {
		req.done <- st.writeRaw(s, closeEvent(req.code, req.reason))
		fail()
		return
	}
	st.nc.SetWriteDeadline(time.Time{}) // the preamble's: send must not meet it
	go st.serve(s, t)                   // ends when the socket closes (stop): the stream's end, or the session's
	st.writeParked(s, t)                // a failure ends the stream, and serve with it
}

// httpTransport is an HTTP session's I/O: frames in from POST <mount>/send,
// out through the attached stream.
type httpTransport struct {
	c    *conn
	in   chan []byte   // from POSTs to the reader: unbuffered, a POST answers once the reader has its frames
	gone chan struct{} // closed when the session ends
	once sync.Once

	sendMu      sync.Mutex   // one POST's frames at a time, in order
	posts       atomic.Int32 // POST <mount>/send requests in progress (MaxSendPOSTs)
	streamProbe atomic.Bool  // a GET <mount>/sse?probe=1 is in progress (serveStreamProbe)
	attachMu    sync.Mutex   // one attach at a time

	// kick tells the attached stream's handler a frame is parked (cap 1;
	// a kick with no stream waits for the next one, which looks anyway).
	kick chan struct{}

	mu       sync.Mutex
	sentTo   *sseStream  // write sent its frame to this hijacked stream: park asks it
	parked   []byte      // the send queue's writer's frame, waiting for a stream's handler (parkParked)
	wstate   writerState // where the send queue's writer is
	stream   *sseStream  // the attached stream, or nil
	detachT  *time.Timer // drops the session when no stream comes
	detached time.Time   // since when no stream is attached (zero while one is)
	attached bool        // a stream has been attached (detachLimit)
	closed   bool        // close was called: code and reason are set
	code     int
	reason   string
	cursors  cursors // what the client has, per topic, as the stream's ids say
	welcome  []byte  // the welcome frame, once written to a stream: a poll with ?welcome=1 sends it again
}

// writerState is where an HTTP session's send queue writer is. The queue
// runs its writer inline (conn.writeInline): write parks the frame here
// and the writer stops; the stream's handler takes it (parkWriting),
// writes it, and runs the writer on (writeParked). A session that ends
// with a frame parked releases the writer (releaseParked), so conn.run's
// wait for it ends without a stream.
type writerState uint8

const (
	parkIdle    writerState = iota // no frame parked: the writer is idle or running elsewhere
	parkParked                     // a frame waits in parked for a stream
	parkWriting                    // a stream's handler is writing parked
)

func newHTTPTransport(c *conn) transport {
	t := &httpTransport{c: c, in: make(chan []byte), gone: make(chan struct{}),
		kick: make(chan struct{}, 1)}
	t.mu.Lock()
	t.armDetachLocked()
	t.mu.Unlock()
	context.AfterFunc(c.ctx, t.releaseParked) // no goroutine until the session ends
	return t
}

func (t *httpTransport) kind() transportKind { return transportSSE }

func (t *httpTransport) read(ctx context.Context) ([]byte, bool, error) {
	select {
	case f := <-t.in:
		return f, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-t.gone:
		return nil, false, errSessionGone
	}
}

// hand gives frames, in order, to the session's reader.
func (t *httpTransport) hand(ctx context.Context, frames [][]byte) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	for _, f := range frames {
		select {
		case t.in <- f:
		case <-t.gone:
			return errSessionGone
		case <-t.c.ctx.Done():
			return errSessionGone
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// write parks frame for the stream's handler, which writes it (the
// attached stream's, or the next one's: a stream that ends before it is
// written passes it to the next) and runs the queue's writer on; park
// then stops the writer. It never blocks, and fails only when the session
// has ended.
//
// A live hijacked stream is written here instead, in the writer's own
// goroutine (send never blocks: what the socket does not take waits in the
// stream's backlog, and park stops the writer until it is written). If it
// fails, the frame is parked for the next stream, as above.
func (t *httpTransport) write(ctx context.Context, frame []byte) error {
	t.mu.Lock()
	if err := ctx.Err(); err != nil {
		t.mu.Unlock()
		return err
	}
	if st := t.stream; st != nil && st.ready {
		t.sentTo = st
		t.mu.Unlock()
		if st.writeFrame(t.c.s, t, frame) == nil {
			return nil
		}
		t.mu.Lock()
		t.sentTo = nil
		// The session may have ended while the stream failed (a close
		// stops it): releaseParked has then run, and a frame parked now
		// would hold conn.run's wait for the writer for ever.
		if err := ctx.Err(); err != nil {
			t.mu.Unlock()
			return err
		}
	}
	t.parked, t.wstate = frame, parkParked
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default: // a kick is already waiting
	}
	return nil
}

// releaseParked ends the writer's wait for a stream once the session's
// context ends (context.AfterFunc): a parked frame is dropped and the
// writer counted done. A frame a handler is writing is left to it
// (writeParked sees the end).
//
// A hijacked stream is ended with the session here (its goroutine then
// runs on a writer parked on its backlog, which finds the session ended):
// conn.run waits for the writer before it calls closeNow.
func (t *httpTransport) releaseParked() {
	t.mu.Lock()
	release := t.wstate == parkParked
	if release {
		t.parked, t.wstate = nil, parkIdle
	}
	st := t.stream
	t.mu.Unlock()
	if st != nil && st.nc != nil {
		st.stop()
	}
	if release {
		t.c.flushWG.Done()
	}
}

// close writes the close event on the attached stream (within
// closeTimeout) and ends the session. Without a stream the code and
// reason are only recorded (closedWith): a refused session's answer.
func (t *httpTransport) close(code int, reason string) error {
	t.mu.Lock()
	t.closed, t.code, t.reason = true, code, reason
	st := t.stream
	t.mu.Unlock()
	var err error
	if st != nil && st.nc != nil {
		err = t.closeRaw(st, code, reason)
	} else if st != nil {
		req := &writeReq{code: code, reason: reason, done: make(chan error, 1)}
		timeout := time.NewTimer(closeTimeout)
		select {
		case st.reqs <- req:
			select {
			case err = <-req.done:
			case <-timeout.C:
				err = errors.New("close event not written within " + closeTimeout.String())
			}
		case <-st.exited:
		case <-timeout.C:
			err = errors.New("close event not written within " + closeTimeout.String())
		}
		timeout.Stop()
	}
	t.closeNow()
	return err
}

// closeRaw writes the close event on a hijacked stream, after what it
// has sent, within closeTimeout: a live stream sends it as a frame; one
// still writing its preamble is handed it (closeReq) and writes it last.
func (t *httpTransport) closeRaw(st *sseStream, code int, reason string) error {
	timeout := time.NewTimer(closeTimeout)
	defer timeout.Stop()
	late := errors.New("close event not written within " + closeTimeout.String())
	t.mu.Lock()
	if !st.ready {
		req := &writeReq{code: code, reason: reason, done: make(chan error, 1)}
		st.closeReq = req
		t.mu.Unlock()
		select {
		case err := <-req.done:
			return err
		case <-st.exited:
			return nil
		case <-timeout.C:
			return late
		}
	}
	t.mu.Unlock()
	flushed, err := st.send(t.c.s, closeEvent(code, reason), nil)
	if err != nil || flushed == nil {
		return err
	}
	select {
	case <-flushed:
		return nil
	case <-st.exited:
		return errStreamEnded
	case <-timeout.C:
		return late
	}
}

// closedWith is the code and reason close was given.
func (t *httpTransport) closedWith() (int, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code, t.reason
}

// closeNow ends the session and its stream (if any) without a word.
func (t *httpTransport) closeNow() {
	t.once.Do(func() { close(t.gone) })
	t.mu.Lock()
	st := t.stream
	if t.detachT != nil {
		t.detachT.Stop()
	}
	t.mu.Unlock()
	if st != nil {
		st.stop()
	}
}

// liveness backs up the detach timer: a session with no stream for two
// ping intervals plus SweepGrace is dropped.
func (t *httpTransport) liveness() { t.expire() }

func (t *httpTransport) peerGone() bool { return false }

// An HTTP session's writes never block: write parks each frame, and the
// stream's handler writes it and runs the writer on (writeParked), so a
// frame costs no goroutine.
func (t *httpTransport) inline() bool { return true }

// park: a frame parked for a stream's handler stops the writer; one sent to
// a hijacked stream stops it while the stream has a backlog.
func (t *httpTransport) park() bool {
	t.mu.Lock()
	st := t.sentTo
	t.sentTo = nil
	t.mu.Unlock()
	if st == nil {
		return true
	}
	parked, lost := st.parkWriter()
	if lost != nil {
		return t.rewrite(lost)
	}
	return parked
}

// rewrite writes again, as the send queue's writer, a frame a hijacked
// stream took into its backlog and ended with: to the attached stream if
// it is live, else parked for the next one (write). It reports whether the
// writer stops there (park); false also when the session has ended (the
// writer then runs to its end).
func (t *httpTransport) rewrite(frame []byte) bool {
	if t.write(t.c.ctx, frame) != nil {
		return false
	}
	return t.park()
}

// detachLimit is how long a session lives without a stream: two ping
// intervals plus SweepGrace once a stream has come, and before the first
// one at most HTTPAttachTimeout, so a session nobody streams gives back
// its place under MaxConns and MaxConnsPerIP within seconds. Called with
// t.mu held.
func (t *httpTransport) detachLimit() time.Duration {
	o := t.c.s.opts
	d := 2*o.PingInterval + o.SweepGrace
	if !t.attached {
		d = min(d, o.HTTPAttachTimeout)
	}
	return d
}

// armDetachLocked starts the session's time without a stream: expire
// runs when it is up. Called with t.mu held.
func (t *httpTransport) armDetachLocked() {
	if t.detachT != nil {
		t.detachT.Stop()
	}
	t.detached = time.Now()
	t.detachT = time.AfterFunc(t.detachLimit(), t.expire)
}

// expire drops the session if no stream has been attached to it for
// detachLimit. The sweep does not blame the switches' holds here: a frozen
// stream stays attached (only its writes wait), so a detach is the
// client's doing.
func (t *httpTransport) expire() {
	t.mu.Lock()
	idle := t.stream == nil && !t.closed && time.Since(t.detached) >= t.detachLimit()
	t.mu.Unlock()
	if idle {
		t.c.sweepClose()
	}
}

// attach makes st the session's stream and returns what it must write
// first: for each subscribed topic the client may lack updates of (the
// cursor its Last-Event-ID gives, or, for a topic absent from it, the
// start of its subscription), what a subscribe with since would answer:
// subscribed with from and head, then the retained updates from there.
// The previous stream, if any, is ended first and its handler waited for,
// so the cursors are not moving. false: the session has ended.
func (t *httpTransport) attach(st *sseStream, last map[string]int64) ([][]byte, bool) {
	t.attachMu.Lock()
	defer t.attachMu.Unlock()
	t.mu.Lock()
	old := t.stream
	t.stream = nil
	t.mu.Unlock()
	if old != nil {
		old.stop()
		<-old.exited
	}
	select {
	case <-t.gone:
		return nil, false
	default:
	}
	c := t.c
	c.subMu.Lock()
	subs := make(map[string]*topic, len(c.subs))
	for name, tp := range c.subs {
		subs[name] = tp
	}
	c.subMu.Unlock()

	t.mu.Lock()
	known := slices.Clone(t.cursors.list)
	t.mu.Unlock()
	var pre [][]byte
	var next []cursor
	for _, e := range known {
		tp := subs[e.topic]
		if tp == nil {
			continue // no longer subscribed
		}
		since := e.from - 1
		if l, ok := last[e.topic]; ok {
			since = min(l, e.seq) // never past what was written
		}
		frames, sub, ok := tp.resume(c, since)
		if !ok {
			continue // retired meanwhile: its subscribers were told
		}
		next = append(next, cursor{topic: e.topic, seq: since, from: e.from})
		if sub != nil {
			pre = append(pre, sub)
			pre = append(pre, frames...)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// gone again: the session may have ended since the check above, and
	// closeNow (which closes gone before it looks for a stream under t.mu)
	// would not stop a stream attached after it looked.
	select {
	case <-t.gone:
		return nil, false
	default:
	}
	if t.closed {
		return nil, false
	}
	t.cursors.list = next
	t.stream = st
	t.attached = true
	if t.detachT != nil {
		t.detachT.Stop()
	}
	return pre, true
}

// detach ends st's part in the session: the session waits detachLimit
// for another stream.
func (t *httpTransport) detach(st *sseStream) {
	st.stop()
	t.mu.Lock()
	if t.stream == st {
		t.stream = nil
		if !t.closed {
			t.armDetachLocked()
		}
	}
	t.mu.Unlock()
	close(st.exited)
}
