//go:build !js

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// A client of the HTTP transport, as a browser's EventSource and fetch
// would be: net/http and a small event-stream reader.

// base is the HTTP transport's base URL: the WebSocket URL with ws -> http.
func (f *fixture) base() string { return f.hs.URL + "/ws" }

// sseEvent is one event of a stream.
type sseEvent struct {
	event string // "" for a message
	id    string // the last event id, as an EventSource keeps it
	hasID bool   // this event set it
	data  string
}

// httpAnswer is a decoded JSON answer of the transport.
type httpAnswer struct {
	status     int
	retryAfter string
	Session    string `json:"session"`
	IntervalMs int64  `json:"intervalMs"`
	Error      string `json:"error"`
	RetryMs    int64  `json:"retryAfterMs"`
	Close      *struct {
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	} `json:"close"`
	header http.Header
}

// post POSTs body to the transport's path (with query) and decodes the
// answer; a transport error fails t.
func (f *fixture) post(t *testing.T, pathQuery, contentType, body string, header ...string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.base()+pathQuery, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return readAnswer(t, resp)
}

func readAnswer(t *testing.T, resp *http.Response) httpAnswer {
	t.Helper()
	a := httpAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), header: resp.Header}
	b, _ := io.ReadAll(resp.Body)
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, b)
		}
	}
	return a
}

// newSession POSTs a session with body; the answer must be 200.
func (f *fixture) newSession(t *testing.T, body string) string {
	t.Helper()
	a := f.post(t, "/session", "application/json", body)
	if a.status != http.StatusOK || len(a.Session) != 22 {
		t.Fatalf("session: %d %+v", a.status, a)
	}
	return a.Session
}

// httpPeer is one session with its stream: every frame it receives lands
// in frames, a close event in closed.
type httpPeer struct {
	t       *testing.T
	f       *fixture
	session string
	frames  chan protocol.Message
	events  chan sseEvent // every event, frames and closes
	closed  chan closeInfo

	mu     sync.Mutex
	lastID string
	cancel context.CancelFunc
	ctx    context.Context
	done   chan struct{} // the current stream's reader ended
	paused bool          // events are not taken: they are lost with the stream
}

// httpDial makes a session and opens its stream.
func (f *fixture) httpDial(t *testing.T) *httpPeer {
	t.Helper()
	p := &httpPeer{t: t, f: f, session: f.newSession(t, "{}"), frames: make(chan protocol.Message, 4096),
		events: make(chan sseEvent, 4096), closed: make(chan closeInfo, 4)}
	p.stream("")
	t.Cleanup(p.closeStream)
	return p
}

// stream opens the session's stream with lastID as Last-Event-ID ("":
// none) and reads it until it ends or closeStream.
func (p *httpPeer) stream(lastID string) {
	p.t.Helper()
	resp, ctx, cancel := p.open(lastID)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		p.t.Fatalf("stream: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cancel, p.ctx, p.done, p.paused = cancel, ctx, done, false
	if lastID != "" {
		p.lastID = lastID
	}
	p.mu.Unlock()
	go func() {
		defer close(done)
		defer resp.Body.Close()
		readEvents(resp.Body, func(ev sseEvent) {
			p.mu.Lock()
			paused := p.paused
			p.mu.Unlock()
			if paused { // not received: lost with the stream
				<-ctx.Done()
				return
			}
			if ev.hasID {
				p.mu.Lock()
				p.lastID = ev.id
				p.mu.Unlock()
			}
			p.events <- ev
			switch ev.event {
			case "close":
				var ci closeInfo
				if err := json.Unmarshal([]byte(ev.data), &ci); err != nil {
					p.t.Errorf("close event %q: %v", ev.data, err)
				}
				p.closed <- ci
			case "":
				m, err := protocol.Decode([]byte(ev.data))
				if err != nil {
					p.t.Errorf("server sent undecodable frame %q: %v", ev.data, err)
					return
				}
				p.frames <- m
			}
		})
	}()
}

// pause stops taking events: those that arrive meanwhile are lost when
// the stream is closed, as a client loses what was on the way.
func (p *httpPeer) pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
}

// open GETs the stream; the caller reads and closes it.
func (p *httpPeer) open(lastID string) (*http.Response, context.Context, context.CancelFunc) {
	p.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.f.base()+"/sse?session="+p.session, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		p.t.Fatalf("stream: %v", err)
	}
	return resp, ctx, cancel
}

// closeStream drops the stream, as a client that loses it does (what it
// had not read is lost), and waits for its reader.
func (p *httpPeer) closeStream() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (p *httpPeer) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastID
}

// readEvents parses an event stream (the WHATWG rules this transport
// uses: data, id, event; comments and retry ignored) until it ends.
func readEvents(r io.Reader, fn func(sseEvent)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	var ev sseEvent
	var data []string
	id := ""
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil {
				ev.data = strings.Join(data, "\n")
				ev.id = id
				fn(ev)
			}
			ev, data = sseEvent{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
		case "event":
			ev.event = value
		case "id":
			id, ev.hasID = value, true
		}
	}
}

