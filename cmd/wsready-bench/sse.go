//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The HTTP transport's row (stage 8's fallback): the same wsready server
// config, the same number of subscribed clients, once over WebSocket and
// once over the HTTP transport (POST <mount>/session, GET <mount>/sse, the
// subscribe POSTed to <mount>/send; docs/http-transport.md), each leg on a
// fresh server: CPU per delivered frame and RSS per connection, SSE over
// WebSocket, and the sessions the server creates per second while the SSE
// clients connect. The clients child speaks SSE with -transport sse.

// The transports a clients child speaks.
const (
	transportWS  = "ws"
	transportSSE = "sse"
)

// Bounds of the event-stream reader (per connection).
const (
	// sseMaxLine bounds one line of the stream, its end excluded: a
	// server frame is one data: line, and the demo's are well under
	// 1 KB; 128 KiB leaves room for any frame of protocol.MaxFrameBytes
	// (64 KiB) the server could relay.
	sseMaxLine = 128 << 10
	// sseMaxEvent bounds an event's data, its data: lines joined.
	sseMaxEvent = 1 << 20
	// sseMaxLinesPerEvent bounds the lines read for one event (comments,
	// blank lines and fields included), so a stream of lines that never
	// make an event still ends the loop.
	sseMaxLinesPerEvent = 4096
	// sseFirstBuf is the reader's first buffer; it grows to sseMaxLine
	// only for a line that needs it.
	sseFirstBuf = 4 << 10
	// sseSmallBody bounds what the client reads of a session or send
	// answer (a session id and an interval, or nothing).
	sseSmallBody = 4 << 10
)

// Errors of the event-stream reader.
var (
	errLineTooLong   = fmt.Errorf("an event-stream line is over %d bytes", sseMaxLine)
	errEventTooLarge = fmt.Errorf("an event is over %d bytes of data or %d lines", sseMaxEvent, sseMaxLinesPerEvent)
)

// sseEvent is one dispatched event. Data is the reader's own buffer: it is
// valid until the next call of next.
type sseEvent struct {
	Type string // the event: field ("" for a message; wsready says "close" for its last)
	ID   string // the last event ID as of this event (an id: field persists, as in an EventSource)
	Data []byte // the data: lines joined with \n
}

// sseReader reads a text/event-stream (the WHATWG rules: lines end with
// CR, LF or CRLF; "field: value" with one leading space dropped; a line
// starting with ':' is a comment; a blank line dispatches an event that
// has data), within the bounds above.
type sseReader struct {
	sc     *bufio.Scanner
	lastID string
	data   []byte
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	// The split function refuses a line over sseMaxLine itself; the
	// buffer's ceiling leaves room for the line's end (CRLF).
	sc.Buffer(make([]byte, sseFirstBuf), sseMaxLine+2)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc}
}

// scanSSELines splits at CR, LF or CRLF (a CR at the end of what has been
// read waits for the next byte, which may be its LF). A line over
// sseMaxLine is errLineTooLong, as soon as that many bytes have come
// without an end.
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i > sseMaxLine, i < 0 && len(data) > sseMaxLine:
		return 0, nil, errLineTooLong
	case i < 0:
		if atEOF && len(data) > 0 {
			return len(data), data, nil // the last line, unended: next reports the event unfinished
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	default:
		return 0, nil, nil // a CR last: an LF may follow
	}
}

// next returns the next event with data (an event without data, such as
// the stream's retry:, is not dispatched, as an EventSource does not).
// At the stream's end it returns io.EOF, or io.ErrUnexpectedEOF when the
// stream ends inside an event (which is dropped).
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	r.data = r.data[:0]
	hasData, partial := false, false
	for lines := 0; r.sc.Scan(); lines++ {
		if lines >= sseMaxLinesPerEvent {
			return sseEvent{}, errEventTooLarge
		}
		line := r.sc.Bytes()
		if len(line) == 0 {
			if hasData {
				ev.ID, ev.Data = r.lastID, r.data
				return ev, nil
			}
			ev.Type, partial = "", false
			continue
		}
		partial = true
		if line[0] == ':' {
			continue // a comment
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "data":
			if len(r.data)+1+len(value) > sseMaxEvent {
				return sseEvent{}, errEventTooLarge
			}
			if hasData {
				r.data = append(r.data, '\n')
			}
			r.data, hasData = append(r.data, value...), true
		case "id":
			if bytes.IndexByte(value, 0) < 0 { // an id with NUL is ignored
				r.lastID = string(value)
			}
		case "event":
			ev.Type = string(value)
		}
		// retry: and other fields change nothing this reader keeps.
	}
	if err := r.sc.Err(); err != nil {
		return sseEvent{}, fmt.Errorf("failed to read the event stream: %w", err)
	}
	if partial || hasData {
		return sseEvent{}, io.ErrUnexpectedEOF
	}
	return sseEvent{}, io.EOF
}

