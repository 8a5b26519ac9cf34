//go:build !js

package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The HTTP transport's event stream (transport_http.go serves it): how a
// frame becomes an event (data: lines, an update's id: with the session's
// per-topic cursors, event: close), the stream's one writer, and the
// resume a Last-Event-ID asks for.

// closeEvent is the stream's last event: event: close, the code and the
// reason as JSON.
func closeEvent(code int, reason string) []byte {
	b, _ := json.Marshal(closeInfo{Code: code, Reason: reason}) // a struct of an int and a string: it cannot fail
	return append(append([]byte("event: close\ndata: "), b...), '\n', '\n')
}

// sseStream is one GET <mount>/sse. On the handler path (HTTP/2, TLS)
// its handler goroutine alone writes the response: the frames the
// session's writer parks (writeParked), and the close event close hands
// it (reqs). On a hijacked connection (sse_raw.go) the handler writes the
// preamble and returns; then the session's writer writes each event
// itself (send), and the stream's one goroutine (serve) writes what the
// socket did not take.
type sseStream struct {
	reqs    chan *writeReq // the close event
	end     chan struct{}  // closed to stop it (endOnce)
	endOnce sync.Once
	exited  chan struct{} // closed once its handler (or serve) will write no more
	w       http.ResponseWriter
	rc      *http.ResponseController
	reqDone <-chan struct{} // the request's context: the client went away
	buf     []byte
	frames  int // events written (the handler path's: servePoll ends after some)

	// A hijacked stream (nc set before attach; the rest sse_raw.go's).
	nc       net.Conn
	nbWriter           // raw nil: every event waits in the backlog for serve; tryWrite under wmu
	ready    bool      // under t.mu: the preamble is written, the writer sends straight to nc
	closeReq *writeReq // under t.mu: a close that came during the preamble
	wmu      sync.Mutex
	backlog  []byte        // accepted, not yet on the socket, in order
	pend     []byte        // the frame whose event is (in part) in backlog: written again on the next stream if this one ends first
	lost     []byte        // pend, when the stream ended before the writer parked on it: parkWriter hands it back
	parked   bool          // the send queue's writer waits for the backlog (parkWriter)
	werr     error         // the stream failed or ended: every later send fails
	flushed  chan struct{} // closed once the backlog is written (a close waits for its event)
}

// writeReq is the close event for a stream to write.
type writeReq struct {
	code   int
	reason string
	done   chan error // cap 1
}

// stop ends the stream; a hijacked one's socket is closed.
func (st *sseStream) stop() {
	st.endOnce.Do(func() {
		close(st.end)
		if st.nc != nil {
			st.nc.Close()
		}
	})
}

// writeParked writes the frames the session's writer parks, one at a
// time, running the writer on after each (conn.writeInline parks the next
// or ends), until none is parked; false when the stream must end (it was
// stopped, or a write failed: the frame stays parked for the next stream,
// unless the session has ended, which releases the writer).
func (st *sseStream) writeParked(s *Server, t *httpTransport) bool {
	for {
		select {
		case <-st.end:
			return false
		default:
		}
		t.mu.Lock()
		if t.wstate != parkParked {
			t.mu.Unlock()
			return true
		}
		f := t.parked
		t.wstate = parkWriting
		t.mu.Unlock()
		if err := st.writeFrame(s, t, f); err != nil {
			t.mu.Lock()
			t.wstate = parkParked
			t.mu.Unlock()
			if t.c.ctx.Err() != nil {
				t.releaseParked() // the session's AfterFunc may have run while this wrote
			}
			return false
		}
		t.mu.Lock()
		t.parked, t.wstate = nil, parkIdle
		live := st.ready
		t.mu.Unlock()
		// On a live hijacked stream the frame may wait in the backlog: the
		// writer parks behind it, as after write (park), so the backlog
		// holds one frame at a time (maxBacklog); serve runs it on.
		if live {
			if parked, lost := st.parkWriter(); parked || (lost != nil && t.rewrite(lost)) {
				return true
			}
		}
		t.c.writeInline()
	}
}