// send POSTs frames (one, or an array of several) and wants want.
func (p *httpPeer) send(want int, ms ...protocol.Message) {
	p.t.Helper()
	var body []byte
	if len(ms) == 1 {
		body = protocol.Encode(ms[0])
	} else {
		body = []byte{'['}
		for i, m := range ms {
			if i > 0 {
				body = append(body, ',')
			}
			body = protocol.AppendEncode(body, m)
		}
		body = append(body, ']')
	}
	if a := p.f.post(p.t, "/send?session="+p.session, "application/json", string(body)); a.status != want {
		p.t.Fatalf("send: %d %+v, want %d", a.status, a, want)
	}
}

func (p *httpPeer) next(typ protocol.Type, d time.Duration) protocol.Message {
	p.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m := <-p.frames:
			if m.Type == typ {
				return m
			}
		case <-deadline:
			p.t.Fatalf("no %s frame within %v", typ, d)
		}
	}
}

func (p *httpPeer) closeEvent(d time.Duration) closeInfo {
	p.t.Helper()
	select {
	case ci := <-p.closed:
		return ci
	case <-time.After(d):
		p.t.Fatalf("no close event within %v", d)
		return closeInfo{}
	}
}

// silentFor asserts that no frame arrives for d.
func (p *httpPeer) silentFor(d time.Duration) {
	p.t.Helper()
	select {
	case m := <-p.frames:
		p.t.Fatalf("expected silence, got %+v", m)
	case <-time.After(d):
	}
}

func TestHTTPTransportRoundTrip(t *testing.T) {
	f := newFixture(t, &Options{Publish: true})
	if code := getStatus(t, f.base()+"/probe", ""); code != http.StatusNoContent {
		t.Fatalf("probe: %d", code)
	}
	a := f.post(t, "/session", "application/json", `{}`)
	if a.status != 200 || a.IntervalMs != 100 || len(a.Session) != 22 || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("session: %+v", a)
	}
	p := &httpPeer{t: t, f: f, session: a.Session, frames: make(chan protocol.Message, 4096), events: make(chan sseEvent, 4096), closed: make(chan closeInfo, 4)}
	p.stream("")
	t.Cleanup(p.closeStream)
	p.next(protocol.TypePing, time.Second)
	if w := p.next(protocol.TypeWelcome, time.Second); w.Session != a.Session {
		t.Fatalf("welcome %+v, want session %s", w, a.Session)
	}
	p.next(protocol.TypePing, time.Second) // and the next, at the interval

	p.send(http.StatusNoContent, protocol.Message{Type: protocol.TypeRequest, ID: 7, Method: "echo", Params: []byte(`{"a":[1,2]}`)})
	if r := p.next(protocol.TypeResponse, time.Second); r.ID != 7 || string(r.Result) != `{"a":[1,2]}` {
		t.Fatalf("response %+v", r)
	}
	// Several frames in one POST, in order; a bad one answered on the
	// stream like a WebSocket's.
	p.send(http.StatusNoContent,
		protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"},
		protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"},
		protocol.Message{Type: protocol.TypeRequest, ID: 8, Method: "nope"})
	if s := p.next(protocol.TypeSubscribed, time.Second); s.Topic != "feed" {
		t.Fatalf("subscribed %+v", s)
	}
	if s := p.next(protocol.TypeSubscribed, time.Second); s.Topic != "room" {
		t.Fatalf("subscribed %+v", s)
	}
	if r := p.next(protocol.TypeResponse, time.Second); r.ID != 8 || r.Error == nil || r.Error.Code != protocol.ErrUnknownMethod {
		t.Fatalf("response %+v", r)
	}
	if a := f.post(t, "/send?session="+p.session, "application/json", `{"type":"subscribe"`); a.status != http.StatusNoContent {
		t.Fatalf("a bad frame: %d", a.status)
	}
	if e := p.next(protocol.TypeError, time.Second); e.Error == nil || e.Error.Code != protocol.ErrBadJSON {
		t.Fatalf("error frame %+v", e)
	}
	// Updates carry the session's cursors as their id.
	u := p.next(protocol.TypeUpdate, time.Second)
	p.send(http.StatusNoContent, protocol.Message{Type: protocol.TypePublish, ID: 9, Topic: "room", Data: []byte("{\n \"text\": \"hi\"\n}")})
	r := p.next(protocol.TypeResponse, time.Second)
	if r.ID != 9 || string(r.Result) != `{"seq":1}` {
		t.Fatalf("publish response %+v", r)
	}
	for {
		select {
		case ev := <-p.events:
			if !strings.Contains(ev.data, `"topic":"room"`) || !strings.Contains(ev.data, `"update"`) {
				continue
			}
			// The data's line breaks came as data: lines, joined again.
			m, err := protocol.Decode([]byte(ev.data))
			if err != nil || m.Seq != 1 || string(m.Data) != "{\n \"text\": \"hi\"\n}" {
				t.Fatalf("update %q: %+v %v", ev.data, m, err)
			}
			if !ev.hasID || !strings.HasPrefix(ev.id, "feed=") || !strings.HasSuffix(ev.id, ",room=1") {
				t.Fatalf("update id %q (feed's was at %d)", ev.id, u.Seq)
			}
			if cs := f.srv.Stats().Connections; len(cs) != 1 || cs[0].Transport != "sse" {
				t.Fatalf("stats connections %+v", cs)
			}
			text := getText(t, f.hs.URL+"/metrics")
			for _, want := range []string{`wsready_handshakes_total{outcome="accepted",transport="sse"} 1`, `wsready_connections_open{transport="sse"} 1`} {
				if !strings.Contains(text, want) {
					t.Fatalf("metrics lack %s", want)
				}
			}
			return
		case <-time.After(2 * time.Second):
			t.Fatal("no update of room")
		}
	}
}

