//go:build !js

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// The per-connection subscribe rate and the HTTP transport's bounds are
// flags: -subscribe-rate 0.5 -subscribe-burst 2 serves two subscribes and
// answers the third rate_limited on the same socket, which /metrics counts
// (wsready_subscribe_rate_limited_total); -http-attach-timeout 1s drops a
// session no stream came for after a second (5 s by default). Before,
// serve had none of these flags and the bounds were the defaults' alone.
func TestServeBoundsFlags(t *testing.T) {
	n := startNode(t, freeAddr(t), "-subscribe-rate", "0.5", "-subscribe-burst", "2", "-http-attach-timeout", "1s",
		"-max-send-posts", "1", "-max-send-bytes", "1048576", "-max-idempotency-keys-per-scope", "8")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, n.url(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	next := func(types ...string) protocol.Message {
		t.Helper()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %v: %v", types, err)
			}
			m, err := protocol.Decode(b)
			if err != nil {
				t.Fatalf("frame %q: %v", b, err)
			}
			for _, ty := range types {
				if string(m.Type) == ty {
					return m
				}
			}
		}
	}
	send := func(m protocol.Message) {
		t.Helper()
		if err := ws.Write(ctx, websocket.MessageText, protocol.Encode(m)); err != nil {
			t.Fatal(err)
		}
	}
	next(string(protocol.TypeWelcome))
	for i := range 3 {
		send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
		m := next(string(protocol.TypeSubscribed), string(protocol.TypeError))
		switch {
		case i < 2 && m.Type != protocol.TypeSubscribed:
			t.Fatalf("subscribe %d within -subscribe-burst 2: %+v %+v", i+1, m, m.Error)
		case i == 2 && (m.Type != protocol.TypeError || m.Error == nil || m.Error.Code != protocol.ErrRateLimited || m.Error.RetryAfterMs < 1):
			t.Fatalf("subscribe 3 past -subscribe-burst 2 at -subscribe-rate 0.5: %+v %+v; want rate_limited with retryAfterMs", m, m.Error)
		}
		if i < 2 {
			send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: "feed"})
			next(string(protocol.TypeUnsubscribed))
		}
	}
	if got := get(t, "http://"+n.addr+"/metrics", 200); !strings.Contains(got, "\nwsready_subscribe_rate_limited_total 1\n") {
		t.Errorf("/metrics has no wsready_subscribe_rate_limited_total 1")
	}

	// A session no stream came for is gone after -http-attach-timeout.
	resp, err := http.Post("http://"+n.addr+"/ws/session", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ Session string }
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || sess.Session == "" {
		t.Fatalf("POST /ws/session: %d %v %+v", resp.StatusCode, err, sess)
	}
	time.Sleep(2500 * time.Millisecond) // the 1 s timeout, and room for a loaded machine; well under the 5 s default
	get(t, "http://"+n.addr+"/ws/sse?session="+sess.Session, 404)
}

// get fetches url and fails unless it answers want; it returns the body.
func get(t *testing.T, url string, want int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d", url, resp.StatusCode, want)
	}
	return string(b)
}
