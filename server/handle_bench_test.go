//go:build !js

package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The server's decode and reply path, measured on a real loopback
// WebSocket with client and server in this process. ns/op is wall time per
// operation, cpu-us/op the process's CPU (user + system, client included)
// per operation: on a shared machine the CPU is the steadier of the two.
// The client writes pre-encoded frames and reads raw bytes, so its own cost
// does not change with the server's codec.
//
//	go test ./server -run '^$' -bench 'Handshake|Frame' -count 6

// benchServer starts a server whose pings stay out of the way (an hour
// apart; a Server alone runs no feed) and returns its WebSocket URL.
func benchServer(b *testing.B) string {
	b.Helper()
	srv := mustNew(b, &Options{PingInterval: time.Hour, SweepInterval: time.Hour,
		AdmitRate: 1e9, AdmitBurst: 1e9, TenantRate: 1e9, TenantBurst: 1e9, Logger: discard()})
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(func() { srv.Close(); hs.Close() })
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
}

// benchDial opens a connection and reads the server's first ping.
func benchDial(b *testing.B, url string) *websocket.Conn {
	b.Helper()
	ws, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := ws.Read(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ws
}

// cpuMeter reports the process's CPU time per operation.
type cpuMeter struct{ ru syscall.Rusage }

func startCPU(b *testing.B) *cpuMeter {
	m := &cpuMeter{}
	syscall.Getrusage(syscall.RUSAGE_SELF, &m.ru)
	b.ResetTimer()
	return m
}

func (m *cpuMeter) stop(b *testing.B) {
	b.StopTimer()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	ns := syscall.TimevalToNsec(ru.Utime) - syscall.TimevalToNsec(m.ru.Utime) +
		syscall.TimevalToNsec(ru.Stime) - syscall.TimevalToNsec(m.ru.Stime)
	b.ReportMetric(float64(ns)/1e3/float64(b.N), "cpu-us/op")
}

// roundTrips sends frame and reads one answer, b.N times, on one
// connection.
func roundTrips(b *testing.B, frames ...string) {
	ws := benchDial(b, benchServer(b))
	defer ws.CloseNow()
	ctx := context.Background()
	bs := make([][]byte, len(frames))
	for i, f := range frames {
		bs[i] = []byte(f)
	}
	b.ReportAllocs()
	m := startCPU(b)
	for i := 0; b.Loop(); i++ {
		f := bs[i%len(bs)]
		if err := ws.Write(ctx, websocket.MessageText, f); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ws.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	m.stop(b)
}

// BenchmarkHandshake is one connection's life: the upgrade, the first
// ping, a close handshake.
func BenchmarkHandshake(b *testing.B) {
	url := benchServer(b)
	b.ReportAllocs()
	m := startCPU(b)
	for b.Loop() {
		ws := benchDial(b, url)
		ws.Close(websocket.StatusNormalClosure, "")
	}
	m.stop(b)
}

// BenchmarkFrameRequest is an echo request and its response.
func BenchmarkFrameRequest(b *testing.B) {
	roundTrips(b, `{"type":"request","id":7,"method":"echo","params":{"text":"hello, world","n":[1,2,3]}}`)
}

// BenchmarkFrameProbe is a probe and its probe_ack.
func BenchmarkFrameProbe(b *testing.B) {
	roundTrips(b, `{"type":"probe","id":4}`)
}

// BenchmarkFrameBad is a valid frame with a bad message and its error.
func BenchmarkFrameBad(b *testing.B) {
	roundTrips(b, `{"type":"request","id":9,"method":""}`)
}

// BenchmarkFrameSubscribe alternates a subscribe (answered by subscribed)
// and an unsubscribe (answered by unsubscribed).
func BenchmarkFrameSubscribe(b *testing.B) {
	roundTrips(b, `{"type":"subscribe","topic":"feed"}`, `{"type":"unsubscribe","topic":"feed"}`)
}

// BenchmarkFramePipelined sends b.N echo requests without waiting and
// reads the b.N responses: the server's throughput per frame.
func BenchmarkFramePipelined(b *testing.B) {
	ws := benchDial(b, benchServer(b))
	defer ws.CloseNow()
	ctx := context.Background()
	frame := []byte(`{"type":"request","id":7,"method":"echo","params":{"text":"hello, world","n":[1,2,3]}}`)
	b.ReportAllocs()
	m := startCPU(b)
	n := b.N
	errc := make(chan error, 1)
	go func() {
		for range n {
			if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range n {
		if _, _, err := ws.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	m.stop(b)
}

// benchHandle serves frames in turn on a connection without a socket:
// decoding, the handler and encoding the replies into the send queue
// (taken at once, as the flusher would). This is the part of a frame's
// cost the codec decides, without the syscalls and scheduling that make
// the loopback figures noisy.
//
//	go test ./server -run '^$' -bench Handle -count 10
func benchHandle(b *testing.B, frames ...string) {
	s := mustNew(b, &Options{Logger: discard()})
	b.Cleanup(func() { s.Close() })
	if _, err := s.Publish(context.Background(), "news", []byte(`{"text":"hi"}`)); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	c := &conn{s: s, ctx: ctx, cancel: cancel, q: newSendQueue(1<<20, nil)}
	bs := make([][]byte, len(frames))
	for i, f := range frames {
		bs[i] = []byte(f)
	}
	var batch [][]byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.handle(bs[i%len(bs)])
		batch = c.q.take(batch)
		for j, f := range batch {
			c.q.written(len(f))
			batch[j] = nil
		}
	}
	c.dropSubscriptions("")
}

func BenchmarkHandleRequest(b *testing.B) {
	benchHandle(b, `{"type":"request","id":7,"method":"echo","params":{"text":"hello, world","n":[1,2,3]}}`)
}

func BenchmarkHandleProbe(b *testing.B) { benchHandle(b, `{"type":"probe","id":4}`) }

func BenchmarkHandleBad(b *testing.B) { benchHandle(b, `{"type":"request","id":9,"method":""}`) }

func BenchmarkHandleSubscribe(b *testing.B) {
	benchHandle(b, `{"type":"subscribe","topic":"news","since":0}`, `{"type":"unsubscribe","topic":"news"}`)
}
