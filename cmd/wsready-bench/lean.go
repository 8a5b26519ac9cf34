//go:build !js

package main

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// leanServer is the baseline the product is measured against: the same
// protocol subset (a ping to every connection every ping interval, a
// subscribe answered with subscribed, an update every 250 ms to every
// subscriber) with the least machinery: one goroutine per connection (its
// reader) and one goroutine that writes every ping and update to every
// connection in turn. No queues, no limits, no switches, no stats: it is not
// a product, only a yardstick.
type leanServer struct {
	ping    time.Duration
	updates bool
	pingMsg []byte

	mu    sync.Mutex
	conns map[*leanConn]struct{}
}

type leanConn struct {
	ws         *websocket.Conn
	subscribed bool // guarded by leanServer.mu
}

// newLeanServer returns the baseline; run writes its pings and updates.
func newLeanServer(ping time.Duration, updates bool) *leanServer {
	return &leanServer{ping: ping, updates: updates, conns: map[*leanConn]struct{}{},
		pingMsg: []byte(`{"type":"ping","intervalMs":` + strconv.FormatInt(ping.Milliseconds(), 10) + `}`)}
}

func (s *leanServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c := &leanConn{ws: ws}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		ws.CloseNow()
	}()
	ctx := r.Context()
	s.write(c, s.pingMsg) // the first ping at once, as wsready sends it
	for {
		var m wsreadyFrame
		if err := wsjson.Read(ctx, ws, &m); err != nil {
			return // the peer left, or sent what is not JSON (closed with 1007)
		}
		if m.Type == "subscribe" {
			s.mu.Lock()
			c.subscribed = true
			s.mu.Unlock()
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			wsjson.Write(wctx, ws, wsreadyFrame{Type: "subscribed", Topic: m.Topic})
			cancel()
		}
	}
}

// write writes one of run's frames: each is encoded once and the same
// bytes go to every connection, so it is written as bytes, not with
// wsjson (which would encode it again per connection).
func (s *leanServer) write(c *leanConn, frame []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.ws.Write(ctx, websocket.MessageText, frame)
}

// run writes a ping every ping interval to every connection and, with
// updates on, an update every 250 ms to every subscriber, from this one
// goroutine, until ctx ends.
func (s *leanServer) run(ctx context.Context) {
	pt := time.NewTicker(s.ping)
	defer pt.Stop()
	var updates <-chan time.Time // nil with updates off: never ready
	if s.updates {
		ut := time.NewTicker(250 * time.Millisecond)
		defer ut.Stop()
		updates = ut.C
	}
	var seq int64
	var targets []*leanConn
	for {
		var frame []byte
		subscribersOnly := true
		select {
		case <-ctx.Done():
			return
		case <-pt.C:
			frame, subscribersOnly = s.pingMsg, false
		case now := <-updates:
			seq++
			frame = []byte(`{"type":"update","topic":"feed","seq":` + strconv.FormatInt(seq, 10) + `,"data":{"ts":` +
				strconv.FormatInt(now.UnixMilli(), 10) + `,"value":` + strconv.FormatInt(50+(seq*37)%50, 10) + `}}`)
		}
		s.mu.Lock()
		targets = targets[:0]
		for c := range s.conns {
			if c.subscribed || !subscribersOnly {
				targets = append(targets, c)
			}
		}
		s.mu.Unlock()
		for _, c := range targets {
			s.write(c, frame)
		}
		clear(targets)
	}
}