// sseTiming is when a clients child's sessions were made: the first
// session POST's start and the last session's 200, in Unix nanoseconds
// (0: none yet).
type sseTiming struct{ first, last atomic.Int64 }

func (t *sseTiming) started(now time.Time) { t.first.CompareAndSwap(0, now.UnixNano()) }

func (t *sseTiming) made(now time.Time) {
	n := now.UnixNano()
	for {
		l := t.last.Load()
		if n <= l || t.last.CompareAndSwap(l, n) {
			return
		}
	}
}

// sseClientStats is what an SSE clients child answers at /stats: the
// WebSocket child's counts (Dialed: sessions made; Connected: streams
// open; Frames and Msgs: events with data, one frame each) and when its
// sessions were made.
type sseClientStats struct {
	clientStats
	FirstSessionNs int64 `json:"firstSessionNs"` // the first session POST's start, Unix ns
	LastSessionNs  int64 `json:"lastSessionNs"`  // the last session's 200, Unix ns
}

// sseSubscribe is the frame the clients POST: the feed every bench server
// publishes.
const sseSubscribe = `{"type":"subscribe","topic":"feed"}`

// sseSilence is how long a stream may say nothing before the client
// counts it lost: ten ping intervals, at least sseMinSilence (the server
// pings every interval on the stream; the margin is for a loaded
// machine).
func sseSilence(interval time.Duration) time.Duration { return max(10*interval, sseMinSilence) }

// sseMinSilence is sseSilence's floor: 10 s (a variable so a test can
// wait less).
var sseMinSilence = 10 * time.Second