// A stream that is lost and resumed with Last-Event-ID misses nothing and
// repeats nothing, whatever was written to the lost stream and never read.
func TestHTTPLastEventIDResumesWithNoGapAndNoDuplicate(t *testing.T) {
	// The ring holds every update of the run (about 1,000 of 2 KB): how far
	// behind the head a lost stream leaves the client depends on how much
	// the server had written into the socket's buffers, which under -race
	// on a loaded machine was more than the default 256 KiB (the resume
	// then said so, truthfully, with a later from).
	f := newFixture(t, &Options{PingInterval: 50 * time.Millisecond, SweepGrace: 2 * time.Second, HistoryMsgs: 20000, HistoryBytes: 64 << 20},
		DemoOptions{NoFeed: true})
	p := f.httpDial(t)
	p.send(http.StatusNoContent, protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"}, protocol.Message{Type: protocol.TypeSubscribe, Topic: "hall"})
	p.next(protocol.TypeSubscribed, time.Second)
	p.next(protocol.TypeSubscribed, time.Second)
	stop := make(chan struct{})
	published := make(chan int64, 1)
	// sent is how many room updates the publisher has published so far.
	var sent atomic.Int64
	go func() { // publishes on, through the lost stream and the resume, one every 200 µs
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		var n int64
		defer func() { published <- n }()
		for {
			n++
			if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":`+itoa64(n)+`,"pad":"`+strings.Repeat("x", 2000)+`"}`)); err != nil {
				t.Error(err)
				return
			}
			sent.Store(n)
			if n%10 == 0 {
				f.srv.Publish(context.Background(), "hall", []byte(`{}`))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	publishedOn := func(what string) { // waits for 20 more updates
		from := sent.Load()
		waitFor(t, 5*time.Second, what, func() bool { return sent.Load() >= from+20 })
	}
	got := map[string][]int64{}
	read := func(n int) {
		for len(got["room"]) < n {
			var m protocol.Message
			select {
			case m = <-p.frames:
			case <-time.After(2 * time.Second):
				t.Fatal("no frame in 2 s")
			}
			if m.Type == protocol.TypeSubscribed && m.From > int64(len(got[m.Topic])+1) {
				t.Fatalf("the resume of %s starts at %d (head %d) with %d taken: the ring lost updates it should hold", m.Topic, m.From, m.Head, len(got[m.Topic]))
			}
			if m.Type == protocol.TypeUpdate {
				got[m.Topic] = append(got[m.Topic], m.Seq)
			}
		}
	}
	read(50)
	for range 3 {
		p.pause()
		publishedOn("updates while the client takes none") // the server writes on
		p.closeStream()                                    // whatever the server wrote and this client did not take is lost
		last := p.last()
		if !strings.Contains(last, "room=") || !strings.Contains(last, "hall=") {
			t.Fatalf("last event id %q", last)
		}
		publishedOn("updates with no stream")
		p.stream(last)
		read(len(got["room"]) + 100)
	}
	close(stop)
	n := <-published
	if !poll.Until(5*time.Second, func() bool {
		for {
			select {
			case m := <-p.frames:
				if m.Type == protocol.TypeUpdate {
					got[m.Topic] = append(got[m.Topic], m.Seq)
				}
			default:
				return int64(len(got["room"])) >= n
			}
		}
	}) {
		r := got["room"]
		var gaps []string
		for i := 1; i < len(r); i++ {
			if r[i] != r[i-1]+1 {
				gaps = append(gaps, fmt.Sprintf("%d->%d@%d", r[i-1], r[i], i))
			}
		}
		t.Fatalf("timed out after 5 s waiting for every update: room has %d of %d, gaps %v", len(r), n, gaps)
	}
	for topic, seqs := range got {
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("%s: update %d has seq %d (lost or repeated): %v", topic, i, s, seqs[max(0, i-3):min(len(seqs), i+3)])
			}
		}
	}
	if int64(len(got["room"])) != n {
		t.Fatalf("room: %d updates, %d published", len(got["room"]), n)
	}
}

// A session refused at the door answers what a WebSocket would be closed
// with, readable by a fetch: status, Retry-After and the close.
func TestHTTPSessionRefusalsAreClassified(t *testing.T) {
	f := newFixture(t, &Options{MaxConnsPerIP: 1}, DemoOptions{RestartDowntime: 300 * time.Millisecond})
	f.newSession(t, `{}`)
	a := f.post(t, "/session", "application/json", `{}`)
	if a.status != http.StatusServiceUnavailable || a.retryAfter == "" || a.Close == nil || a.Close.Code != protocol.CloseTryAgainLater ||
		!strings.HasPrefix(a.Close.Reason, "retry-after-ms=") || a.RetryMs <= 0 {
		t.Fatalf("over MaxConnsPerIP: %+v", a)
	}

	g := newFixture(t, &Options{AdmitRate: 1, AdmitBurst: 1})
	g.newSession(t, `{}`)
	if a := g.post(t, "/session", "application/json", `{}`); a.status != http.StatusTooManyRequests || a.retryAfter == "" || a.Close.Code != protocol.CloseTryAgainLater {
		t.Fatalf("over the handshake ceiling: %+v", a)
	}

	h := newFixture(t, &Options{}, DemoOptions{OverloadRetryAfter: 3 * time.Second})
	h.set("overload", true)
	if a := h.post(t, "/session", "application/json", `{}`); a.status != http.StatusServiceUnavailable || a.retryAfter != "3" ||
		a.Close.Reason != "retry-after-ms=3000" {
		t.Fatalf("overload: %+v", a)
	}
	h.set("overload", false)
	h.newSession(t, `{}`)
	if st := h.srv.Stats(); st.Open != 1 || st.Limits.Overloaded != 1 {
		t.Fatalf("stats %+v", st.Limits)
	}
}

func TestHTTPSessionAuth(t *testing.T) {
	var ahead atomic.Int64 // the server's clock runs this far ahead of the wall clock
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true,
		Now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }}, DemoOptions{ShortTicketLife: time.Millisecond})
	if a := f.post(t, "/session", "application/json", `{}`); a.status != http.StatusForbidden || a.Close == nil ||
		a.Close.Code != protocol.CloseForbidden || a.Close.Reason != "auth required" || a.Session != "" {
		t.Fatalf("no ticket: %+v", a)
	}
	if a := f.post(t, "/session", "application/json", `{"token":"forged.ticket"}`); a.status != http.StatusForbidden || a.Close.Code != protocol.CloseForbidden {
		t.Fatalf("bad ticket: %+v", a)
	}
	f.set("shortTokens", true)
	old, _ := f.token(t, "page-2")
	ahead.Add(int64(5 * time.Millisecond)) // past the ticket's 1 ms life, on the server's clock
	if a := f.post(t, "/session", "application/json", `{"token":"`+old+`"}`); a.status != http.StatusUnauthorized || a.Close.Code != protocol.CloseTokenExpired {
		t.Fatalf("expired ticket: %+v", a)
	}
	f.set("shortTokens", false)
	tok, exp := f.token(t, "page-1")
	p := &httpPeer{t: t, f: f, session: f.newSession(t, `{"token":"`+tok+`"}`), frames: make(chan protocol.Message, 64), events: make(chan sseEvent, 64), closed: make(chan closeInfo, 4)}
	p.stream("")
	t.Cleanup(p.closeStream)
	if a := p.next(protocol.TypeAuthenticated, time.Second); a.ExpiresAt != exp {
		t.Fatalf("authenticated %+v", a)
	}
	if st := f.srv.Stats(); st.Open != 1 {
		t.Fatalf("open %d: refused sessions must not stay", st.Open)
	}
	// Revoke reaches the session like a WebSocket: a close event.
	f.set("revoke", "page-1")
	if ci := p.closeEvent(time.Second); ci.Code != protocol.CloseForbidden {
		t.Fatalf("revoked: %+v", ci)
	}
}

