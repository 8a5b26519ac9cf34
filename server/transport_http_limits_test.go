//go:build !js

package server

import (
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// sendAsync POSTs body to the session's send in a goroutine and returns a
// channel with its status (0: a transport error), closed with it.
func (f *fixture) sendAsync(t *testing.T, session string, body io.Reader, length int64) <-chan httpAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.base()+"/send?session="+session, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	out := make(chan httpAnswer, 1)
	go func() {
		defer close(out)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- httpAnswer{}
			return
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		out <- httpAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	}()
	return out
}

func answerWithin(t *testing.T, ch <-chan httpAnswer, d time.Duration, what string) httpAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(d):
		t.Fatalf("%s: no answer within %v", what, d)
	}
	return httpAnswer{}
}

// One session may have MaxSendPOSTs POSTs in progress; one more is
// answered 429 with Retry-After at once, its body unread, and the session
// stays: once the held POSTs are through, a POST is taken again.
func TestHTTPSendPOSTsAreBoundedPerSession(t *testing.T) {
	f := newFixture(t, &Options{MaxSendPOSTs: 2})
	p := f.httpDial(t)
	p.next(protocol.TypeWelcome, 2*time.Second)
	f.set("freeze", true) // holds each POST before its body is read
	probe := func(id int) string { return `{"type":"probe","id":` + strconv.Itoa(id) + `}` }
	held := []<-chan httpAnswer{
		f.sendAsync(t, p.session, strings.NewReader(probe(1)), int64(len(probe(1)))),
		f.sendAsync(t, p.session, strings.NewReader(probe(2)), int64(len(probe(2)))),
	}
	c := p.f.srv.sessionConn(p.session)
	waitFor(t, 2*time.Second, "two POSTs held", func() bool { return c.tr.(*httpTransport).posts.Load() == 2 })
	a := f.post(t, "/send?session="+p.session, "application/json", probe(3))
	if a.status != http.StatusTooManyRequests || a.retryAfter != "1" || a.RetryMs != 1000 || a.Close != nil {
		t.Fatalf("a third POST in progress: %+v, want 429 with Retry-After 1 and no close", a)
	}
	f.set("freeze", false)
	for i, ch := range held {
		if a := answerWithin(t, ch, 5*time.Second, "a held POST"); a.status != http.StatusNoContent {
			t.Fatalf("held POST %d: %d", i+1, a.status)
		}
	}
	if a := f.post(t, "/send?session="+p.session, "application/json", probe(4)); a.status != http.StatusNoContent {
		t.Fatalf("a POST after the held ones: %+v", a)
	}
	if st := f.srv.Stats(); st.Open != 1 {
		t.Fatalf("open %d: the 429 must not end the session", st.Open)
	}
}

// The node holds at most MaxSendBytes of bodies at once, reserved before
// they are read: while one session's 1 MiB body is coming, another
// session's POST is 429 with Retry-After; once it is through, it is taken.
// A body declared over 1 MiB is 413 before it is read.
func TestHTTPSendBytesAreBoundedPerNode(t *testing.T) {
	f := newFixture(t, &Options{MaxSendBytes: maxSendBody})
	a, b := f.httpDial(t), f.httpDial(t)
	a.next(protocol.TypeWelcome, 2*time.Second)
	b.next(protocol.TypeWelcome, 2*time.Second)
	// A full body: an array of one probe, padded with JSON whitespace.
	head, tail := `[{"type":"probe","id":1}`, `]`
	full := head + strings.Repeat(" ", maxSendBody-len(head)-len(tail)) + tail
	pr, pw := io.Pipe()
	defer pw.Close()
	big := f.sendAsync(t, a.session, pr, int64(len(full)))
	if _, err := pw.Write([]byte(full[:1000])); err != nil { // the handler is reading it
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the body reserved", func() bool { return f.srv.sendBytes.Load() == maxSendBody })
	if ans := f.post(t, "/send?session="+b.session, "application/json", `{"type":"probe","id":2}`); ans.status != http.StatusTooManyRequests || ans.retryAfter != "1" {
		t.Fatalf("a POST while the node holds MaxSendBytes: %+v, want 429", ans)
	}
	if _, err := pw.Write([]byte(full[1000:])); err != nil {
		t.Fatal(err)
	}
	if ans := answerWithin(t, big, 5*time.Second, "the big POST"); ans.status != http.StatusNoContent {
		t.Fatalf("the full body: %d", ans.status)
	}
	if got := a.next(protocol.TypeProbeAck, 2*time.Second); got.ID != 1 {
		t.Fatalf("pong %+v", got)
	}
	if ans := f.post(t, "/send?session="+b.session, "application/json", `{"type":"probe","id":2}`); ans.status != http.StatusNoContent {
		t.Fatalf("after the big body: %+v", ans)
	}
	if n := f.srv.sendBytes.Load(); n != 0 {
		t.Fatalf("%d bytes still reserved", n)
	}
	over := f.sendAsync(t, b.session, strings.NewReader(full+" "), int64(len(full)+1))
	if ans := answerWithin(t, over, 5*time.Second, "the oversized POST"); ans.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over 1 MiB: %d", ans.status)
	}
}