// runSSEClients is a clients child with -transport sse: n sessions on the
// HTTP transport under base (the server's mount, http://127.x.y.z:port/ws),
// each opening its stream and (with subscribe) POSTing the subscribe,
// conc at a time, from the source addresses given in turn. It prints
// "stats ADDR" first and runs until SIGINT or SIGTERM. Once every
// connect is over it closes its idle POST connections: in the window each
// client holds its stream's connection alone, as it sends nothing.
//
// With poll, each client long-polls (pollConn) in place of its stream: it
// keeps its connection between polls (as a browser's keep-alive does), so
// the idle connections are kept, up to one per client.
func runSSEClients(base string, n, conc int, src string, subscribe, poll bool) error {
	if !strings.HasPrefix(base, "http://127.") {
		return usagef("clients: with -transport sse, -url must be the http:// mount on 127.0.0.0/8 (http://127.0.0.1:PORT/ws), not %q", base)
	}
	idle := conc
	if poll {
		idle = n
	}
	var trs []*http.Transport
	var hcs []*http.Client
	for _, s := range strings.Split(src, ",") {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil || ip.To4() == nil || ip.To4()[0] != 127 {
			return usagef("clients: -src takes addresses in 127.0.0.0/8, not %q", s)
		}
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 30 * time.Second}
		tr := &http.Transport{DialContext: d.DialContext, DisableCompression: true,
			// POSTs reuse the connections the connects leave idle (as a
			// browser's keep-alive does) rather than spend a port each.
			MaxIdleConnsPerHost: idle, ResponseHeaderTimeout: time.Minute, IdleConnTimeout: 90 * time.Second}
		trs = append(trs, tr)
		hcs = append(hcs, &http.Client{Transport: tr}) // no Timeout: a stream is one long response
	}
	defer func() {
		for _, tr := range trs {
			tr.CloseIdleConnections()
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var st counters
	var tm sseTiming
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("failed to listen for /stats: %w", err)
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sseClientStats{clientStats: st.snapshot(), FirstSessionNs: tm.first.Load(), LastSessionNs: tm.last.Load()})
	})}
	go hs.Serve(ln)
	defer hs.Close()
	fmt.Println("stats", ln.Addr().String())
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Add(1)
		go func(hc *http.Client) {
			defer wg.Done()
			if poll {
				pollConn(ctx, base, hc, subscribe, &st, &tm, func() { <-sem })
				return
			}
			sseConn(ctx, base, hc, subscribe, &st, &tm, func() { <-sem })
		}(hcs[i%len(hcs)])
	}
	// Every slot taken back: every connect is over.
	for range conc {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
	}
	for _, tr := range trs {
		if !poll {
			tr.CloseIdleConnections()
		}
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// sseConn is one client of the HTTP transport until ctx ends or its
// stream does; dialled is called once its connect is over (the session,
// the stream's headers and the subscribe's answer), whatever the outcome.
// A refusal or a failed connect counts as failed, a stream lost afterwards
// (ended, closed by the server, or silent past sseSilence) as dropped.
func sseConn(ctx context.Context, base string, hc *http.Client, subscribe bool, st *counters, tm *sseTiming, dialled func()) {
	once := sync.OnceFunc(dialled)
	defer once()
	body, err := sseConnect(ctx, base, hc, subscribe, st, tm, once)
	if err != nil {
		if ctx.Err() == nil {
			st.failed.Add(1)
		}
		return
	}
	defer body.Close()
	err = body.read(st)
	switch {
	case errors.Is(err, errRefused):
		st.failed.Add(1)
	case ctx.Err() == nil:
		st.dropped.Add(1)
	}
}

// sseBody is an open stream: its body, its reader, and the watchdog that
// cancels it after sseSilence without an event.
type sseBody struct {
	resp      *http.Response
	cancel    context.CancelFunc
	watch     *time.Timer
	silence   time.Duration
	rd        *sseReader
	subscribe bool
}

func (b *sseBody) Close() {
	b.watch.Stop()
	b.cancel()
	b.resp.Body.Close()
}

// sseConnect makes a session, opens its stream and POSTs the subscribe;
// connected is called once all three are over.
func sseConnect(ctx context.Context, base string, hc *http.Client, subscribe bool, st *counters, tm *sseTiming, connected func()) (*sseBody, error) {
	tm.started(time.Now())
	var sess struct {
		Session    string `json:"session"`
		IntervalMs int64  `json:"intervalMs"`
	}
	if err := ssePost(ctx, hc, base+"/session", `{}`, http.StatusOK, &sess); err != nil {
		return nil, err
	}
	tm.made(time.Now())
	if sess.Session == "" || sess.IntervalMs <= 0 || sess.IntervalMs > time.Hour.Milliseconds() {
		return nil, fmt.Errorf("failed to make a session: the answer has no session or an interval of %d ms", sess.IntervalMs)
	}
	st.dialed.Add(1)
	q := "?session=" + url.QueryEscape(sess.Session)
	sctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, base+"/sse"+q, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("failed to open the stream: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("failed to open the stream: %w", err)
	}
	silence := sseSilence(time.Duration(sess.IntervalMs) * time.Millisecond)
	b := &sseBody{resp: resp, cancel: cancel, watch: time.AfterFunc(silence, cancel), silence: silence, rd: newSSEReader(resp.Body), subscribe: subscribe}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		b.Close()
		return nil, fmt.Errorf("failed to open the stream: %s, %q: %w", resp.Status, ct, errRefused)
	}
	st.connected.Add(1)
	if subscribe {
		pctx, pcancel := context.WithTimeout(ctx, time.Minute)
		err := ssePost(pctx, hc, base+"/send"+q, sseSubscribe, http.StatusNoContent, nil)
		pcancel()
		if err != nil {
			b.Close()
			return nil, err
		}
	}
	connected()
	return b, nil
}

// ssePost POSTs a JSON body and wants the status want; the answer (at
// most sseSmallBody bytes) is decoded into v unless v is nil.
func ssePost(ctx context.Context, hc *http.Client, u, body string, want int, v any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("failed to POST %s: %w", lastSegment(u), err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("failed to POST %s: %w", lastSegment(u), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, sseSmallBody))
	if err != nil {
		return fmt.Errorf("failed to read the answer to POST %s: %w", lastSegment(u), err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("failed to POST %s: %s: %w", lastSegment(u), resp.Status, errRefused)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("failed to decode the answer to POST %s: %w", lastSegment(u), err)
		}
	}
	return nil
}

// lastSegment is a URL's last segment without its query (the session id
// stays out of errors).
func lastSegment(u string) string {
	u, _, _ = strings.Cut(u, "?")
	return u[strings.LastIndexByte(u, '/')+1:]
}

