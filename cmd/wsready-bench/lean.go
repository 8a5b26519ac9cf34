//go:build !js

package main

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// leanServer is the baseline the product is measured against: the same
// protocol subset (ping every second, a subscribe answered with subscribed,
// an update every 250 ms) with the least machinery: one goroutine per
// connection (its reader), one shared ticker that writes every ping and
// update to every subscribed connection in turn. No queues, no limits, no
// switches, no stats: it is not a product, only a yardstick.
type leanServer struct {
	mu    sync.Mutex
	conns map[*leanConn]struct{}
}

type leanConn struct {
	ws         *websocket.Conn
	subscribed bool // guarded by leanServer.mu
}

func newLeanServer(ctx context.Context) *leanServer {
	s := &leanServer{conns: map[*leanConn]struct{}{}}
	go s.tick(ctx)
	return s
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
	s.write(c, []byte(`{"type":"ping","intervalMs":1000}`))
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if len(b) > 0 && containsSubscribe(b) {
			s.mu.Lock()
			c.subscribed = true
			s.mu.Unlock()
			s.write(c, []byte(`{"type":"subscribed","topic":"feed"}`))
		}
	}
}

func containsSubscribe(b []byte) bool {
	const key = `"subscribe"`
	for i := 0; i+len(key) <= len(b); i++ {
		if string(b[i:i+len(key)]) == key {
			return true
		}
	}
	return false
}

func (s *leanServer) write(c *leanConn, frame []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.ws.Write(ctx, websocket.MessageText, frame)
}

// tick writes a ping every second and an update every 250 ms to every
// subscribed connection, from this one goroutine.
func (s *leanServer) tick(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var seq int64
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			seq++
			update := []byte(`{"type":"update","topic":"feed","seq":` + strconv.FormatInt(seq, 10) + `,"data":{"ts":` +
				strconv.FormatInt(now.UnixMilli(), 10) + `,"value":` + strconv.FormatInt(50+(seq*37)%50, 10) + `}}`)
			ping := n%4 == 0
			s.mu.Lock()
			targets := make([]*leanConn, 0, len(s.conns))
			for c := range s.conns {
				if c.subscribed {
					targets = append(targets, c)
				}
			}
			s.mu.Unlock()
			for _, c := range targets {
				if ping {
					s.write(c, []byte(`{"type":"ping","intervalMs":1000}`))
				}
				s.write(c, update)
			}
		}
	}
}