// Freeze holds stream writes and POSTs (the stream stays open); Restart
// closes a session with 1012 and its slot and refuses new ones; Flapping
// closes each soon after it is made.
func TestHTTPTransportSwitches(t *testing.T) {
	f := newFixture(t, &Options{SweepGrace: 5 * time.Second}, DemoOptions{RestartDowntime: 400 * time.Millisecond, FlapAfter: 150 * time.Millisecond})
	p := f.httpDial(t)
	p.next(protocol.TypePing, time.Second)
	f.set("freeze", true)
	time.Sleep(50 * time.Millisecond) // real time: frames already on the wire may still land
	for len(p.frames) > 0 {
		<-p.frames
	}
	sent := make(chan int, 1)
	go func() {
		a := f.post(t, "/send?session="+p.session, "application/json", string(protocol.Encode(protocol.Message{Type: protocol.TypeProbe, ID: 3})))
		sent <- a.status
	}()
	p.silentFor(400 * time.Millisecond)
	select {
	case code := <-sent:
		t.Fatalf("a POST went through a freeze: %d", code)
	default:
	}
	// A session made during the freeze completes (its handshake), and its
	// stream opens, silent.
	q := f.httpDial(t)
	q.silentFor(200 * time.Millisecond)
	f.set("freeze", false)
	if code := <-sent; code != http.StatusNoContent {
		t.Fatalf("held POST answered %d", code)
	}
	if a := p.next(protocol.TypeProbeAck, time.Second); a.ID != 3 {
		t.Fatalf("probe_ack %+v", a)
	}
	q.next(protocol.TypeWelcome, time.Second)

	f.set("restart", true)
	for _, x := range []*httpPeer{p, q} {
		if ci := x.closeEvent(time.Second); ci.Code != protocol.CloseServiceRestart || !strings.HasPrefix(ci.Reason, "retry-after-ms=") {
			t.Fatalf("restart: %+v", ci)
		}
	}
	if a := f.post(t, "/session", "application/json", `{}`); a.status != http.StatusServiceUnavailable || a.Close.Code != protocol.CloseTryAgainLater || a.retryAfter == "" {
		t.Fatalf("during restart: %+v", a)
	}
	waitFor(t, 2*time.Second, "restart over", func() bool { return !f.demo.Faults()["restart"] })
	if a := f.post(t, "/send?session="+p.session, "application/json", `{"type":"probe","id":1}`); a.status != http.StatusNotFound || a.Close.Code != closeUnknownSession {
		t.Fatalf("send to a closed session: %+v", a)
	}

	f.set("flapping", true)
	start := time.Now()
	r := f.httpDial(t)
	if ci := r.closeEvent(2 * time.Second); ci.Code != protocol.CloseFlapping {
		t.Fatalf("flapping: %+v", ci)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > time.Second {
		t.Fatalf("flapped after %v", d)
	}
}

// A drain closes sessions with 1001 and a slot, as it does WebSockets.
func TestHTTPDrainClosesSessionsWithASlot(t *testing.T) {
	f := newFixture(t, &Options{DrainWindow: 200 * time.Millisecond})
	p := f.httpDial(t)
	p.next(protocol.TypeWelcome, time.Second)
	go f.srv.Drain(context.Background(), true)
	if ci := p.closeEvent(2 * time.Second); ci.Code != protocol.CloseGoingAway || !strings.HasPrefix(ci.Reason, "retry-after-ms=") {
		t.Fatalf("drain: %+v", ci)
	}
}

// A session with no stream is dropped after two ping intervals and the
// grace; one whose stream comes back in time stays.
func TestHTTPSessionsExpireWithoutAStream(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: 100 * time.Millisecond, SweepGrace: 200 * time.Millisecond})
	id := f.newSession(t, `{}`)
	start := time.Now()
	waitFor(t, 2*time.Second, "the session dropped", func() bool { return f.srv.Stats().Open == 0 })
	if d := time.Since(start); d < 350*time.Millisecond {
		t.Fatalf("dropped after %v: it lives 400ms without a stream", d)
	}
	if a := f.post(t, "/send?session="+id, "application/json", `{"type":"probe","id":1}`); a.status != http.StatusNotFound {
		t.Fatalf("send to an expired session: %+v", a)
	}
	if st := f.srv.Stats(); st.Limits.SweepClosed != 1 {
		t.Fatalf("sweepClosed %d", st.Limits.SweepClosed)
	}

	p := f.httpDial(t)
	p.next(protocol.TypeWelcome, time.Second)
	p.closeStream()
	serverTimersRun(250 * time.Millisecond) // detached, for less than the 400 ms it may be
	p.stream(p.last())
	p.next(protocol.TypePing, time.Second)
	serverTimersRun(600 * time.Millisecond) // attached: it stays
	if st := f.srv.Stats(); st.Open != 1 {
		t.Fatalf("open %d", st.Open)
	}
	p.closeStream()
	waitFor(t, 2*time.Second, "the detached session dropped", func() bool { return f.srv.Stats().Open == 0 })
}

