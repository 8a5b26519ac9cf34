//go:build !js

package native

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/protocol"
)

// The HTTP transport of the native client (stage 8, docs/http-transport.md),
// for a Go program behind a proxy that refuses WebSocket upgrades. It is the
// browser's (wasm/http.go) in net/http, with the same pure pieces
// (internal/bridge: the URLs, how a refusal reads, batching, the long-poll
// switch) and the same rules, which are the core's: the core decides when
// to probe (EffProbeHTTP), when to dial over HTTP (EffDial with
// TransportHTTP) and when to try WebSocket again beside it (the re-probe);
// this file only carries frames.
//
// A socket over HTTP: POST <base>/session makes a session (the ticket in its
// body, so the core's auth frame is not sent), GET <base>/sse?session=<id>
// streams the server's frames, and POST <base>/send?session=<id> carries the
// client's, one POST at a time and in order (frames queued meanwhile go
// together in the next, bridge.Batch). The socket opens with the first
// event, as the browser's does. A stream that opens and delivers nothing
// within bridge.FirstEventTimeout is held back on the path, and the session
// goes on in long polls (&poll=1, the first with &welcome=1); a server that
// said its stream was held starts its next sessions in long polls for
// bridge.PollModeFor.
//
// Closes read as a WebSocket's would: a refused session or send
// (bridge.Refusal: 429/503 -> 1013 with the Retry-After as its slot, a
// 401/403 close body -> its code, else 1006), the stream's "event: close"
// with its code, anything else that ends the stream or a POST 1006, and a
// close the core asked for with the core's code. Each socket has two
// goroutines (the session-then-reader, and the sender once the session is
// made), both ended by the socket's context and counted in Client.sockWG.

// maxStreamLine bounds one line of the event stream, in bytes (128 KiB): a
// frame is at most protocol.MaxFrameBytes, and an id: line lists one
// cursor per subscribed topic. A longer line ends the socket with 1009, as
// an oversized WebSocket message does.
const maxStreamLine = 2 * protocol.MaxFrameBytes

// maxEventData bounds one event's data, its data: lines joined (64 KiB, a
// frame's bound), past it 1009.
const maxEventData = protocol.MaxFrameBytes

// maxPollBody bounds one long poll's answer, in bytes (4 MiB): the events
// the session queued since the last poll. Past it 1009.
const maxPollBody = 4 * bridge.MaxPostBytes

// maxAnswerBody bounds what is read of a session, send or probe answer
// (64 KiB; the server's are a few hundred bytes).
const maxAnswerBody = protocol.MaxFrameBytes

// probeTimeout bounds GET <base>/probe (5 s, the browser's).
const probeTimeout = 5 * time.Second

// errLineTooLong ends a stream whose line or event passed its bound.
var errLineTooLong = errors.New("an event stream line or event passed its bound")

// closeReq is a close the loop asked for (EffClose): the socket reports it
// with this code rather than the error the cancel causes.
type closeReq struct {
	code   int
	reason string
}

