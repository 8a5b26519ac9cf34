//go:build !js

package native

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"
)

// presenceServer is a WebSocket server that serves each connection after
// delay (welcome, then pings every 200 ms), answers a subscribe with
// subscribed and, when it asks for presence, a join of "ann"; answers
// wsready.presence with ann, and any other request with the key it
// carried. It records the requests it got.
type presenceServer struct {
	mu       sync.Mutex
	requests []protocol.Message
}

func (ps *presenceServer) start(t *testing.T, delay time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		var wmu sync.Mutex
		write := func(m protocol.Message) {
			wmu.Lock()
			defer wmu.Unlock()
			ws.Write(ctx, websocket.MessageText, protocol.Encode(m))
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		write(protocol.Message{Type: protocol.TypeWelcome, Session: "s1"})
		write(protocol.Message{Type: protocol.TypePing, IntervalMs: 200})
		go func() {
			for {
				select {
				case <-time.After(200 * time.Millisecond):
					write(protocol.Message{Type: protocol.TypePing, IntervalMs: 200})
				case <-ctx.Done():
					return
				}
			}
		}()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			m, err := protocol.Decode(b)
			if err != nil {
				continue
			}
			switch m.Type {
			case protocol.TypeSubscribe:
				write(protocol.Message{Type: protocol.TypeSubscribed, Topic: m.Topic, From: 1})
				if m.Presence {
					write(protocol.Message{Type: protocol.TypePresence, Topic: m.Topic, Event: protocol.PresenceJoin, User: "ann"})
				}
			case protocol.TypeRequest:
				ps.mu.Lock()
				ps.requests = append(ps.requests, m)
				ps.mu.Unlock()
				res := []byte(`{"key":"` + m.Key + `"}`)
				if m.Method == protocol.MethodPresence {
					res = []byte(`{"topic":"room","users":[{"user":"ann","conns":2}],"total":1,"truncated":false}`)
				}
				write(protocol.Message{Type: protocol.TypeResponse, ID: m.ID, Result: res})
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// Presence: a subscribe with Presence asks the server for it and its
// events reach OnPresence; Presence(topic) is the reserved request and
// reads its result.
func TestNativePresence(t *testing.T) {
	var ps presenceServer
	url := ps.start(t, 0)
	events := make(chan client.PresenceEvent, 4)
	c, err := Dial(context.Background(), url, &Options{OnPresence: func(p client.PresenceEvent) { events <- p }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	stop, err := c.SubscribeWith(ctx, "room", client.SubscribeOptions{Presence: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	select {
	case p := <-events:
		if p != (client.PresenceEvent{Topic: "room", Event: "join", User: "ann"}) {
			t.Fatalf("presence %+v", p)
		}
	case <-ctx.Done():
		t.Fatal("no presence event")
	}
	who, err := c.Presence(ctx, "room")
	if err != nil {
		t.Fatal(err)
	}
	if who.Topic != "room" || who.Total != 1 || len(who.Users) != 1 || who.Users[0] != (protocol.PresenceUser{User: "ann", Conns: 2}) {
		t.Fatalf("presence result %+v", who)
	}
	ps.mu.Lock()
	last := ps.requests[len(ps.requests)-1]
	ps.mu.Unlock()
	var params protocol.PresenceParams
	if last.Method != protocol.MethodPresence || json.Unmarshal(last.Params, &params) != nil || params.Topic != "room" {
		t.Fatalf("the presence request: %s %s", last.Method, last.Params)
	}
}

// A request made before READY fails with NotReady, unless it asks to
// wait (Queue): then it goes out once READY, with a key (its own, or one
// drawn for it).
func TestNativeQueuedRequestsCarryKeys(t *testing.T) {
	var ps presenceServer
	url := ps.start(t, 400*time.Millisecond)
	c, err := Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Request(ctx, "echo", nil); !errors.Is(err, client.ErrNotReady) {
		t.Fatalf("a request before READY: %v", err)
	}
	type out struct {
		res []byte
		err error
	}
	mine, drawn := make(chan out, 1), make(chan out, 1)
	go func() {
		r, err := c.RequestWith(ctx, "echo", nil, client.RequestOptions{Queue: true, Key: "order-42", Timeout: 5 * time.Second})
		mine <- out{r, err}
	}()
	go func() {
		r, err := c.RequestWith(ctx, "echo", nil, client.RequestOptions{Queue: true})
		drawn <- out{r, err}
	}()
	a, b := <-mine, <-drawn
	if a.err != nil || string(a.res) != `{"key":"order-42"}` {
		t.Fatalf("with its key: %s %v", a.res, a.err)
	}
	var k struct{ Key string }
	if b.err != nil || json.Unmarshal(b.res, &k) != nil || len(k.Key) != 16 || !protocol.ValidKey(k.Key) {
		t.Fatalf("with a drawn key: %s %v", b.res, b.err)
	}
	if !c.State().Ready {
		t.Fatal("the queued requests were answered before READY")
	}
}

// The native client always leads: a follower is refused. It speaks the
// HTTP transport when asked ([WebSocket, HTTP] is accepted), but nil
// Transports is WebSocket alone (no HTTP probe is ever asked for).
func TestNativeRefusesTheBrowsersTabs(t *testing.T) {
	cfg := stages.Must(8)
	cfg.Follower = true
	_, err := Dial(context.Background(), "ws://127.0.0.1:9/ws", &Options{Config: cfg})
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Option != "Config" {
		t.Errorf("follower: %v", err)
	}
	cfg = stages.Must(8)
	cfg.Transports = []client.Transport{client.TransportWebSocket, client.TransportHTTP}
	c, err := Dial(context.Background(), "ws://127.0.0.1:9/ws", &Options{Config: cfg})
	if err != nil {
		t.Fatalf("both transports refused: %v", err)
	}
	c.Close()
	o, err := (*Options)(nil).cloneWithDefaults()
	if err != nil || len(o.Config.Transports) != 1 || o.Config.Transports[0] != client.TransportWebSocket {
		t.Fatalf("default transports %v, %v", o.Config.Transports, err)
	}
}
