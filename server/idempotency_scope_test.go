//go:build !js

package server

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// floodKeyed publishes n tiny keyed updates to topic from the loopback
// address ip on one connection, as fast as they go, and waits for every
// answer. It returns how long that took.
func floodKeyed(t *testing.T, f *fixture, ip, topic string, n int) time.Duration {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, f.url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	defer ws.CloseNow()
	start := time.Now()
	wrote := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			m := protocol.Message{Type: protocol.TypePublish, ID: uint64(i), Topic: topic, Data: []byte(`1`), Key: "f-" + strconv.Itoa(i)}
			if err := ws.Write(ctx, websocket.MessageText, protocol.Encode(m)); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	for got := 0; got < n; {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("flood from %s: %d of %d answers, then %v", ip, got, n, err)
		}
		if m, err := protocol.Decode(b); err == nil && m.Type == protocol.TypeResponse {
			if m.Error != nil {
				t.Fatalf("flood from %s: answer %+v", ip, m.Error)
			}
			got++
		}
	}
	if err := <-wrote; err != nil {
		t.Fatalf("flood from %s: %v", ip, err)
	}
	return time.Since(start)
}

// publishWait publishes data to topic with key (none: "") from p and
// returns the answer.
func publishWait(p *peer, id uint64, topic, data, key string) protocol.Message {
	p.t.Helper()
	p.send(protocol.Message{Type: protocol.TypePublish, ID: id, Topic: topic, Data: []byte(data), Key: key})
	r := p.next(protocol.TypeResponse, 2*time.Second)
	if r.ID != id {
		p.t.Fatalf("answer %+v, want id %d", r, id)
	}
	return r
}

// The idempotency cache was one LRU for the node: another address's
// 11,000 tiny keyed publishes (0.4 s) evicted A's key, and A's retry ran
// twice. Keys are now kept per scope (a user, or an anonymous session),
// each with its own bound, so another scope's flood evicts only its own.
func TestAnotherScopesKeyFloodDoesNotEvictYourKey(t *testing.T) {
	f := newFixture(t, &Options{Publish: true}, DemoOptions{NoFeed: true})
	a := f.dial() // 127.0.0.1, anonymous: its session is its scope
	a.next(protocol.TypeWelcome, time.Second)
	if r := publishWait(a, 1, "room", `{"text":"pay"}`, "a-0123456789abcdef"); string(r.Result) != `{"seq":1}` {
		t.Fatalf("A's publish: %+v", r)
	}
	took := floodKeyed(t, f, "127.0.0.2", "flood", 11000)
	t.Logf("11,000 keyed publishes from another address answered in %v", took)
	if r := publishWait(a, 2, "room", `{"text":"pay"}`, "a-0123456789abcdef"); string(r.Result) != `{"seq":1}` || r.Error != nil {
		t.Fatalf("A's retry after the flood: %+v, want the first answer, seq 1 (it ran again)", r)
	}
	if r := publishWait(a, 3, "room", `{"text":"next"}`, ""); string(r.Result) != `{"seq":2}` {
		t.Fatalf("the next publish to room: %+v, want seq 2 (A's ran once)", r)
	}
	if n := f.srv.idem.len(); n > 10000 {
		t.Fatalf("%d keys kept, past the node's bound", n)
	}
}

// A key reused with other content (another topic, other data, other
// params) returned the first call's result and ran nothing. It is now
// refused with idempotency_key_reused, and runs nothing.
func TestAKeyReusedForOtherContentIsRefused(t *testing.T) {
	f := newFixture(t, &Options{Publish: true}, DemoOptions{NoFeed: true})
	p := f.dial()
	p.next(protocol.TypeWelcome, time.Second)
	const reused = "idempotency_key_reused"
	if r := publishWait(p, 1, "room", `{"n":1}`, "k1"); string(r.Result) != `{"seq":1}` {
		t.Fatalf("first publish: %+v", r)
	}
	for _, c := range []struct{ name, topic, data string }{
		{"another topic", "other", `{"n":1}`},
		{"other data", "room", `{"n":2}`},
	} {
		r := publishWait(p, 2, c.topic, c.data, "k1")
		if r.Error == nil || r.Error.Code != reused {
			t.Errorf("k1 with %s: %+v, want error %s", c.name, r, reused)
		}
	}
	// Nothing ran: other's first update is seq 1, room's next seq 2.
	if r := publishWait(p, 3, "other", `{"n":1}`, ""); string(r.Result) != `{"seq":1}` {
		t.Errorf("other after the reuse: %+v, want seq 1", r)
	}
	if r := publishWait(p, 4, "room", `{"n":3}`, ""); string(r.Result) != `{"seq":2}` {
		t.Errorf("room after the reuse: %+v, want seq 2", r)
	}
	// The same key, same content: the first answer.
	if r := publishWait(p, 5, "room", `{"n":1}`, "k1"); string(r.Result) != `{"seq":1}` {
		t.Errorf("k1 again: %+v, want the first answer", r)
	}
	// A request's key is bound to its method and params.
	call := func(id uint64, method, params string) protocol.Message {
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: method, Params: []byte(params), Key: "k2"})
		return p.next(protocol.TypeResponse, 2*time.Second)
	}
	if r := call(6, "echo", `{"a":1}`); string(r.Result) != `{"a":1}` {
		t.Fatalf("echo: %+v", r)
	}
	if r := call(7, "echo", `{"a":2}`); r.Error == nil || r.Error.Code != reused {
		t.Errorf("k2 with other params: %+v, want error %s", r, reused)
	}
	if r := call(8, "time", `{"a":1}`); r.Error == nil || r.Error.Code != reused {
		t.Errorf("k2 with another method: %+v, want error %s", r, reused)
	}
	if r := call(9, "echo", `{"a":1}`); string(r.Result) != `{"a":1}` || r.Error != nil {
		t.Errorf("k2 again: %+v", r)
	}
}