// read counts the stream's events as wsreadyConn counts a WebSocket's
// messages (each event with data is one frame and one message) until it
// ends: an error (the stream ended, the watchdog cancelled it) or, for an
// event: close or a refused subscribe, errRefused before the subscribe
// was acknowledged.
func (b *sseBody) read(st *counters) error {
	subscribed := false
	for {
		ev, err := b.rd.next()
		if err != nil {
			return err
		}
		b.watch.Reset(b.silence)
		if ev.Type == "close" {
			if b.subscribe && !subscribed {
				return fmt.Errorf("failed to subscribe: the server closed the session: %w", errRefused)
			}
			return errors.New("the server closed the session")
		}
		st.frames.Add(1)
		st.msgs.Add(1)
		switch wsreadyType(ev.Data) {
		case "ping":
			st.pings.Add(1)
		case "update":
			st.updates.Add(1)
		case "subscribed":
			if !subscribed {
				subscribed = true
				st.subscribed.Add(1)
			}
		case "error", "unsubscribed":
			if b.subscribe && !subscribed {
				return fmt.Errorf("failed to subscribe: %w", errRefused)
			}
		}
	}
}

// startSSEFleet starts SSE clients children for n sessions under base, at
// most 9,000 each, from the source addresses startFleet would give
// srcBase.
func startSSEFleet(self, base string, n, srcBase int, subscribe bool) (fleet, error) {
	return startFleetWith(self, n, srcBase, "-transport", transportSSE, "-url", base, "-subscribe="+strconv.FormatBool(subscribe))
}

// sessionsPerSec reads an SSE fleet's sessions made and their span: the
// sessions over the time from the first POST to the last 200, across its
// children.
func (f fleet) sessionsPerSec() (float64, error) {
	var first, last, made int64
	for _, c := range f {
		var s sseClientStats
		if err := getJSON("http://"+c.addr+"/stats", &s); err != nil {
			return 0, err
		}
		made += s.Dialed
		if s.FirstSessionNs > 0 && (first == 0 || s.FirstSessionNs < first) {
			first = s.FirstSessionNs
		}
		last = max(last, s.LastSessionNs)
	}
	if made == 0 || last <= first {
		return 0, fmt.Errorf("no span to measure sessions over (%d made)", made)
	}
	return float64(made) / (float64(last-first) / 1e9), nil
}

// SSELeg is one transport's figures in one run of the row.
type SSELeg struct {
	Transport         string  `json:"transport"` // ws or sse
	BaseRSSBytes      float64 `json:"baseRssBytes"`
	ConnectSeconds    float64 `json:"connectSeconds"`    // every client connected and subscribed (200 at a time)
	CPUPerHandshakeUs float64 `json:"cpuPerHandshakeUs"` // the server's CPU until then, over the clients (the feed running)
	// SessionsPerSec (sse only) is the sessions made over the time from
	// the first session POST to the last 200, while the others open
	// streams and subscribe.
	SessionsPerSec       float64 `json:"sessionsPerSec,omitempty"`
	Steady               Window  `json:"steady"`
	RSSPerConnBytes      float64 `json:"rssPerConnBytes"` // (mean RSS through the window - base) / clients
	CPUPerFrameUs        float64 `json:"cpuPerFrameUs"`   // the window's CPU over the frames delivered (updates and pings)
	CPUPerUpdateUs       float64 `json:"cpuPerUpdateUs"`  // the window's CPU over the updates delivered
	UpdatesPerConnPerSec float64 `json:"updatesPerConnPerSec"`
	PingsPerConnPerSec   float64 `json:"pingsPerConnPerSec"`
	ServerCores          float64 `json:"serverCores"`
	Dropped              int64   `json:"dropped"`
	// Long polls only: the polls answered per connection per second in
	// the window, and the updates whose seq was not the last one's next.
	PollsPerConnPerSec float64 `json:"pollsPerConnPerSec,omitempty"`
	Misordered         int64   `json:"misordered,omitempty"`
}

// SSERun is one run of the row: both legs and the ratios SSE / WebSocket.
type SSERun struct {
	Trial            int     `json:"trial"`
	Conns            int     `json:"conns"`
	WS               SSELeg  `json:"ws"`
	SSE              SSELeg  `json:"sse"`
	CPUPerFrameRatio float64 `json:"cpuPerFrameRatio"`
	RSSPerConnRatio  float64 `json:"rssPerConnRatio"`
	// With -poll: the long-poll leg, and its ratios over WebSocket (CPU
	// per delivered update, RSS per connection), the stream's CPU per
	// delivered update beside them.
	Poll                  *SSELeg `json:"poll,omitempty"`
	PollCPUPerUpdateRatio float64 `json:"pollCpuPerUpdateRatio,omitempty"`
	PollRSSPerConnRatio   float64 `json:"pollRssPerConnRatio,omitempty"`
	SSECPUPerUpdateRatio  float64 `json:"sseCpuPerUpdateRatio,omitempty"`
	Error                 string  `json:"error,omitempty"` // why the run failed; its figures are then left out
}

