//go:build !js

package server

import (
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// A frame the writer sends to a live hijacked stream that fails because
// the session ended meanwhile (a close stops the stream, then cancels)
// is not parked: the session's end has already released the writer
// (releaseParked), so a frame parked after it held conn.run's wait for the
// writer, and Server.Close with it, for ever. The interleaving is forced:
// the test holds the stream's wmu, so the writer waits inside send, past
// write's first look at the context, while the session ends and its
// releaseParked runs.
func TestHTTPWriterFailingAsTheSessionEndsIsReleased(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	p := f.httpDial(t)
	p.next(protocol.TypeWelcome, time.Second)
	c := f.srv.sessionConn(p.session)
	tr := c.tr.(*httpTransport)
	var st *sseStream
	waitFor(t, 2*time.Second, "the stream live", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		st = tr.stream
		return st != nil && st.nc != nil && st.ready && tr.wstate == parkIdle
	})

	st.wmu.Lock()                                     // the writer stops in send, and serve cannot end the stream
	go c.offer([]byte(`{"type":"probe_ack","id":1}`)) // the queue's writer, inline
	waitFor(t, 2*time.Second, "the writer at the stream", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.sentTo == st
	})
	c.cancel() // the session ends: its AfterFunc (releaseParked) stops the stream
	select {
	case <-st.end:
	case <-time.After(2 * time.Second):
		st.wmu.Unlock()
		t.Fatal("releaseParked did not run")
	}
	st.wmu.Unlock() // send fails: the stream ended

	if !poll.Until(3*time.Second, func() bool { return f.srv.Stats().Open == 0 }) {
		tr.releaseParked() // let Close end; the session's run waited for a writer parked after its release
		t.Fatal("the session did not end within 3 s: its writer was parked after the session's end released it")
	}
}