// httpClient is the client HTTP requests go through: DialOptions.HTTPClient
// if set, else one of the Client's own (made at the first use, its idle
// connections closed when the loop ends). The loop's.
func (c *Client) httpClient() *http.Client {
	if c.opts.DialOptions != nil && c.opts.DialOptions.HTTPClient != nil {
		return c.opts.DialOptions.HTTPClient
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return c.hc
}

// wsBase is url with http -> ws and https -> wss: the form the bridge
// derives the HTTP endpoints from (native URLs may be either).
func wsBase(url string) string {
	switch {
	case strings.HasPrefix(url, "http://"):
		return "ws://" + url[len("http://"):]
	case strings.HasPrefix(url, "https://"):
		return "wss://" + url[len("https://"):]
	}
	return url
}

// newRequest is http.NewRequestWithContext with DialOptions.HTTPHeader
// added (a proxy's authorization, say).
func (c *Client) newRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if c.opts.DialOptions != nil {
		for k, vs := range c.opts.DialOptions.HTTPHeader {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	req.Header.Set("Cache-Control", "no-store")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// drain reads what is left of an answer (bounded) and closes it, so its
// connection goes back to the pool.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBody))
	resp.Body.Close()
}

// startHTTP opens a socket over HTTP for the core's socket id, with token
// (the ticket the core's dial names, Effect.Token; "" without) as the
// session's ticket.
func (c *Client) startHTTP(id client.SocketID, url, token string) *socket {
	ctx, cancel := context.WithCancel(c.ctx)
	s := &socket{id: id, ctx: ctx, cancel: cancel, out: make(chan []byte, sendQueue), closeWith: make(chan closeReq, 1)}
	hc := c.httpClient()
	c.sockWG.Add(1)
	go func() {
		defer c.sockWG.Done()
		h := &httpSocket{c: c, s: s, hc: hc, base: wsBase(url), tokened: token != "", failed: make(chan closeReq, 1)}
		code, reason := h.run(token)
		cancelled := ctx.Err() != nil // the loop or the sender ended it: the reader's 1006 is their doing
		cancel()
		select { // a close the loop asked for wins; then the sender's failure, over the error it caused
		case r := <-s.closeWith:
			code, reason = r.code, r.reason
		default:
			if cancelled && code == protocol.CloseAbnormal {
				select {
				case r := <-h.failed:
					code, reason = r.code, r.reason
				default:
				}
			}
		}
		c.post(c.ctx, event{kind: evClosed, socket: id, code: code, reason: reason})
	}()
	return s
}

// httpSocket is one socket's HTTP session, owned by its reader goroutine
// (the sender reads only the fields fixed before it starts).
type httpSocket struct {
	c       *Client
	s       *socket
	hc      *http.Client
	base    string // the WebSocket URL the endpoints derive from
	session string
	tokened bool          // the ticket went with the session POST: the core's auth frame is not sent
	failed  chan closeReq // the sender's failure (cap 1)
	heard   bool          // an event came: the socket is open
	lastID  string        // the last event id received (the resume's cursor)
}

// end is the sender's way to end the socket: its close, then the cancel
// that stops the reader.
func (h *httpSocket) end(code int, reason string) {
	select {
	case h.failed <- closeReq{code, reason}:
	default:
	}
	h.s.cancel()
}

// setLastDial keeps the dial's error for WaitReady (no peer text in it).
func (c *Client) setLastDial(err error) {
	c.mu.Lock()
	c.lastDial = fmt.Errorf("failed to dial over HTTP: %w", err)
	c.mu.Unlock()
}

// run makes the session, starts the sender and reads the server's frames
// until the socket ends; it returns the close to report.
func (h *httpSocket) run(token string) (int, string) {
	c := h.c
	if err := c.takeSlot(h.s.ctx); err != nil {
		c.setLastDial(err)
		return protocol.CloseAbnormal, ""
	}
	if code, reason, ok := h.openSession(token); !ok {
		return code, reason
	}
	sendURL, err := bridge.HTTPURL(h.base, "send", h.session)
	if err != nil {
		return protocol.CloseAbnormal, ""
	}
	c.sockWG.Add(1)
	go h.sendLoop(sendURL)
	if c.pollMode(h.base) {
		return h.polls(false)
	}
	code, reason, silent := h.stream()
	if silent {
		return h.polls(true)
	}
	return code, reason
}

// openSession makes the session (POST <base>/session) within the core's
// ConnectTimeout; ok false: the close a refusal reads as.
func (h *httpSocket) openSession(token string) (code int, reason string, ok bool) {
	c := h.c
	u, err := bridge.HTTPURL(h.base, "session", "")
	if err != nil {
		c.setLastDial(err)
		return protocol.CloseAbnormal, "", false
	}
	body := []byte("{}")
	if token != "" {
		body, _ = json.Marshal(map[string]string{"token": token}) // a string marshals
	}
	ctx, cancel := context.WithTimeout(h.s.ctx, c.connectTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodPost, u, body)
	if err != nil {
		c.setLastDial(err)
		return protocol.CloseAbnormal, "", false
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		c.setLastDial(err)
		return protocol.CloseAbnormal, "", false
	}
	defer drain(resp)
	var ans struct {
		Session string `json:"session"`
		Close   struct {
			Code   int    `json:"code"`
			Reason string `json:"reason"`
		} `json:"close"`
	}
	decErr := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBody)).Decode(&ans)
	if resp.StatusCode == http.StatusOK {
		if decErr != nil || !bridge.ValidSession(ans.Session) {
			c.setLastDial(errors.New("the session answer holds no valid session id"))
			return protocol.CloseAbnormal, "", false
		}
		h.session = ans.Session
		return 0, "", true
	}
	c.setLastDial(fmt.Errorf("the session was refused with HTTP %d", resp.StatusCode))
	code, reason = bridge.Refusal(resp.StatusCode, resp.Header.Get("Retry-After"), ans.Close.Code, ans.Close.Reason)
	return code, reason, false
}