// The bounds are Options with defaults; New refuses the invalid.
func TestHTTPSendBoundOptions(t *testing.T) {
	s := mustNew(t, &Options{Logger: discard()})
	defer s.Close()
	if o := s.opts; o.MaxSendPOSTs != 2 || o.MaxSendBytes != 8<<20 || o.HTTPAttachTimeout != 5*time.Second {
		t.Fatalf("defaults %d %d %v", o.MaxSendPOSTs, o.MaxSendBytes, o.HTTPAttachTimeout)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{MaxSendPOSTs: -1}, "Options.MaxSendPOSTs is -1"},
		{Options{MaxSendBytes: -1}, "Options.MaxSendBytes is -1"},
		{Options{MaxSendBytes: 1 << 19}, "Options.MaxSendBytes is 524288: at least 1048576"},
		{Options{HTTPAttachTimeout: -time.Second}, "Options.HTTPAttachTimeout is -1s"},
	} {
		o := c.o
		o.Logger = discard()
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// Behind a trusted proxy the HTTP transport's per-address limits key by
// the forwarded client, as the WebSocket's do: eight clients, each with a
// place of MaxConnsPerIP 3, all get in, and /api/stats shows the client's
// address. From an untrusted peer X-Forwarded-For is ignored: the eight
// share the peer's three places.
func TestHTTPTransportKeysByTheForwardedClient(t *testing.T) {
	open := func(f *fixture) (in, refused int) {
		for i := range 8 {
			a := f.post(t, "/session", "application/json", `{}`, "X-Forwarded-For", "203.0.113."+strconv.Itoa(i+1))
			switch {
			case a.status == http.StatusOK:
				in++
			case a.status == http.StatusServiceUnavailable && a.Close != nil && a.Close.Code == protocol.CloseTryAgainLater:
				refused++
			default:
				t.Fatalf("session %d: %+v", i, a)
			}
		}
		return in, refused
	}
	trusting := newFixture(t, &Options{Demo: true, MaxConnsPerIP: 3, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if in, refused := open(trusting); in != 8 || refused != 0 {
		t.Fatalf("via a trusted proxy: %d in, %d refused; want all 8 in", in, refused)
	}
	remotes := map[string]bool{}
	for _, c := range trusting.srv.Stats().Connections {
		remotes[c.Remote] = true
	}
	if !remotes["203.0.113.1"] || !remotes["203.0.113.8"] || len(remotes) != 8 {
		t.Fatalf("stats show %v, want the 8 forwarded clients", remotes)
	}
	untrusted := newFixture(t, &Options{MaxConnsPerIP: 3, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if in, refused := open(untrusted); in != 3 || refused != 5 {
		t.Fatalf("from an untrusted peer: %d in, %d refused; want 3 and 5 (keyed by the peer)", in, refused)
	}
}

// MaxConnsPerTenant refuses an HTTP session as admission does: 503 with
// Retry-After and the 1013 with its slot, which the client waits out
// (a 403 would make it a transport loss, the slot dropped).
func TestHTTPTenantCapRefusalIs503WithRetryAfter(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthRequired, MaxConnsPerTenant: 1})
	ticket := func(user string) string {
		tok, _, err := f.srv.IssueTicket(Identity{User: user, Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		return `{"token":"` + tok + `"}`
	}
	f.newSession(t, ticket("u1"))
	a := f.post(t, "/session", "application/json", ticket("u2"))
	if a.status != http.StatusServiceUnavailable || a.retryAfter == "" || a.Close == nil || a.Close.Code != protocol.CloseTryAgainLater {
		t.Fatalf("over MaxConnsPerTenant: %+v, want 503 with Retry-After and 1013", a)
	}
	if d, ok := protocol.ParseRetryAfter(a.Close.Reason); !ok || d < time.Second || a.RetryMs != d.Milliseconds() {
		t.Fatalf("the slot: %q, retryAfterMs %d", a.Close.Reason, a.RetryMs)
	}
}

// A session whose stream never comes gives back its place within
// HTTPAttachTimeout (default 5s), not two ping intervals plus the grace
// (here 15s).
func TestHTTPUnattachedSessionGivesBackItsPlace(t *testing.T) {
	f := newFixture(t, &Options{MaxConnsPerIP: 1, PingInterval: 5 * time.Second, SweepGrace: 5 * time.Second})
	f.newSession(t, `{}`)
	if a := f.post(t, "/session", "application/json", `{}`); a.status != http.StatusServiceUnavailable {
		t.Fatalf("a second session at MaxConnsPerIP 1: %+v", a)
	}
	start := time.Now()
	waitFor(t, 8*time.Second, "the unattached session dropped", func() bool { return f.srv.Stats().Open == 0 })
	if d := time.Since(start); d < 4*time.Second {
		t.Fatalf("dropped after %v: it may wait 5s for its stream", d)
	}
	p := f.httpDial(t) // its place is free again
	p.next(protocol.TypeWelcome, 2*time.Second)
	// Once a stream came, the session waits the detach limit again.
	g := newFixture(t, &Options{HTTPAttachTimeout: 200 * time.Millisecond, PingInterval: 500 * time.Millisecond, SweepGrace: 500 * time.Millisecond})
	q := g.httpDial(t)
	q.next(protocol.TypeWelcome, 2*time.Second)
	q.closeStream()
	serverTimersRun(600 * time.Millisecond) // past HTTPAttachTimeout, within 1.5s
	if st := g.srv.Stats(); st.Open != 1 {
		t.Fatalf("a session whose stream left: open %d after 600ms, want it kept for 1.5s", st.Open)
	}
	waitFor(t, 3*time.Second, "the detached session dropped", func() bool { return g.srv.Stats().Open == 0 })
}

// sessionConn is the HTTP session id names, or nil.
func (s *Server) sessionConn(id string) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}