// measureSSE is one run of the row: a WebSocket leg and an SSE leg of
// p.SSEConns subscribed clients, each on a fresh wsready server child
// (the config of the WebSocket rows: 1 s pings, the feed every 250 ms);
// the legs' order turns every trial, so the machine's drift falls on all.
// With p.SSEPoll a third leg long-polls (poll.go).
func (e *env) measureSSE(trial int) (SSERun, error) {
	r := SSERun{Trial: trial, Conns: e.p.SSEConns}
	all := []string{transportWS, transportSSE}
	if e.p.SSEPoll {
		all = append(all, transportPoll)
	}
	k := (trial - 1) % len(all)
	legs := append(all[k:len(all):len(all)], all[:k]...)
	for _, tr := range legs {
		l, err := e.measureLeg(tr)
		if err != nil {
			return r, fmt.Errorf("failed to measure the %s leg: %w", tr, err)
		}
		switch tr {
		case transportWS:
			r.WS = l
		case transportSSE:
			r.SSE = l
		default:
			r.Poll = &l
		}
	}
	if r.Poll != nil {
		r.PollCPUPerUpdateRatio = ratio(r.Poll.CPUPerUpdateUs, r.WS.CPUPerUpdateUs)
		r.PollRSSPerConnRatio = ratio(r.Poll.RSSPerConnBytes, r.WS.RSSPerConnBytes)
		r.SSECPUPerUpdateRatio = ratio(r.SSE.CPUPerUpdateUs, r.WS.CPUPerUpdateUs)
		if math.IsNaN(r.PollCPUPerUpdateRatio) || math.IsNaN(r.PollRSSPerConnRatio) || math.IsNaN(r.SSECPUPerUpdateRatio) {
			return r, fmt.Errorf("nothing to compare: WebSocket %.2f µs per update and %.0f bytes per connection", r.WS.CPUPerUpdateUs, r.WS.RSSPerConnBytes)
		}
		if r.Poll.Misordered > 0 {
			return r, fmt.Errorf("the long polls saw %d updates lost or repeated", r.Poll.Misordered)
		}
	}
	r.CPUPerFrameRatio = ratio(r.SSE.CPUPerFrameUs, r.WS.CPUPerFrameUs)
	r.RSSPerConnRatio = ratio(r.SSE.RSSPerConnBytes, r.WS.RSSPerConnBytes)
	if math.IsNaN(r.CPUPerFrameRatio) || math.IsNaN(r.RSSPerConnRatio) {
		// No frames or no memory to compare: nothing this row can say.
		r.CPUPerFrameRatio, r.RSSPerConnRatio = 0, 0
		return r, fmt.Errorf("nothing to compare: WebSocket %.2f µs per frame and %.0f bytes per connection", r.WS.CPUPerFrameUs, r.WS.RSSPerConnBytes)
	}
	return r, nil
}