// The transport's bounds: sessions count against MaxConns with
// WebSockets, bodies and frames are bounded, unknown sessions and
// malformed requests get clear errors.
func TestHTTPTransportBounds(t *testing.T) {
	f := newFixture(t, &Options{MaxConns: 2})
	f.dial()
	p := f.httpDial(t)
	if a := f.post(t, "/session", "application/json", `{}`); a.status != http.StatusServiceUnavailable || a.Close.Code != protocol.CloseTryAgainLater {
		t.Fatalf("over MaxConns: %+v", a)
	}
	for _, c := range []struct {
		path, ctype, body string
		status            int
	}{
		{"/send?session=" + p.session, "text/plain", `{"type":"probe","id":1}`, http.StatusUnsupportedMediaType},
		{"/session", "application/x-www-form-urlencoded", `token=x`, http.StatusUnsupportedMediaType},
		{"/session", "application/json", `{"token":`, http.StatusBadRequest},
		{"/send?session=" + p.session, "application/json", ``, http.StatusBadRequest},
		{"/send?session=" + p.session, "application/json", `[{"type":"probe","id":1},`, http.StatusBadRequest},
		{"/send?session=AAAAAAAAAAAAAAAAAAAAAA", "application/json", `{"type":"probe","id":1}`, http.StatusNotFound},
		{"/send", "application/json", `{"type":"probe","id":1}`, http.StatusNotFound},
	} {
		if a := f.post(t, c.path, c.ctype, c.body); a.status != c.status {
			t.Fatalf("POST %s %s %q: %d %+v, want %d", c.path, c.ctype, c.body, a.status, a, c.status)
		}
	}
	resp, err := http.Get(f.base() + "/sse?session=AAAAAAAAAAAAAAAAAAAAAA")
	if err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, resp); a.status != http.StatusNotFound || a.Close.Code != closeUnknownSession {
		t.Fatalf("unknown stream: %+v", a)
	}
	resp.Body.Close()
	bad, _, cancel := p.open("feed=x")
	defer cancel()
	if bad.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad Last-Event-ID: %s", bad.Status)
	}
	bad.Body.Close()
	// A frame over MaxFrameBytes closes the session with 1009, as on a WebSocket.
	big := `[{"type":"probe","id":1},{"type":"request","id":2,"method":"echo","params":"` + strings.Repeat("x", protocol.MaxFrameBytes) + `"}]`
	if a := f.post(t, "/send?session="+p.session, "application/json", big); a.status != http.StatusRequestEntityTooLarge || a.Close.Code != protocol.CloseMessageTooBig {
		t.Fatalf("a big frame: %+v", a)
	}
	if ci := p.closeEvent(time.Second); ci.Code != protocol.CloseMessageTooBig {
		t.Fatalf("closed with %+v", ci)
	}
	// The close event goes out before the session is unregistered: its
	// slot is free once it is gone (the WebSocket's remains).
	waitFor(t, 2*time.Second, "the closed session gone", func() bool { return f.srv.Stats().Open == 1 })
	q := f.httpDial(t)
	huge := strings.Repeat(" ", maxSendBody+1)
	if a := f.post(t, "/send?session="+q.session, "application/json", huge); a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a huge body: %+v", a)
	}
	q.closeEvent(time.Second)
}

