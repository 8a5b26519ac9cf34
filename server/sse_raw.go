//go:build !js

package server

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"time"
)

// The event stream on a hijacked connection (HTTP/1.1 without TLS): what
// serveSSE does so that an idle stream keeps neither net/http's buffers
// (4 KiB read, 4 KiB write, 2 KiB chunking), nor its *http.Request, nor
// its handler goroutine and background reader. The handler writes the
// response head and the stream's preamble (retry:, what a resume replays)
// itself, then returns; after it, the send queue's writer writes each
// event straight to the socket from the goroutine that queued the frame
// (the feed's fan-out, the heartbeat, the reader), as on a WebSocket. What
// the socket does not take at once waits in the stream's backlog, and the
// stream's one goroutine (serve) writes it. That goroutine otherwise sits
// in a Read of the socket: it notices the client leave (EOF, reset), as
// net/http's background read did for the request's context.
//
// The body is ended by the connection's close (Connection: close, no
// Content-Length, no chunking): the connection carries this stream and
// nothing after it. HTTP/2 and TLS keep the handler path (sse.go), where
// Hijack is not available or the socket is not a plain one.

// rawDeadlinePast wakes the stream's goroutine from its Read: a read
// deadline in the past.
var rawDeadlinePast = time.Unix(1, 0)

// hijackStream takes the stream's connection from net/http, for a request
// over HTTP/1.x without TLS; false leaves w as it was (the handler path).
func (st *sseStream) hijackStream(w http.ResponseWriter, r *http.Request) bool {
	if r.ProtoMajor != 1 || r.TLS != nil {
		return false
	}
	nc, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// Bytes a client sent after its request (it should send none) are left
	// in net/http's reader, which goes with it: the stream only reads to
	// notice the client leave.
	nc.SetDeadline(time.Time{})
	st.nc = nc
	st.bind(nc)
	return true
}

// rawHead is the response head of a hijacked stream: 200, the stream's
// headers (what the handler set, CORS among them, and the event stream's
// own), and Connection: close, the body ending with the connection.
func rawHead(h http.Header) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	h = h.Clone()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Write(&b) // http.Header.Write drops CR and LF from the values
	b.WriteString("\r\n")
	return b.Bytes()
}

// writeHead writes the response head at once, whatever the switches (the
// client sees its stream open, as a frozen server still completes an
// upgrade), within WriteTimeout.
func (st *sseStream) writeHead(s *Server, head []byte) error {
	st.nc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	_, err := st.nc.Write(head)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		s.count(func(k *connCounters) { k.stalled++ })
	}
	return err
}

// writeBlocking is writeRaw on a hijacked stream during its preamble,
// from the handler: once Freeze lets it, within WriteTimeout (time frozen
// does not count).
func (st *sseStream) writeBlocking(s *Server, b []byte) error {
	if !waitGate(s.freezeGate(), st.end, nil) {
		return errStreamEnded
	}
	st.nc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	_, err := st.nc.Write(b)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		s.count(func(k *connCounters) { k.stalled++ })
	}
	return err
}

// send writes b (an event) to a live hijacked stream without blocking: to
// the socket at once if it takes it (never during a freeze), else into the
// backlog, which serve writes. frame is the server frame b carries (kept
// while b waits in the backlog: should the stream end first, the frame is
// written again to the next stream, as the handler path keeps a frame it
// failed to write parked); nil for the close event, the last: then a
// channel that is closed once b is on the socket (nil: it is already),
// and no event is sent after it. An error: the stream has failed (b is
// not written); the stream is ended.
func (st *sseStream) send(s *Server, b, frame []byte) (chan struct{}, error) {
	last := frame == nil
	st.wmu.Lock()
	if st.werr != nil {
		err := st.werr
		st.wmu.Unlock()
		return nil, err
	}
	if last {
		st.werr = errStreamEnded // set before the write: the backlog, if any, is still written
	}
	n := 0
	if len(st.backlog) == 0 && st.raw != nil && !s.freezeGate().isFrozen() {
		var err error
		n, err = st.tryWrite(b)
		if err != nil {
			st.werr = err
			st.wmu.Unlock()
			st.stop()
			return nil, err
		}
		if n == len(b) {
			st.wmu.Unlock()
			return nil, nil
		}
	}
	if len(st.backlog) > 0 && len(st.backlog)+len(b)-n > maxBacklog {
		st.werr = errBacklogFull
		st.wmu.Unlock()
		st.stop()
		return nil, errBacklogFull
	}
	st.backlog = append(st.backlog, b[n:]...)
	var ch chan struct{}
	if !last {
		st.pend = frame
	} else {
		if st.flushed == nil {
			st.flushed = make(chan struct{})
		}
		ch = st.flushed
	}
	st.wmu.Unlock()
	st.nc.SetReadDeadline(rawDeadlinePast) // wake serve
	return ch, nil
}

