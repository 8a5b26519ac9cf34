package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
)

// The zero Config (with the random source the core needs) is the client
// with every fix, not the demo's naive stage: a request nobody answers
// settles with ErrRequestTimeout after RequestTimeout (5 s), the watchdog
// is armed, and HTTP is the fallback transport.
func TestTheZeroConfigIsTheClientWithEveryFix(t *testing.T) {
	core, err := client.New(client.Config{Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	if got := core.Config().Transports; len(got) != 2 || got[1] != client.TransportHTTP {
		t.Fatalf("transports %v, want WebSocket then HTTP", got)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	core.Start(now)
	var sock client.SocketID
	for _, e := range core.Effects() {
		if e.Kind == client.EffDial {
			sock = e.Socket
		}
	}
	if sock == 0 {
		t.Fatal("no dial")
	}
	core.Opened(sock, now)
	core.Received(sock, []byte(`{"type":"ping","intervalMs":1000}`), now)
	core.Received(sock, []byte(`{"type":"welcome","session":"q1Zb3kPm9tV0xY2zA4cD6e"}`), now)
	core.Effects()
	id := core.Request("echo", []byte(`{}`), now)
	core.Effects()
	// Keep the socket alive past the request's timeout: a ping a second.
	var settled error
	for i := 1; i <= 5 && settled == nil; i++ {
		at := now.Add(time.Duration(i) * time.Second)
		core.Received(sock, []byte(`{"type":"ping","intervalMs":1000}`), at)
		core.Tick(at)
		for _, e := range core.Effects() {
			if e.Kind == client.EffSettle && e.ID == id {
				settled = e.Err
			}
		}
	}
	if !errors.Is(settled, client.ErrRequestTimeout) {
		t.Fatalf("the request settled with %v, want ErrRequestTimeout", settled)
	}
}
