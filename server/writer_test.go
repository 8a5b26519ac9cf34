//go:build !js

package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsready/wsready/protocol"
)

// The feed's updates, the heartbeat's pings and the sweep's liveness pings
// are written to each connection from the goroutine that produced them: a
// tick starts no goroutine per connection. Before, every tick started a
// sender per connection (the goroutine count peaked near two per
// connection four times a second, before the per-connection rework), and every sweep a goroutine
// per connection waiting for its pong.
func TestTicksStartNoGoroutinePerConnection(t *testing.T) {
	const n = 100
	f := newFixture(t, &Options{PingInterval: 10 * time.Millisecond,
		SweepInterval: 20 * time.Millisecond, SweepGrace: time.Second, AdmitRate: 1e6, AdmitBurst: 1e6, TenantRate: 1e6, TenantBurst: 1e6}, DemoOptions{FeedInterval: 5 * time.Millisecond})
	var updates, pings atomic.Int64
	sub := protocol.Encode(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	for range n {
		ws, _, err := rawDial(t, f.url, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Write(context.Background(), websocket.MessageText, sub); err != nil {
			t.Fatal(err)
		}
		go func() { // reads everything (and so answers the sweep's pings) until the cleanup closes it
			for {
				_, b, err := ws.Read(context.Background())
				if err != nil {
					return
				}
				m, err := protocol.Decode(b)
				switch {
				case err != nil:
					t.Errorf("undecodable frame %q: %v", b, err)
				case m.Type == protocol.TypeUpdate:
					updates.Add(1)
				case m.Type == protocol.TypePing:
					pings.Add(1)
				}
			}
		}()
	}
	defer func() {
		if t.Failed() {
			t.Logf("stats: %+v", f.srv.Stats())
		}
	}()
	waitFor(t, 5*time.Second, "every connection open", func() bool {
		st := f.srv.Stats()
		if st.Open < n && st.Limits.SweepClosed+st.Limits.Stalled+st.Limits.SlowConsumer > 0 {
			t.Fatalf("open %d of %d: limits %+v", st.Open, n, st.Limits)
		}
		return st.Open == n
	})
	waitFor(t, 10*time.Second, "every connection fed", func() bool { return updates.Load() >= 10*n })
	base := runtime.NumGoroutine()
	u0, p0 := updates.Load(), pings.Load()
	peak := base
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		peak = max(peak, runtime.NumGoroutine())
		runtime.Gosched()
	}
	if u, p := updates.Load()-u0, pings.Load()-p0; u < n || p < n {
		t.Fatalf("in the window: %d updates and %d pings to %d connections: the feed and the heartbeat did not run", u, p, n)
	}
	if st := f.srv.Stats(); st.Open != n || st.Limits.SweepClosed != 0 {
		t.Fatalf("open %d, swept %d: the sweep's pings went unanswered", st.Open, st.Limits.SweepClosed)
	}
	if peak-base > n/10 {
		t.Fatalf("goroutines peaked at %d over %d with %d connections fed every 5 ms, pinged every 10 ms and swept every 20 ms: a goroutine per connection per tick", peak, base, n)
	}
	t.Logf("goroutines: %d at the start of the window, peak %d", base, peak)
}

// A client may send its first frame in the same packet as its handshake:
// those bytes are in net/http's reader when the connection is hijacked,
// and Hijack's smaller reader must carry them over, not drop them.
func TestAFrameSentWithTheHandshakeIsRead(t *testing.T) {
	f := newFixture(t, nil)
	host := strings.TrimPrefix(f.hs.URL, "http://")
	nc, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := "GET /ws HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	payload := protocol.Encode(protocol.Message{Type: protocol.TypeProbe, ID: 7})
	key := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x81, 0x80 | byte(len(payload))}, key[:]...) // FIN text, masked, short length
	for i, b := range payload {
		frame = append(frame, b^key[i%4])
	}
	if _, err := nc.Write(append([]byte(req), frame...)); err != nil { // one write: one packet on loopback
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v, %v", resp, err)
	}
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			t.Fatalf("no probe_ack: %v", err)
		}
		n := int(h[1] & 0x7f)
		if n == 126 {
			var l [2]byte
			if _, err := io.ReadFull(br, l[:]); err != nil {
				t.Fatal(err)
			}
			n = int(l[0])<<8 | int(l[1])
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			t.Fatal(err)
		}
		if h[0]&0x0f != 1 {
			continue // a control frame (the sweep's ping)
		}
		m, err := protocol.Decode(b)
		if err != nil {
			t.Fatalf("undecodable frame %q: %v", b, err)
		}
		if m.Type == protocol.TypeProbeAck {
			if m.ID != 7 {
				t.Fatalf("probe_ack for %d, want 7", m.ID)
			}
			return
		}
	}
}