// parkWriter reports whether the stream has a backlog; if so, serve runs
// the send queue's writer on once it is written (or the stream ended: a
// backlog is only dropped by serve's end, which runs the writer on). lost:
// the stream ended with the writer's frame in its backlog before the
// writer got here; the writer writes it again (rewrite).
func (st *sseStream) parkWriter() (parked bool, lost []byte) {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if lost := st.lost; lost != nil {
		st.lost = nil
		return false, lost
	}
	if len(st.backlog) == 0 {
		return false, nil
	}
	st.parked = true
	return true, nil
}

func (st *sseStream) pending() bool {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	return len(st.backlog) > 0
}

// serve is a hijacked stream's one goroutine, from the end of its
// preamble until the stream ends: it reads the socket (to notice the
// client leave; what a client sends on its stream is dropped) and, when
// woken, writes the backlog. While Freeze holds a backlog it polls the
// socket every frozenPoll, so a client that leaves meanwhile is noticed.
// At its end it detaches the stream, and runs on the send queue's writer
// if it was parked on the backlog (the writer then parks its frames for
// the next stream).
func (st *sseStream) serve(s *Server, t *httpTransport) {
	var b [64]byte
	for {
		if st.pending() {
			if !s.freezeGate().isFrozen() {
				if !st.drain(s, t) {
					break
				}
				continue
			}
			st.nc.SetReadDeadline(time.Now().Add(frozenPoll))
		} else {
			st.nc.SetReadDeadline(time.Time{})
			if st.pending() {
				continue // sent before the deadline was cleared
			}
		}
		if _, err := st.nc.Read(b[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
	}
	st.wmu.Lock()
	if st.werr == nil {
		st.werr = errStreamEnded
	}
	// The frame whose event did not get onto the socket goes to the next
	// stream (the client discards an event cut short), by the writer: this
	// goroutine when the writer is parked on the backlog, else the writer
	// itself when it parks (parkWriter).
	var lost []byte
	if len(st.backlog) > 0 {
		lost = st.pend
	}
	st.backlog, st.pend = nil, nil
	resume := st.parked
	st.parked = false
	if !resume {
		st.lost, lost = lost, nil
	}
	st.wmu.Unlock()
	t.detach(st) // closes the socket
	if resume && (lost == nil || !t.rewrite(lost)) {
		t.c.writeInline()
	}
}

// drain writes the backlog within WriteTimeout; false: the stream failed
// (a write that made no progress within it is counted as stalled).
func (st *sseStream) drain(s *Server, t *httpTransport) bool {
	st.wmu.Lock()
	chunk := st.backlog // send only appends: chunk stays the backlog's head
	st.wmu.Unlock()
	st.nc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	n, err := st.nc.Write(chunk)
	if err == nil {
		st.nc.SetWriteDeadline(time.Time{}) // tryWrite must not meet it once it has passed
	}
	st.wmu.Lock()
	st.backlog = st.backlog[n:]
	var resume bool
	var flushed chan struct{}
	if err != nil {
		st.werr = err
	} else if len(st.backlog) == 0 {
		st.backlog, st.pend = nil, nil // a burst is over: let its array go
		resume, st.parked = st.parked, false
		flushed, st.flushed = st.flushed, nil
	}
	st.wmu.Unlock()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.count(func(k *connCounters) { k.stalled++ })
		}
		return false
	}
	if flushed != nil {
		close(flushed)
	}
	if resume {
		t.c.writeInline()
	}
	return true
}