// measureLeg runs one transport's leg: connect and subscribe, settle, one
// window with the feed running.
func (e *env) measureLeg(transport string) (SSELeg, error) {
	p := e.p
	l := SSELeg{Transport: transport}
	n := float64(p.SSEConns)
	srv, err := e.startServer("wsready", time.Second, true)
	if err != nil {
		return l, err
	}
	defer srv.stop()
	p0, err := srv.point()
	if err != nil {
		return l, err
	}
	l.BaseRSSBytes = p0.rss
	// Source addresses of their own (the other phases use 0 to 15).
	var f fleet
	switch transport {
	case transportSSE:
		f, err = startSSEFleet(e.self, srv.base+"/ws", p.SSEConns, 16, true)
	case transportPoll:
		f, err = startFleetWith(e.self, p.SSEConns, 24, "-transport", transportPoll, "-url", srv.base+"/ws", "-subscribe=true")
	default:
		f, err = startFleet(e.self, srv.ws, srv.proto, p.SSEConns, 20, true)
	}
	if err != nil {
		return l, err
	}
	defer f.stop()
	took, err := f.waitReady(p.SSEConns, true, readyWithin)
	if err != nil {
		return l, fmt.Errorf("subscribing %d: %w", p.SSEConns, err)
	}
	c1, err := srv.sampler.cpu()
	if err != nil {
		return l, err
	}
	l.ConnectSeconds = took.Seconds()
	l.CPUPerHandshakeUs = (c1 - p0.cpu).Seconds() * 1e6 / n
	if transport == transportSSE {
		if l.SessionsPerSec, err = f.sessionsPerSec(); err != nil {
			return l, err
		}
	}
	time.Sleep(settle)
	s0, err := f.stats()
	if err != nil {
		return l, err
	}
	w, err := srv.sampler.window(p.steady, p.sample, p.sample)
	if err != nil {
		return l, err
	}
	s1, err := f.stats()
	if err != nil {
		return l, err
	}
	l.Steady = w
	l.RSSPerConnBytes = (w.RSS.Mean - p0.rss) / n
	if msgs := float64(s1.Msgs - s0.Msgs); msgs > 0 {
		l.CPUPerFrameUs = w.CPUSeconds * 1e6 / msgs
	}
	if u := float64(s1.Updates - s0.Updates); u > 0 {
		l.CPUPerUpdateUs = w.CPUSeconds * 1e6 / u
	}
	l.PollsPerConnPerSec = float64(s1.Polls-s0.Polls) / n / w.Seconds
	l.Misordered = s1.Misordered
	l.UpdatesPerConnPerSec = float64(s1.Updates-s0.Updates) / n / w.Seconds
	l.PingsPerConnPerSec = float64(s1.Pings-s0.Pings) / n / w.Seconds
	l.ServerCores = w.CPUSeconds / w.Seconds
	l.Dropped = s1.Dropped
	return l, nil
}

// finish fills the run-by-run ratios, the medians and the verdicts from
// Runs (a failed run is shown and left out).
func (s *SSEFigures) finish() {
	s.CPUPerFrameRatio, s.RSSPerConnRatio, s.HandshakesPerSec = nil, nil, nil
	s.PollCPUPerUpdateRatio, s.PollRSSPerConnRatio, s.SSECPUPerUpdateRatio = nil, nil, nil
	for _, x := range s.Runs {
		if x.Error == "" && x.Poll != nil {
			s.PollCPUPerUpdateRatio = append(s.PollCPUPerUpdateRatio, x.PollCPUPerUpdateRatio)
			s.PollRSSPerConnRatio = append(s.PollRSSPerConnRatio, x.PollRSSPerConnRatio)
			s.SSECPUPerUpdateRatio = append(s.SSECPUPerUpdateRatio, x.SSECPUPerUpdateRatio)
		}
		if x.Error == "" {
			s.CPUPerFrameRatio = append(s.CPUPerFrameRatio, x.CPUPerFrameRatio)
			s.RSSPerConnRatio = append(s.RSSPerConnRatio, x.RSSPerConnRatio)
			s.HandshakesPerSec = append(s.HandshakesPerSec, math.Round(x.SSE.SessionsPerSec))
		}
	}
	if len(s.Runs) > 0 {
		s.NotMeasured = ""
		if len(s.CPUPerFrameRatio) == 0 {
			s.NotMeasured = "not measured: every run failed"
		}
	}
	s.MedianCPUPerFrameRatio = finite(median(s.CPUPerFrameRatio))
	s.MedianRSSPerConnRatio = finite(median(s.RSSPerConnRatio))
	s.MedianHandshakesPerSec = finite(median(s.HandshakesPerSec))
	s.MedianPollCPUPerUpdateRatio = finite(median(s.PollCPUPerUpdateRatio))
	s.MedianPollRSSPerConnRatio = finite(median(s.PollRSSPerConnRatio))
	s.MedianSSECPUPerUpdateRatio = finite(median(s.SSECPUPerUpdateRatio))
	s.VerdictCPU = verdictAtMost(median(s.CPUPerFrameRatio), s.GoalCPUPerFrameRatio, 0)
	s.VerdictRSS = verdictAtMost(median(s.RSSPerConnRatio), s.GoalRSSPerConnRatio, 0)
}