// writeRaw writes b and flushes it, once Freeze lets it, within
// WriteTimeout (time frozen does not count); a write that makes no
// progress within it drops the stream.
func (st *sseStream) writeRaw(s *Server, b []byte) error {
	if st.nc != nil {
		return st.writeBlocking(s, b)
	}
	if !waitGate(s.freezeGate(), st.end, st.reqDone) {
		return errStreamEnded
	}
	st.rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	_, err := st.w.Write(b)
	if err == nil {
		err = st.rc.Flush()
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		s.count(func(k *connCounters) { k.stalled++ })
	}
	return err
}

// writeFrame writes one server frame as an event: data: lines (a frame is
// one line unless an update's data holds JSON whitespace line breaks: each
// line is its own data: line, which the client joins with \n, the same
// JSON), and for an update an id: with the session's cursors after it. An
// update the client has already (at or below its topic's cursor, after a
// resume replayed it) is skipped. The cursors move once it is written.
func (st *sseStream) writeFrame(s *Server, t *httpTransport, frame []byte) error {
	t.mu.Lock()
	ev, ok := t.cursors.event(frame)
	if !ok {
		t.mu.Unlock()
		return nil // a duplicate of what a resume replayed
	}
	b := st.buf[:0]
	if ev.id {
		b = append(b, "id: "...)
		b = t.cursors.appendWith(b, ev.topic, ev.seq)
		b = append(b, '\n')
	}
	live := st.ready
	t.mu.Unlock()
	b = appendData(b, frame)
	st.buf = b
	var err error
	if live {
		_, err = st.send(s, b, frame) // on the socket, or in the backlog: written as far as the writer is concerned
	} else {
		err = st.writeRaw(s, b)
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.cursors.commit(ev)
	if bytes.HasPrefix(frame, welcomePrefix) {
		t.welcome = frame
	}
	st.frames++
	t.mu.Unlock()
	return nil
}

// appendData appends frame as data: lines and the blank line that ends
// the event. CR, LF and CRLF all end a line in an event stream.
func appendData(b, frame []byte) []byte {
	for {
		i := bytes.IndexAny(frame, "\r\n")
		if i < 0 {
			break
		}
		b = append(append(append(b, "data: "...), frame[:i]...), '\n')
		if frame[i] == '\r' && i+1 < len(frame) && frame[i+1] == '\n' {
			i++
		}
		frame = frame[i+1:]
	}
	b = append(append(append(b, "data: "...), frame...), '\n', '\n')
	return b
}

// resume is the replay of a subscribe with since, for a session's stream
// that resumes: under the topic's lock, the subscribed frame (from is the
// first seq that follows since and that the ring still has, head the
// newest) and the retained updates from there. Nothing when the client
// has everything (since at or past head). false if the topic was retired.
// The live updates after head are in c's queue, or come after it.
func (tp *topic) resume(c *conn, since int64) (frames [][]byte, subscribed []byte, ok bool) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.retired {
		return nil, nil, false
	}
	if since >= tp.head {
		return nil, nil, true
	}
	tp.trim(tp.hub.s.opts.Now())
	from := max(since+1, tp.first())
	for _, u := range tp.ring {
		if u.seq >= from {
			frames = append(frames, u.frame)
		}
	}
	return frames, c.encode(protocol.SubscribedFrame{Type: protocol.TypeSubscribed, Topic: tp.name, From: from, Head: tp.head, Stream: tp.stream}), true
}

// cursors are a session's per-topic cursors, as its stream's ids carry
// them: for each topic whose subscribed frame was written, the last seq
// written (the subscription's from-1 before its first update). At most
// MaxSubscriptions entries (an unsubscribed frame removes its topic),
// sorted by topic.
type cursors struct {
	list []cursor
}

type cursor struct {
	topic string
	seq   int64 // the last update written (from-1 before any)
	from  int64 // the subscription's first seq, as its subscribed said
}

// frameEvent is what writing a frame does to the cursors.
type frameEvent struct {
	kind  protocol.Type // update, subscribed or unsubscribed; "" for any other frame
	topic string
	seq   int64 // update: its seq; subscribed: its from
	id    bool  // the event carries an id: line
}

var (
	updatePrefix       = []byte(`{"type":"update"`)
	subscribedPrefix   = []byte(`{"type":"subscribed"`)
	unsubscribedPrefix = []byte(`{"type":"unsubscribed"`)
	welcomePrefix      = []byte(`{"type":"welcome"`)
)

