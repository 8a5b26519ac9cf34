//go:build !js

package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Review tests of the hijacked event stream (sse_raw.go).

// openRawStream opens session id's stream on a plain TCP connection and
// returns it after the response head (a resumed stream has no welcome).
func openRawStream(t *testing.T, f *fixture, id string) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, _ := url.Parse(f.hs.URL)
	nc, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	fmt.Fprintf(nc, "GET /ws/sse?session=%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, u.Host)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	return nc, br
}

// A reply that waits in a hijacked stream's backlog when the stream is
// lost is not lost with it: the session lives on, and the next stream the
// client opens for it carries the reply (as the handler path, which keeps
// a frame it failed to write parked for the next stream, did). Here Freeze
// holds the reply in the backlog, and the client leaves meanwhile.
func TestHTTPStreamLostWithAReplyInItsBacklogPassesItOn(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true, SlowReplyDelay: 300 * time.Millisecond})
	id := f.newSession(t, `{}`)
	nc, _ := rawStream(t, f, id)
	f.srv.mu.Lock()
	tr := f.srv.sessions[id].tr.(*httpTransport)
	f.srv.mu.Unlock()
	stream := func() *sseStream {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.stream
	}
	f.set("slowReplies", true)
	if a := f.post(t, "/send?session="+id, "application/json", `{"type":"request","id":7,"method":"no.such.method"}`); a.status != http.StatusNoContent {
		t.Fatalf("send: %d", a.status)
	}
	f.set("freeze", true) // before the reply comes: it waits in the backlog
	waitFor(t, 3*time.Second, "the reply in the stream's backlog", func() bool {
		st := stream()
		if st == nil {
			return false
		}
		st.wmu.Lock()
		defer st.wmu.Unlock()
		return strings.Contains(string(st.backlog), `"id":7`)
	})
	nc.Close()
	waitFor(t, 3*time.Second, "the stream detached", func() bool { return stream() == nil })
	f.set("freeze", false)
	_, br := openRawStream(t, f, id)
	readRawUntil(t, br, `"id":7`)
}

// An event reaches a client promptly through a reverse proxy that speaks
// HTTP/1.1 keep-alive to the server (httputil.ReverseProxy): the hijacked
// stream's Connection: close head, without chunking, is a body the proxy
// streams as it comes.
func TestHTTPStreamThroughAReverseProxy(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	backend, _ := url.Parse(f.hs.URL)
	px := httptest.NewServer(httputil.NewSingleHostReverseProxy(backend))
	t.Cleanup(px.Close)
	resp, err := http.Post(px.URL+"/ws/session", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, resp)
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, px.URL+"/ws/sse?session="+a.Session, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream through the proxy: %d %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	readRawUntil(t, br, `"type":"welcome"`)
	if r, err := http.Post(px.URL+"/ws/send?session="+a.Session, "application/json", strings.NewReader(`{"type":"subscribe","topic":"room"}`)); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("send through the proxy: %v %v", r, err)
	}
	readRawUntil(t, br, `"type":"subscribed"`)
	start := time.Now()
	if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	readRawUntil(t, br, `{"n":1}`)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("the update took %v through the proxy", d)
	}
}

// A stream that goes live with frames waiting for it (parked and queued
// while the session had no stream) and a client slow to read keeps the
// backlog's rule: one frame at a time in it, the send queue's writer
// parked behind it. The frame the stream's handler writes last before it
// returns did not park the writer, so the next frame went into the backlog
// too: two large replies were over maxBacklog, and the stream failed
// (errBacklogFull) with nothing wrong but a slow reader.
func TestHTTPStreamGoingLiveWithFramesWaitingKeepsOneInTheBacklog(t *testing.T) {
	big := strings.Repeat("x", 50<<10)
	// Connections that are not a syscall.Conn (as behind a listener that
	// wraps them, netutil.LimitListener's): every event goes through the
	// backlog, and the client, reading nothing, holds it there.
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second, MaxQueuedBytes: 64 << 20,
		Methods: map[string]Method{"big": func(context.Context, *Call) (any, error) { return big, nil }}}, DemoOptions{NoFeed: true})
	f.hs.Close()
	f.hs = httptest.NewUnstartedServer(f.demo.Handler())
	f.hs.Listener = wrappedListener{f.hs.Listener}
	f.hs.Start()
	t.Cleanup(f.hs.Close)
	id := f.newSession(t, `{}`)
	nc, _ := rawStream(t, f, id)
	f.srv.mu.Lock()
	tr := f.srv.sessions[id].tr.(*httpTransport)
	f.srv.mu.Unlock()
	stream := func() *sseStream {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.stream
	}
	nc.Close()
	waitFor(t, 3*time.Second, "the stream detached", func() bool { return stream() == nil })
	const calls = 4
	var body []string
	for i := 1; i <= calls; i++ {
		body = append(body, fmt.Sprintf(`{"type":"request","id":%d,"method":"big"}`, i))
	}
	if a := f.post(t, "/send?session="+id, "application/json", "["+strings.Join(body, ",")+"]"); a.status != http.StatusNoContent {
		t.Fatalf("send: %d", a.status)
	}
	waitFor(t, 3*time.Second, "the replies waiting for a stream", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.wstate == parkParked
	})
	c := f.srv.sessionConn(id)
	waitFor(t, 3*time.Second, "the other replies queued behind the parked one", func() bool {
		c.q.mu.Lock()
		defer c.q.mu.Unlock()
		return len(c.q.frames)-c.q.head == calls-1
	})
	u, _ := url.Parse(f.hs.URL)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		return nil
	}}
	nc2, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	fmt.Fprintf(nc2, "GET /ws/sse?session=%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, u.Host)
	// The stream goes live and writes what waited, the client reading
	// nothing: the queue is empty, its writer idle, what the socket did
	// not take in the backlog with the writer parked behind it (or, as it
	// was, the stream failed).
	attached := false
	waitFor(t, 3*time.Second, "the live stream to write what waited", func() bool {
		st := stream()
		if st == nil {
			return attached // it attached, then ended
		}
		attached = true
		c.q.mu.Lock()
		queued := len(c.q.frames) - c.q.head
		c.q.mu.Unlock()
		tr.mu.Lock()
		idle := tr.wstate == parkIdle
		tr.mu.Unlock()
		st.wmu.Lock()
		defer st.wmu.Unlock()
		return queued == 0 && idle && (len(st.backlog) == 0 || st.parked)
	})
	if st := stream(); st == nil {
		t.Fatalf("the stream of a slow reader was dropped (stalled %d)", f.srv.Stats().Limits.Stalled)
	}
	nc2.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(nc2, 1<<20)
	seen := map[string]bool{} // the calls run concurrently: their replies come in any order
	for len(seen) < calls {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("replies %v, then: %v (stalled %d)", seen, err, f.srv.Stats().Limits.Stalled)
		}
		for i := 1; i <= calls; i++ {
			if id := fmt.Sprintf(`"id":%d`, i); strings.Contains(line, id) {
				seen[id] = true
			}
		}
	}
}