// markdown is the row's section of the report.
func (s SSEFigures) markdown() string {
	var b strings.Builder
	b.WriteString("## The HTTP transport (SSE)\n\n")
	if s.NotMeasured != "" {
		b.WriteString("| figure | goal | result |\n|---|---|---|\n")
		fmt.Fprintf(&b, "| CPU per delivered frame, SSE / WebSocket on the same wsready server | <= %.1f | %s |\n", s.GoalCPUPerFrameRatio, s.NotMeasured)
		fmt.Fprintf(&b, "| RSS per connection, SSE / WebSocket | <= %.1f | %s |\n", s.GoalRSSPerConnRatio, s.NotMeasured)
		fmt.Fprintf(&b, "| handshakes per second over HTTP | shown | %s |\n", s.NotMeasured)
		for _, x := range s.Runs {
			if x.Error != "" {
				fmt.Fprintf(&b, "\nRun %d failed: %s\n", x.Trial, x.Error)
			}
		}
		return b.String()
	}
	fmt.Fprintf(&b, "The wsready server child of the WebSocket rows (1 s pings, the feed every 250 ms), twice per run, fresh each time: %s clients subscribed to the feed over WebSocket, and %s over the HTTP transport (each: `POST /ws/session`, `GET /ws/sse?session=` read line by line, the subscribe POSTed to `/ws/send`; its idle POST connections closed once every client is in, so in the window each holds its stream alone). 200 connect at a time; then a %s window as in the rows above. A frame is a WebSocket message or an event with data (updates and pings). The legs' order turns every run. Sessions per second: the sessions made over the time from the first session POST to the last 200, while the others open their streams and subscribe.\n\n",
		thousands(s.Conns), thousands(s.Conns), secs(s.SteadySeconds))
	b.WriteString("| figure | goal |")
	for _, x := range s.Runs {
		fmt.Fprintf(&b, " run %d |", x.Trial)
	}
	b.WriteString(" median | |\n|---|---|" + strings.Repeat("---|", len(s.Runs)) + "---|---|\n")
	row := func(label, goal string, get func(SSERun) string, med *float64, verdict string) {
		fmt.Fprintf(&b, "| %s | %s |", label, goal)
		for _, x := range s.Runs {
			if x.Error != "" {
				b.WriteString(" failed |")
				continue
			}
			fmt.Fprintf(&b, " %s |", get(x))
		}
		m := "n/a"
		if med != nil {
			m = ratioText(*med)
			if goal == "shown" {
				m = fmt.Sprintf("%.0f", *med)
			}
		}
		fmt.Fprintf(&b, " **%s** | %s |\n", m, verdict)
	}
	row("CPU per delivered frame, SSE / WebSocket on the same wsready server", fmt.Sprintf("<= %.1f", s.GoalCPUPerFrameRatio), func(x SSERun) string {
		return fmt.Sprintf("%s (%s / %s)", ratioText(x.CPUPerFrameRatio), num(x.SSE.CPUPerFrameUs, "µs"), num(x.WS.CPUPerFrameUs, "µs"))
	}, s.MedianCPUPerFrameRatio, s.VerdictCPU)
	row("RSS per connection, SSE / WebSocket", fmt.Sprintf("<= %.1f", s.GoalRSSPerConnRatio), func(x SSERun) string {
		return fmt.Sprintf("%s (%s / %s)", ratioText(x.RSSPerConnRatio), num(x.SSE.RSSPerConnBytes/1e3, "KB"), num(x.WS.RSSPerConnBytes/1e3, "KB"))
	}, s.MedianRSSPerConnRatio, s.VerdictRSS)
	row("handshakes per second over HTTP (sessions made)", "shown", func(x SSERun) string {
		return fmt.Sprintf("%.0f", x.SSE.SessionsPerSec)
	}, s.MedianHandshakesPerSec, "")
	line := func(label string, get func(SSELeg) string) {
		fmt.Fprintf(&b, "| %s | |", label)
		for _, x := range s.Runs {
			if x.Error != "" {
				b.WriteString(" failed |")
				continue
			}
			fmt.Fprintf(&b, " %s / %s |", get(x.SSE), get(x.WS))
		}
		b.WriteString(" | |\n")
	}
	line("SSE / WebSocket: time to connect and subscribe all", func(l SSELeg) string { return num(l.ConnectSeconds, "s") })
	line("SSE / WebSocket: CPU per handshake (connect + subscribe, the feed running)", func(l SSELeg) string { return num(l.CPUPerHandshakeUs, "µs") })
	line("SSE / WebSocket: updates and pings per connection per second", func(l SSELeg) string {
		return fmt.Sprintf("%.2f + %.2f", l.UpdatesPerConnPerSec, l.PingsPerConnPerSec)
	})
	line("SSE / WebSocket: server CPU through the window", func(l SSELeg) string { return num(l.ServerCores, "cores") })
	line("SSE / WebSocket: RSS before the clients, mean through the window", func(l SSELeg) string {
		return fmt.Sprintf("%.0f, %.0f MB", l.BaseRSSBytes/1e6, l.Steady.RSS.Mean/1e6)
	})
	line("SSE / WebSocket: connections dropped", func(l SSELeg) string { return strconv.FormatInt(l.Dropped, 10) })
	if s.PollCPUPerUpdateRatio != nil {
		s.pollMarkdown(&b)
	}
	for _, x := range s.Runs {
		if x.Error != "" {
			fmt.Fprintf(&b, "\nRun %d failed: %s\n", x.Trial, x.Error)
		}
	}
	return b.String()
}