// event hands one server frame to the loop; the first opens the socket.
func (h *httpSocket) event(frame []byte) bool {
	if !h.heard {
		h.heard = true
		if !h.c.post(h.c.ctx, event{kind: evOpened, socket: h.s.id}) {
			return false
		}
	}
	return h.c.post(h.c.ctx, event{kind: evFrame, socket: h.s.id, frame: frame})
}

// streamClose reads an "event: close" body.
func streamClose(data []byte) (int, string) {
	var cl struct {
		Code   float64 `json:"code"`
		Reason string  `json:"reason"`
	}
	if json.Unmarshal(data, &cl) != nil {
		return protocol.CloseAbnormal, ""
	}
	return bridge.StreamClose(cl.Code, cl.Reason)
}

// stream reads GET <base>/sse?session=<id> line by line until it ends.
// silent: it opened and delivered nothing within bridge.FirstEventTimeout
// (held back on the path): the caller goes on in long polls.
func (h *httpSocket) stream() (code int, reason string, silent bool) {
	u, err := bridge.HTTPURL(h.base, "sse", h.session)
	if err != nil {
		return protocol.CloseAbnormal, "", false
	}
	ctx, cancel := context.WithCancel(h.s.ctx)
	defer cancel()
	// The first event's timer, armed with the request rather than at the
	// headers (an EventSource's open): a proxy that holds the headers too
	// is found the same way. It cancels the stream unless an event came
	// first (heardMu orders the two).
	var heardMu sync.Mutex
	heard, fired := false, false
	t := time.AfterFunc(bridge.FirstEventTimeout, func() {
		heardMu.Lock()
		defer heardMu.Unlock()
		if !heard {
			fired = true
			cancel()
		}
	})
	defer t.Stop()
	isSilent := func() bool {
		heardMu.Lock()
		defer heardMu.Unlock()
		return fired
	}
	req, err := h.c.newRequest(ctx, http.MethodGet, u, nil)
	if err != nil {
		return protocol.CloseAbnormal, "", false
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := h.hc.Do(req)
	if err != nil {
		return protocol.CloseAbnormal, "", isSilent()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return protocol.CloseAbnormal, "", false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxStreamLine)
	var data []byte
	name, hasData := "", false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if !hasData {
				name = ""
				continue
			}
			if name == "close" {
				code, reason := streamClose(data)
				return code, reason, false
			}
			heardMu.Lock()
			if fired { // the timer won: the polls take the session from here
				heardMu.Unlock()
				return protocol.CloseAbnormal, "", true
			}
			heard = true
			heardMu.Unlock()
			if !h.event(bytes.Clone(data)) {
				return protocol.CloseAbnormal, "", false
			}
			data, name, hasData = data[:0], "", false
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if len(data)+len(value) > maxEventData {
				return protocol.CloseMessageTooBig, "", false
			}
			data = append(data, value...)
			hasData = true
		case "event":
			name = string(value)
		case "id":
			h.lastID = string(value)
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return protocol.CloseMessageTooBig, "", false
	}
	return protocol.CloseAbnormal, "", isSilent()
}

