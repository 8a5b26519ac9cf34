//go:build !js

package server

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// rawWS is a WebSocket client written by hand over TCP, so a test can send
// what no library would (an unmasked frame) and see every byte that comes
// back.
type rawWS struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, f *fixture) *rawWS {
	t.Helper()
	addr := strings.TrimPrefix(f.hs.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: "+addr+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %s", resp.Status)
	}
	return &rawWS{t: t, c: c, br: br}
}

// send writes one frame: fin and opcode in the first byte; masked with a
// fixed key, or not.
func (w *rawWS) send(first byte, payload []byte, masked bool) {
	w.t.Helper()
	if len(payload) > 125 {
		w.t.Fatal("rawWS sends short frames only")
	}
	b := []byte{first, byte(len(payload))}
	if masked {
		key := [4]byte{1, 2, 3, 4}
		b[1] |= 0x80
		b = append(b, key[:]...)
		for i, c := range payload {
			b = append(b, c^key[i%4])
		}
	} else {
		b = append(b, payload...)
	}
	if _, err := w.c.Write(b); err != nil {
		w.t.Fatal(err)
	}
}

// next reads one frame from the server: its opcode and payload.
func (w *rawWS) next(d time.Duration) (byte, []byte, error) {
	w.c.SetReadDeadline(time.Now().Add(d))
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(w.br, ext[:]); err != nil {
			return 0, nil, err
		}
		n = int(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(w.br, ext[:]); err != nil {
			return 0, nil, err
		}
		n = int(binary.BigEndian.Uint64(ext[:]))
	}
	p := make([]byte, n)
	_, err := io.ReadFull(w.br, p)
	return h[0] & 0x0f, p, err
}

// closeFrame reads frames until a close frame and returns its code; 0 if
// the connection ended without one.
func (w *rawWS) closeFrame(d time.Duration) int {
	w.t.Helper()
	for {
		op, p, err := w.next(d)
		if err != nil {
			return 0
		}
		if op == 0x8 && len(p) >= 2 {
			return int(binary.BigEndian.Uint16(p))
		}
	}
}

// A client MUST mask its frames (RFC 6455 5.1): an unmasked one, whole
// or the continuation of a masked start, is answered with a close frame
// 1002 before the connection is dropped, not by a bare TCP close.
func TestAnUnmaskedFrameIsAnsweredWith1002(t *testing.T) {
	f := newFixture(t, nil)
	for name, send := range map[string]func(w *rawWS){
		"unmasked text frame": func(w *rawWS) { w.send(0x81, []byte(`{"type":"probe","id":1}`), false) },
		"unmasked continuation": func(w *rawWS) {
			w.send(0x01, []byte(`{"type":"probe",`), true)
			w.send(0x80, []byte(`"id":1}`), false)
		},
		"unmasked ping": func(w *rawWS) { w.send(0x89, []byte("hi"), false) },
	} {
		w := dialRaw(t, f)
		f.waitOpen(1)
		// A masked frame is served.
		w.send(0x81, []byte(`{"type":"probe","id":7}`), true)
		for {
			_, p, err := w.next(time.Second)
			if err != nil {
				t.Fatalf("%s: no probe_ack: %v", name, err)
			}
			if m, err := protocol.Decode(p); err == nil && m.Type == protocol.TypeProbeAck && m.ID == 7 {
				break
			}
		}
		send(w)
		if code := w.closeFrame(3 * time.Second); code != int(websocket.StatusProtocolError) {
			t.Errorf("%s: close code %d, want 1002", name, code)
		}
		w.c.Close()
		f.waitOpen(0)
	}
	if n := f.srv.Stats().Open; n != 0 {
		t.Fatalf("%d connections open", n)
	}
}
