//go:build !js

package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// Block WebSocket refuses every upgrade with 403, as a proxy that strips
// upgrades; plain HTTP, the probe and the HTTP transport keep working, and
// connections already open stay.
func TestBlockWebSocketRefusesUpgradesOnly(t *testing.T) {
	f := newFixture(t, nil)
	open := f.dial()
	open.next(protocol.TypePing, time.Second)
	f.set("blockWebSocket", true)
	before := f.srv.Stats().Handshakes
	_, resp, err := websocket.Dial(context.Background(), f.url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("blocked dial: %v %v", resp, err)
	}
	if code := getStatus(t, f.hs.URL+"/ws", ""); code != http.StatusUpgradeRequired {
		t.Fatalf("a plain GET: %d", code)
	}
	if code := getStatus(t, f.base()+"/probe", ""); code != http.StatusNoContent {
		t.Fatalf("probe: %d", code)
	}
	p := f.httpDial(t)
	p.next(protocol.TypeWelcome, time.Second)
	open.next(protocol.TypePing, time.Second) // the open WebSocket stays
	if st, faults := f.srv.Stats(), f.demo.Faults(); st.Handshakes != before+1 || !faults["blockWebSocket"] {
		t.Fatalf("handshakes %d (before %d: the session's only), faults %v", st.Handshakes, before, faults)
	}
	if !strings.Contains(getText(t, f.hs.URL+"/metrics"), `wsready_handshakes_total{outcome="blocked",transport="ws"} 1`) {
		t.Fatal("the blocked upgrade is not in the metrics")
	}
	f.set("blockWebSocket", false)
	f.dial().next(protocol.TypePing, time.Second)
}

// smallSendDial dials with a 4 KiB socket send buffer, so what the server
// leaves unread backs up into the client's writes quickly.
func (f *fixture) smallSendDial(t *testing.T) *websocket.Conn {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.(*net.TCPConn).SetWriteBuffer(4096)
		}
		return c, err
	}}}
	ws, _, err := websocket.Dial(context.Background(), f.url, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// Deaf stops reading WebSocket frames (the client's writes back up) while
// pings go on, and the sweep does not blame the client for the pongs it
// cannot read; off, the frames held are answered in order.
//
// The waits are for events, not wall-clock budgets a loaded machine
// breaks: the deaf spell lasts until 7 pings came (the heartbeat's timer
// ran 6 intervals, and the sweep's, on the same clock, as many ticks: a
// sweep that blamed the client would close it 2 to 3 ticks in) and at
// least 700 ms; a write counts as stalled when it made no progress for a
// second. 10 s (pings) and 5 s (the answer) only bound a test that hangs:
// with Deaf holding the heartbeat it fails at 10 s, with the sweep
// blaming the peer at the close (about 400 ms in).
func TestDeafStopsReadingWebSocketsWhilePingsGoOn(t *testing.T) {
	f := newFixture(t, &Options{SweepInterval: 100 * time.Millisecond, SweepGrace: 100 * time.Millisecond})
	p := f.dial()
	p.next(protocol.TypePing, time.Second)
	p.next(protocol.TypeWelcome, time.Second)
	f.set("deaf", true)
	start := time.Now()
	p.send(protocol.Message{Type: protocol.TypeProbe, ID: 1})
	const wantPings, spell = 7, 700 * time.Millisecond // spell: past the sweep's 200 to 300 ms
	guard := time.After(10 * time.Second)
	pings := 0
	for pings < wantPings || time.Since(start) < spell {
		select {
		case m := <-p.frames:
			if m.Type != protocol.TypePing {
				t.Fatalf("a deaf server answered: %+v", m)
			}
			pings++
		case err := <-p.closed:
			p.closed <- err // for Cleanup
			t.Fatalf("closed %v into the deaf spell after %d pings: %v; limits %+v", time.Since(start).Round(time.Millisecond), pings, err, f.srv.Stats().Limits)
		case <-guard:
			t.Fatalf("%d pings in 10 s while deaf (100 ms interval)", pings)
		}
	}
	// A sender's bytes back up: the server's socket is not read.
	ws := f.smallSendDial(t)
	frame := protocol.Encode(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "echo", Params: []byte(`"` + strings.Repeat("x", 900) + `"`)})
	sent := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := ws.Write(ctx, websocket.MessageText, frame)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if sent += len(frame); sent > 4<<20 {
			t.Fatal("4 MiB sent to a deaf server without a stall")
		}
	}
	t.Logf("%d pings in %v deaf; a deaf server took %d bytes before the client's writes stalled", pings, time.Since(start).Round(time.Millisecond), sent)
	if st := f.srv.Stats(); st.Limits.SweepClosed != 0 || st.Open != 2 {
		t.Fatalf("stats %+v open %d: the sweep blamed a deaf server's peer", st.Limits, st.Open)
	}
	f.set("deaf", false)
	if a := p.next(protocol.TypeProbeAck, 5*time.Second); a.ID != 1 {
		t.Fatalf("probe_ack %+v", a)
	}
}

// Deaf holds an HTTP transport POST before its body is read (the client's
// send stays pending) while the stream's pings go on.
func TestDeafHoldsHTTPSends(t *testing.T) {
	f := newFixture(t, nil)
	p := f.httpDial(t)
	p.next(protocol.TypePing, time.Second)
	f.set("deaf", true)
	sent := make(chan int, 1)
	go func() {
		sent <- f.post(t, "/send?session="+p.session, "application/json", `{"type":"probe","id":5}`).status
	}()
	p.next(protocol.TypePing, time.Second)
	p.next(protocol.TypePing, time.Second)
	select {
	case code := <-sent:
		t.Fatalf("a deaf server answered a send: %d", code)
	default:
	}
	f.set("deaf", false)
	if code := <-sent; code != http.StatusNoContent {
		t.Fatalf("send answered %d", code)
	}
	if a := p.next(protocol.TypeProbeAck, time.Second); a.ID != 5 {
		t.Fatalf("probe_ack %+v", a)
	}
}

// With auth required, a deaf server does not close a connection for an
// auth frame it did not read.
func TestDeafDoesNotBlameTheClientForAnUnreadAuthFrame(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthRequired, IssueTickets: true, AuthTimeout: 200 * time.Millisecond})
	tok, _ := f.token(t, "page-1")
	f.set("deaf", true)
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	select {
	case err := <-p.closed:
		t.Fatalf("closed while deaf: %v", err)
	case <-time.After(600 * time.Millisecond):
	}
	f.set("deaf", false)
	p.next(protocol.TypeAuthenticated, time.Second)
}