// sseTrial runs the row once and logs a failure; the run is kept either
// way (a failed one with its error).
func (e *env) sseTrial(trial, trials int) (SSERun, error) {
	logf("trial %d/%d: the HTTP transport beside WebSocket on wsready, %d connections each", trial, trials, e.p.SSEConns)
	r, err := e.measureSSE(trial)
	if err != nil {
		err = fmt.Errorf("failed to measure the SSE row (trial %d): %w", trial, err)
		logf("%v", err)
		r = SSERun{Trial: trial, Conns: e.p.SSEConns, Error: err.Error()}
	}
	return r, err
}

// runSSEOnly is the sse command: the HTTP transport's row alone, printed
// as its section of the report (and written as JSON with -json).
func runSSEOnly(args []string) error {
	fs := flag.NewFlagSet("sse", flag.ContinueOnError)
	conns := fs.Int("conns", 2000, "subscribed connections in each leg (1..9000)")
	steady := fs.Duration("steady", 10*time.Second, "the sampled window of each leg (1s..10m)")
	sample := fs.Duration("sample", 100*time.Millisecond, "how often RSS is sampled through a window (10ms..1s)")
	trials := fs.Int("trials", 3, "runs of the row (1..9)")
	poll := fs.Bool("poll", true, "also run a long-poll leg (GET sse?poll=1 in a loop) beside the stream")
	jsonOut := fs.String("json", "", "also write the row as JSON to this file (empty: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return usagef("sse: unexpected argument %q", fs.Arg(0))
	case *conns < 1 || *conns > maxClientsPerProcess:
		return usagef("sse: -conns must be 1..%d, not %d", maxClientsPerProcess, *conns)
	case *steady < time.Second || *steady > 10*time.Minute:
		return usagef("sse: -steady must be 1s..10m, not %v", *steady)
	case *sample < 10*time.Millisecond || *sample > time.Second:
		return usagef("sse: -sample must be 10ms..1s, not %v", *sample)
	case *trials < 1 || *trials > 9:
		return usagef("sse: -trials must be 1..9, not %d", *trials)
	}
	if err := checkDescriptors(*conns); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("failed to find this executable: %w", err)
	}
	e := &env{self: self, p: params{SSEConns: *conns, SteadySeconds: steady.Seconds(), SampleMs: float64(sample.Milliseconds()),
		Trials: *trials, SSEPoll: *poll, steady: *steady, sample: *sample}}
	figs, err := e.sseRow()
	fmt.Print(figs.markdown())
	if *jsonOut != "" {
		b, jerr := json.MarshalIndent(figs, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
		}
		if jerr != nil {
			return errors.Join(err, fmt.Errorf("failed to write -json: %w", jerr))
		}
	}
	return err
}

// sseRow runs the row p.Trials times and finishes its figures; the error
// joins the runs that failed.
func (e *env) sseRow() (SSEFigures, error) {
	figs := newSSEFigures(e.p)
	var failures []error
	for tr := range e.p.Trials {
		r, err := e.sseTrial(tr+1, e.p.Trials)
		if err != nil {
			failures = append(failures, err)
		}
		figs.Runs = append(figs.Runs, r)
	}
	figs.finish()
	return figs, errors.Join(failures...)
}

// newSSEFigures is the row before it runs: its goals, its size, and why
// it is not measured when -sse is 0.
func newSSEFigures(p params) SSEFigures {
	s := SSEFigures{Conns: p.SSEConns, SteadySeconds: p.SteadySeconds, GoalCPUPerFrameRatio: 1.5, GoalRSSPerConnRatio: 2.0}
	if p.SSEConns == 0 {
		s.NotMeasured = sseNotMeasured
	}
	return s
}