// The Origin rule applies: a cross-origin POST or stream is refused with
// the close a WebSocket gets (1008) unless OriginPatterns allow it, which
// gets the CORS headers and a preflight.
func TestHTTPTransportOrigins(t *testing.T) {
	f := newFixture(t, &Options{OriginPatterns: []string{"app.example"}})
	a := f.post(t, "/session", "application/json", `{}`, "Origin", "http://evil.example")
	if a.status != http.StatusForbidden || a.Close == nil || a.Close.Code != protocol.ClosePolicyViolation {
		t.Fatalf("foreign origin: %+v", a)
	}
	a = f.post(t, "/session", "application/json", `{}`, "Origin", "http://app.example")
	if a.status != http.StatusOK || a.header.Get("Access-Control-Allow-Origin") != "http://app.example" ||
		!strings.Contains(a.header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Fatalf("allowed origin: %+v %v", a, a.header)
	}
	u, _ := url.Parse(f.hs.URL)
	a = f.post(t, "/session", "application/json", `{}`, "Origin", "http://"+u.Host) // same origin
	if a.status != http.StatusOK {
		t.Fatalf("same origin: %+v", a)
	}
	req, _ := http.NewRequest(http.MethodOptions, f.base()+"/send", nil)
	req.Header.Set("Origin", "http://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Fatalf("preflight: %s %v", resp.Status, resp.Header)
	}
	req, _ = http.NewRequest(http.MethodGet, f.base()+"/sse?session="+a.Session, nil)
	req.Header.Set("Origin", "http://evil.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign EventSource: %s", resp.Status)
	}
	if got := getStatus(t, f.base()+"/probe", "evil.example"); got != http.StatusMisdirectedRequest {
		t.Fatalf("a foreign Host: %d", got)
	}
}