// event reads what frame does to the cursors; false: it is an update the
// client has already (skip it).
func (cs *cursors) event(frame []byte) (frameEvent, bool) {
	var kind protocol.Type
	switch {
	case bytes.HasPrefix(frame, updatePrefix):
		kind = protocol.TypeUpdate
	case bytes.HasPrefix(frame, subscribedPrefix):
		kind = protocol.TypeSubscribed
	case bytes.HasPrefix(frame, unsubscribedPrefix):
		kind = protocol.TypeUnsubscribed
	default:
		return frameEvent{}, true
	}
	m, err := protocol.Decode(frame)
	if err != nil || m.Type != kind {
		return frameEvent{}, true
	}
	ev := frameEvent{kind: kind, topic: m.Topic}
	switch kind {
	case protocol.TypeUpdate:
		if e := cs.find(m.Topic); e != nil && m.Seq <= e.seq {
			return ev, false
		}
		ev.seq, ev.id = m.Seq, true
	case protocol.TypeSubscribed:
		ev.seq = m.From
	}
	return ev, true
}

// commit applies a written frame's event.
func (cs *cursors) commit(ev frameEvent) {
	switch ev.kind {
	case protocol.TypeUpdate:
		if e := cs.find(ev.topic); e != nil {
			e.seq = ev.seq
		} else {
			cs.put(cursor{topic: ev.topic, seq: ev.seq, from: ev.seq})
		}
	case protocol.TypeSubscribed:
		from := max(ev.seq, 1) // an old-style subscribed without from: from 1
		cs.put(cursor{topic: ev.topic, seq: from - 1, from: from})
	case protocol.TypeUnsubscribed:
		cs.list = slices.DeleteFunc(cs.list, func(e cursor) bool { return e.topic == ev.topic })
	}
}

func (cs *cursors) find(topic string) *cursor {
	for i := range cs.list {
		if cs.list[i].topic == topic {
			return &cs.list[i]
		}
	}
	return nil
}

// put sets topic's entry, keeping the list sorted.
func (cs *cursors) put(e cursor) {
	i, found := slices.BinarySearchFunc(cs.list, e.topic, func(a cursor, t string) int { return strings.Compare(a.topic, t) })
	if found {
		cs.list[i] = e
		return
	}
	cs.list = slices.Insert(cs.list, i, e)
}

// appendWith appends the cursors as an id, "topic=seq,topic2=seq2", with
// topic at seq.
func (cs *cursors) appendWith(b []byte, topic string, seq int64) []byte {
	wrote := false
	sep := func() {
		if wrote {
			b = append(b, ',')
		}
		wrote = true
	}
	placed := false
	for _, e := range cs.list {
		if !placed && topic <= e.topic {
			placed = true
			sep()
			b = append(append(append(b, topic...), '='), strconv.FormatInt(seq, 10)...)
			if topic == e.topic {
				continue
			}
		}
		sep()
		b = append(append(append(b, e.topic...), '='), strconv.FormatInt(e.seq, 10)...)
	}
	if !placed {
		sep()
		b = append(append(append(b, topic...), '='), strconv.FormatInt(seq, 10)...)
	}
	return b
}

// parseCursors reads a Last-Event-ID: "" (none), or "topic=seq" pairs
// joined by commas, each topic valid and at most once, each seq >= 0, at
// most max pairs.
func parseCursors(s string, max int) (map[string]int64, error) {
	if s == "" {
		return nil, nil
	}
	bad := errors.New("Last-Event-ID must be this server's cursor, topic=seq pairs joined by commas")
	if len(s) > max*(protocol.MaxTopicBytes+21) {
		return nil, bad
	}
	out := map[string]int64{}
	for pair := range strings.SplitSeq(s, ",") {
		topic, num, ok := strings.Cut(pair, "=")
		if !ok || !protocol.ValidTopic(topic) {
			return nil, bad
		}
		seq, err := strconv.ParseInt(num, 10, 64)
		if _, dup := out[topic]; err != nil || seq < 0 || dup {
			return nil, bad
		}
		out[topic] = seq
	}
	if len(out) > max {
		return nil, bad
	}
	return out, nil
}