// polls goes on in long polls until the session ends: each GET answers
// the events queued since lastID; welcome asks the first for the welcome
// again (a held stream took it).
func (h *httpSocket) polls(welcome bool) (int, string) {
	for {
		u, err := bridge.PollURL(h.base, h.session, h.lastID, welcome)
		if err != nil {
			return protocol.CloseAbnormal, ""
		}
		req, err := h.c.newRequest(h.s.ctx, http.MethodGet, u, nil)
		if err != nil {
			return protocol.CloseAbnormal, ""
		}
		resp, err := h.hc.Do(req)
		if err != nil {
			return protocol.CloseAbnormal, ""
		}
		if resp.StatusCode != http.StatusOK {
			drain(resp)
			return protocol.CloseAbnormal, ""
		}
		if resp.Header.Get("X-Wsready-Stream") == "held" {
			h.c.heldStream(h.base)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxPollBody+1))
		resp.Body.Close()
		if err != nil {
			return protocol.CloseAbnormal, ""
		}
		if len(body) > maxPollBody {
			return protocol.CloseMessageTooBig, ""
		}
		welcome = false
		for _, e := range bridge.ParseEvents(string(body)) {
			if e.Name == "close" {
				return streamClose([]byte(e.Data))
			}
			if e.HasID {
				h.lastID = e.ID
			}
			if !h.event([]byte(e.Data)) {
				return protocol.CloseAbnormal, ""
			}
		}
	}
}

// heldStream notes that base's stream was held back on the path: its
// sessions start in long polls for bridge.PollModeFor. One entry per
// server URL the Client dials (a fixed list).
func (c *Client) heldStream(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pollSince == nil {
		c.pollSince = map[string]time.Time{}
	}
	c.pollSince[base] = time.Now()
}

// pollMode reports whether base's sessions start in long polls.
func (c *Client) pollMode(base string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.pollSince[base]
	return ok && time.Since(at) < bridge.PollModeFor
}

// sendLoop POSTs the socket's frames in order, one POST at a time (within
// the server's MaxSendPOSTs, at least 1): what queued meanwhile goes in the
// next, as much as one body holds. It holds at most sendQueue frames beside
// the socket's channel; past both, socket.send drops a frame and the core's
// deadlines notice. A 429 or 503 ends the socket as the server steering
// (1013 with the Retry-After); any other failure as a transport loss.
func (h *httpSocket) sendLoop(url string) {
	defer h.c.sockWG.Done()
	ctx := h.s.ctx
	var queue [][]byte
	take := func(f []byte) {
		if h.tokened && bridge.IsAuthFrame(f) {
			return // the ticket went with the session POST
		}
		queue = append(queue, f)
	}
	for {
		if len(queue) == 0 {
			select {
			case <-ctx.Done():
				return
			case f := <-h.s.out:
				take(f)
			}
		}
		for more := true; more && len(queue) < sendQueue; {
			select {
			case f := <-h.s.out:
				take(f)
			default:
				more = false
			}
		}
		if len(queue) == 0 {
			continue
		}
		body, n := bridge.Batch(queue, bridge.MaxPostBytes)
		clear(queue[:n])
		queue = queue[n:]
		req, err := h.c.newRequest(ctx, http.MethodPost, url, body)
		if err != nil {
			h.end(protocol.CloseAbnormal, "")
			return
		}
		resp, err := h.hc.Do(req)
		if err != nil {
			h.end(protocol.CloseAbnormal, "")
			return
		}
		drain(resp)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
			h.end(bridge.Refusal(resp.StatusCode, resp.Header.Get("Retry-After"), 0, ""))
			return
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			h.end(protocol.CloseAbnormal, "")
			return
		}
	}
}

// probeHTTP carries out EffProbeHTTP: GET <base>/probe of the server the
// next dial goes to, within probeTimeout, on a goroutine of its own; the
// answer (any 2xx) reaches the core as HTTPProbe.
func (c *Client) probeHTTP(url string) {
	hc := c.httpClient()
	c.sockWG.Add(1)
	go func() {
		defer c.sockWG.Done()
		ok := false
		if u, err := bridge.HTTPURL(wsBase(url), "probe", ""); err == nil {
			ctx, cancel := context.WithTimeout(c.ctx, probeTimeout)
			if req, err := c.newRequest(ctx, http.MethodGet, u, nil); err == nil {
				if resp, err := hc.Do(req); err == nil {
					ok = resp.StatusCode >= 200 && resp.StatusCode <= 299
					drain(resp)
				}
			}
			cancel()
		}
		c.post(c.ctx, event{kind: evProbe, ok: ok})
	}()
}