// A stream whose reader takes nothing is dropped once a write makes no
// progress within WriteTimeout; its session, left without a stream, is
// dropped after two ping intervals and the grace.
func TestHTTPAStalledStreamIsDroppedByTheWriteDeadline(t *testing.T) {
	f := newFixture(t, &Options{WriteTimeout: 300 * time.Millisecond, MaxQueuedBytes: 256 << 20,
		PingInterval: 100 * time.Millisecond, SweepGrace: 300 * time.Millisecond}, DemoOptions{NoFeed: true})
	id := f.newSession(t, `{}`)
	u, _ := url.Parse(f.hs.URL)
	nc, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(nc, "GET /ws/sse?session=%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, u.Host)
	f.post(t, "/send?session="+id, "application/json", `{"type":"subscribe","topic":"room"}`)
	data := []byte(`"` + strings.Repeat("x", 60<<10) + `"`)
	start := time.Now()
	if !poll.Until(10*time.Second, func() bool {
		if f.srv.Stats().Limits.Stalled != 0 {
			return true
		}
		for range 16 {
			if _, err := f.srv.Publish(context.Background(), "room", data); err != nil {
				t.Fatal(err)
			}
		}
		return false
	}) {
		t.Fatalf("the stream was never dropped (%v)", time.Since(start))
	}
	waitFor(t, 3*time.Second, "the session dropped", func() bool { return f.srv.Stats().Open == 0 })
	if st := f.srv.Stats(); st.Limits.SlowConsumer != 0 || st.Limits.SweepClosed != 1 {
		t.Fatalf("limits %+v: want the stream stalled and the session swept", st.Limits)
	}
}

// An HTTP session's frames cost no goroutine: the stream's handler writes
// what the send queue's writer parks. While Freeze holds every stream's
// handler with an update in hand and more queued, the server has no more
// goroutines than before (a flusher goroutine per session, waiting for its
// handler, was the cost before); once it lifts, every update arrives, in
// order.
func TestHTTPFramesWaitingForTheStreamCostNoGoroutine(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	const sessions, updates = 16, 5
	peers := make([]*httpPeer, sessions)
	for i := range peers {
		p := f.httpDial(t)
		p.next(protocol.TypeWelcome, time.Second)
		p.send(http.StatusNoContent, protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
		p.next(protocol.TypeSubscribed, time.Second)
		peers[i] = p
	}
	before := settledGoroutines(t) // the POSTs' server goroutines end
	f.set("freeze", true)
	for n := range updates {
		if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":`+strconv.Itoa(n)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	// every handler holds its first update at the gate
	if during := settledGoroutines(t); during-before >= sessions/2 {
		t.Fatalf("%d goroutines with %d sessions' updates held, %d before: a goroutine per session waits", during, sessions, before)
	}
	f.set("freeze", false)
	for i, p := range peers {
		for n := range updates {
			m := p.next(protocol.TypeUpdate, 2*time.Second)
			if string(m.Data) != `{"n":`+strconv.Itoa(n)+`}` {
				t.Fatalf("session %d, update %d: %s", i, n, m.Data)
			}
		}
	}
}

// rawStream opens session id's stream on a plain TCP connection (no
// client goroutine) and reads its head and events up to the welcome.
func rawStream(t *testing.T, f *fixture, id string) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, _ := url.Parse(f.hs.URL)
	nc, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	fmt.Fprintf(nc, "GET /ws/sse?session=%s HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\n\r\n", id, u.Host, f.hs.URL)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-store" ||
		h.Get("X-Accel-Buffering") != "no" || h.Get("Access-Control-Allow-Origin") != f.hs.URL || !resp.Close {
		t.Fatalf("stream head: %d %v (close %v)", resp.StatusCode, h, resp.Close)
	}
	readRawUntil(t, br, `"type":"welcome"`)
	return nc, br
}

// readRawUntil reads lines until one holds want.
func readRawUntil(t *testing.T, br *bufio.Reader, want string) {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if strings.Contains(line, want) {
			return
		}
	}
}

// An HTTP/1.1 stream keeps no handler: its connection is hijacked, the
// handler returns (net/http's goroutine, its background read, the request
// and its buffers go), and one goroutine per stream stays, reading the
// socket to notice the client leave. Before, a stream held two (the
// handler under net/http's serve loop and its background read). Events
// still arrive (written by the publisher's fan-out), a client that leaves
// is noticed at once (the stream detaches, its goroutine ends), and the
// head carries the stream's headers, CORS among them.
func TestHTTPStreamHoldsOneGoroutineAndNoHandler(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	const streams = 24
	ids := make([]string, streams)
	for i := range ids {
		ids[i] = f.newSession(t, `{}`)
	}
	http.DefaultClient.CloseIdleConnections()
	before := settledGoroutines(t) // the POSTs' server goroutines end
	conns := make([]net.Conn, streams)
	readers := make([]*bufio.Reader, streams)
	for i, id := range ids {
		conns[i], readers[i] = rawStream(t, f, id)
	}
	if during := settledGoroutines(t); during-before > streams+streams/4 {
		t.Fatalf("%d goroutines with %d streams open, %d before: more than one per stream", during, streams, before)
	}
	for i, id := range ids {
		f.post(t, "/send?session="+id, "application/json", `{"type":"subscribe","topic":"room"}`)
		readRawUntil(t, readers[i], `"type":"subscribed"`)
	}
	if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	for i := range readers {
		readRawUntil(t, readers[i], `{"n":1}`)
	}
	http.DefaultClient.CloseIdleConnections()
	for _, nc := range conns {
		nc.Close()
	}
	waitFor(t, 2*time.Second, "every stream detached", func() bool {
		for _, id := range ids {
			f.srv.mu.Lock()
			c := f.srv.sessions[id]
			f.srv.mu.Unlock()
			tr := c.tr.(*httpTransport)
			tr.mu.Lock()
			st := tr.stream
			tr.mu.Unlock()
			if st != nil {
				return false
			}
		}
		return true
	})
	waitFor(t, 2*time.Second, "the streams' goroutines ended", func() bool { return runtime.NumGoroutine() <= before+2 })
}

// Over HTTP/2 (TLS) the stream cannot be hijacked: it keeps the handler
// path, and works the same (events, the subscribe's answer, an update).
func TestHTTPStreamOverHTTP2KeepsTheHandlerPath(t *testing.T) {
	srv := mustNew(t, &Options{PingInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.EnableHTTP2 = true
	hs.StartTLS()
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	client := hs.Client()
	post := func(pathQuery, body string) *http.Response {
		t.Helper()
		resp, err := client.Post(hs.URL+pathQuery, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	var sess struct{ Session string }
	resp, err := client.Post(hs.URL+"/session", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/sse?session="+sess.Session, nil)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %s %d %v", resp.Proto, resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	readRawUntil(t, br, `"type":"welcome"`)
	if r := post("/send?session="+sess.Session, `{"type":"subscribe","topic":"room"}`); r.StatusCode != http.StatusNoContent {
		t.Fatalf("send: %d", r.StatusCode)
	}
	readRawUntil(t, br, `"type":"subscribed"`)
	if _, err := srv.Publish(context.Background(), "room", []byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	readRawUntil(t, br, `{"n":2}`)
}

// A hijacked stream whose client reads slowly gets every event, in order:
// what the socket does not take waits in the stream's backlog, the
// stream's goroutine writes it, and the send queue's writer goes on after
// it (nothing is lost, nothing stalls within WriteTimeout).
func TestHTTPStreamBacklogIsWrittenInOrder(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second, MaxQueuedBytes: 64 << 20}, DemoOptions{NoFeed: true})
	id := f.newSession(t, `{}`)
	u, _ := url.Parse(f.hs.URL)
	// A small receive buffer set before the connect (set after it, Linux
	// keeps the window it advertised and drops what overflows: the sender
	// then waits out retransmission backoffs, whatever the server does).
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10) })
		return nil
	}}
	nc, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "GET /ws/sse?session=%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, u.Host)
	br := bufio.NewReaderSize(nc, 1<<20)
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	readRawUntil(t, br, `"type":"welcome"`)
	f.post(t, "/send?session="+id, "application/json", `{"type":"subscribe","topic":"room"}`)
	readRawUntil(t, br, `"type":"subscribed"`)
	f.srv.mu.Lock()
	tr := f.srv.sessions[id].tr.(*httpTransport)
	f.srv.mu.Unlock()
	backlog := func() int {
		tr.mu.Lock()
		st := tr.stream
		tr.mu.Unlock()
		st.wmu.Lock()
		defer st.wmu.Unlock()
		return len(st.backlog)
	}
	// Publish, the client reading nothing, until the socket's buffers are
	// full and an event waits in the backlog; then a few more, queued
	// behind it.
	pad := strings.Repeat("x", 48<<10)
	updates := 0
	publish := func() {
		if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":`+strconv.Itoa(updates)+`,"pad":"`+pad+`"}`)); err != nil {
			t.Fatal(err)
		}
		updates++
	}
	poll.UntilEvery(time.Minute, time.Millisecond, func() bool {
		if backlog() > 0 {
			return true
		}
		if updates == 400 {
			t.Fatal("no backlog after 400 updates of 48 KiB")
		}
		publish()
		return false
	})
	for range 8 {
		publish()
	}
	for n := range updates {
		readRawUntil(t, br, `{"n":`+strconv.Itoa(n)+`,`)
	}
	if st := f.srv.Stats(); st.Limits.Stalled != 0 || st.Open != 1 {
		t.Fatalf("stalled %d, open %d: want the stream kept", st.Limits.Stalled, st.Open)
	}
}