// waitLockedIn waits until a goroutine waits for a sync.Mutex with fn on
// its stack (a method's name, "(*topic).resume"), at a spot other than
// not, and returns the spot (file:line of fn's frame). A goroutine blocked
// on a mutex is not durably blocked for testing/synctest, and no API says
// it waits: its stack does. 3 s without it fails t.
func waitLockedIn(t *testing.T, fn, not string) string {
	t.Helper()
	buf := make([]byte, 1<<20)
	spot := ""
	waitFor(t, 3*time.Second, "a goroutine waiting for a lock in "+fn, func() bool {
		all := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(all, "\n\n") {
			head, _, _ := strings.Cut(g, "\n")
			if !strings.Contains(head, "[sync.Mutex.Lock") {
				continue
			}
			lines := strings.Split(g, "\n")
			for i, l := range lines {
				if strings.Contains(l, "/server."+fn+"(") && i+1 < len(lines) {
					at, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), " ")
					if at != not {
						spot = at
						return true
					}
				}
			}
		}
		return false
	})
	return spot
}

// wrappedListener's connections hide their socket (no SyscallConn), as a
// listener that wraps them does.
type wrappedListener struct{ net.Listener }

type wrappedConn struct{ net.Conn }

func (l wrappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrappedConn{c}, nil
}

// A stream that attaches while its session ends is closed with the
// session. Its attach saw the session alive, then took its time (a
// topic's resume); the session ended meanwhile (here the sweep drops it),
// and its closeNow found no stream to stop: the stream was attached after
// and stayed open on a session that no longer existed, its goroutine and
// socket kept until the client left, even past Server.Close (net/http no
// longer owns a hijacked connection).
func TestHTTPStreamAttachingAsItsSessionEndsIsClosed(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: time.Hour, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	id := f.newSession(t, `{}`)
	nc, br := rawStream(t, f, id)
	f.post(t, "/send?session="+id, "application/json", `{"type":"subscribe","topic":"room"}`)
	readRawUntil(t, br, `"type":"subscribed"`)
	f.srv.mu.Lock()
	c := f.srv.sessions[id]
	f.srv.mu.Unlock()
	tr := c.tr.(*httpTransport)
	nc.Close()
	waitFor(t, 3*time.Second, "the stream detached", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.stream == nil
	})
	c.subMu.Lock()
	tp := c.subs["room"]
	c.subMu.Unlock()
	// The next stream's attach sees the session alive and stops at its
	// topics (subMu held here); then it copies them (room among them) and
	// stops at the cursors (tr.mu held here).
	c.subMu.Lock()
	u, _ := url.Parse(f.hs.URL)
	nc2, err := net.Dial("tcp", u.Host)
	if err != nil {
		c.subMu.Unlock()
		t.Fatal(err)
	}
	defer nc2.Close()
	fmt.Fprintf(nc2, "GET /ws/sse?session=%s HTTP/1.1\r\nHost: %s\r\n\r\n", id, u.Host)
	atTopics := waitLockedIn(t, "(*httpTransport).attach", "")
	tr.mu.Lock()
	c.subMu.Unlock()
	waitLockedIn(t, "(*httpTransport).attach", atTopics) // now at the cursors
	// room is given up (the session's end then does not need its lock),
	// and its lock held: the attach stops in room's resume.
	posted := make(chan error, 1)
	go func() {
		resp, err := http.Post(f.base()+"/send?session="+id, "application/json", strings.NewReader(`{"type":"unsubscribe","topic":"room"}`))
		if err == nil {
			resp.Body.Close()
		}
		posted <- err
	}()
	waitFor(t, 3*time.Second, "room given up", func() bool {
		c.subMu.Lock()
		defer c.subMu.Unlock()
		return c.subs["room"] == nil
	})
	tp.mu.Lock()
	tr.mu.Unlock()
	waitLockedIn(t, "(*topic).resume", "")
	c.sweepClose()
	waitFor(t, 3*time.Second, "the session ended", func() bool {
		f.srv.mu.Lock()
		defer f.srv.mu.Unlock()
		return f.srv.sessions[id] == nil
	})
	tp.mu.Unlock()
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	nc2.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err = io.Copy(io.Discard, nc2); err != nil {
		t.Fatalf("the stream of an ended session stayed open: %v", err)
	}
}