// A client that leaves while Freeze holds an event for its stream is
// noticed during the freeze (the stream's goroutine polls the socket while
// it holds a backlog): the stream detaches, and the session waits for
// another, as the sweep's rule for HTTP sessions says.
func TestHTTPStreamLeftDuringAFreezeDetaches(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	id := f.newSession(t, `{}`)
	nc, br := rawStream(t, f, id)
	f.post(t, "/send?session="+id, "application/json", `{"type":"subscribe","topic":"room"}`)
	readRawUntil(t, br, `"type":"subscribed"`)
	f.srv.mu.Lock()
	tr := f.srv.sessions[id].tr.(*httpTransport)
	f.srv.mu.Unlock()
	attached := func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.stream != nil
	}
	f.set("freeze", true)
	if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	serverTimersRun(250 * time.Millisecond) // past one frozenPoll (200 ms): the frozen stream's read wakes to check the socket and keeps it
	if !attached() {
		t.Fatal("a frozen stream detached")
	}
	nc.Close()
	waitFor(t, 2*time.Second, "the stream detached during the freeze", func() bool { return !attached() })
	f.set("freeze", false)
	if st := f.srv.Stats(); st.Open != 1 || st.Limits.Stalled != 0 {
		t.Fatalf("open %d, stalled %d: the session waits for another stream", st.Open, st.Limits.Stalled)
	}
}
