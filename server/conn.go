//go:build !js

package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// conn is one WebSocket connection. Its handler goroutine reads; one writer
// goroutine owns all writes (pings, feed, replies) so frames never interleave.
type conn struct {
	id       uint64
	s        *Server
	ws       *websocket.Conn
	gc       *gatedConn
	remote   string
	openedAt time.Time
	ctx      context.Context
	cancel   context.CancelFunc
	out      chan []byte
	flap     chan struct{}

	closeOnce sync.Once

	// Guarded by s.mu.
	subscribed bool
	framesIn   uint64
	errorsSent uint64
}

func (c *conn) run() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writeLoop()
	}()
	c.readLoop()
	c.cancel()
	wg.Wait()
	c.s.unregister(c)
	c.ws.CloseNow()
}

func (c *conn) readLoop() {
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			code := websocket.CloseStatus(err)
			if code == -1 && !errors.Is(err, context.Canceled) {
				c.s.log.Debug("read ended", "conn", c.id, "err", err)
			}
			return
		}
		c.s.mu.Lock()
		c.framesIn++
		c.s.mu.Unlock()
		if typ != websocket.MessageText {
			c.sendError(0, protocol.ErrNotText, "binary frames are not part of the protocol")
			continue
		}
		c.handle(data)
	}
}

// handle serves one frame. A panic here is this connection's problem only:
// it is logged and answered with an error frame, and the connection stays.
func (c *conn) handle(data []byte) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("handler panic", "conn", c.id, "panic", fmt.Sprint(r))
			c.sendError(0, protocol.ErrInternal, "internal error")
		}
	}()
	m, err := protocol.Decode(data)
	if err != nil {
		var de *protocol.DecodeError
		errors.As(err, &de)
		c.sendError(0, de.Code, de.Error())
		return
	}
	switch m.Type {
	case protocol.TypeSubscribe:
		c.subscribe(m.Topic)
	case protocol.TypeRequest:
		c.request(m)
	default:
		c.sendError(m.ID, protocol.ErrUnexpected, "the server does not accept "+string(m.Type)+" frames")
	}
}

func (c *conn) subscribe(topic string) {
	if topic != protocol.DefaultTopic {
		c.sendError(0, protocol.ErrWrongType, "unknown topic; the server has "+protocol.DefaultTopic)
		return
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serviceDown {
		return // the service is down: subscribes are ignored, not refused
	}
	c.subscribed = true
	c.enqueue(protocol.Encode(protocol.Message{Type: protocol.TypeSubscribed, Topic: topic}))
}

func (c *conn) request(m protocol.Message) {
	s := c.s
	s.mu.Lock()
	down, slow := s.serviceDown, s.slowReplies
	s.mu.Unlock()
	if down {
		return // the service is down: requests go unanswered
	}
	resp := protocol.Message{Type: protocol.TypeResponse, ID: m.ID}
	if s.panicMethod != "" && m.Method == s.panicMethod {
		panic("test panic in a handler")
	}
	switch m.Method {
	case "echo":
		resp.Result = m.Params
		if resp.Result == nil {
			resp.Result = []byte("null")
		}
	case "time":
		resp.Result = []byte(`{"unixMs":` + itoa64(s.opts.Now().UnixMilli()) + `}`)
	default:
		resp.Error = &protocol.ErrorBody{Code: protocol.ErrUnknownMethod, Message: "methods are echo and time"}
	}
	frame := protocol.Encode(resp)
	if !slow {
		c.send(frame)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(s.opts.SlowReplyDelay)
		defer t.Stop()
		select {
		case <-t.C:
			c.send(frame)
		case <-c.ctx.Done():
		}
	}()
}

func (c *conn) sendError(id uint64, code, msg string) {
	c.s.mu.Lock()
	c.errorsSent++
	c.s.mu.Unlock()
	c.send(protocol.Encode(protocol.Message{Type: protocol.TypeError, ID: id, Error: &protocol.ErrorBody{Code: code, Message: msg}}))
}

func (c *conn) send(frame []byte) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.enqueue(frame)
}

// enqueue queues a frame without blocking; s.mu must be held. A client too
// slow to keep up is closed rather than allowed to grow the server's memory.
func (c *conn) enqueue(frame []byte) {
	select {
	case c.out <- frame:
	default:
		c.s.wg.Add(1)
		go func() {
			defer c.s.wg.Done()
			c.closeWith(protocol.CloseSlowConsumer, "send queue overflow")
		}()
	}
}

func (c *conn) writeLoop() {
	s := c.s
	ping := protocol.Encode(protocol.Message{Type: protocol.TypePing, IntervalMs: s.opts.PingInterval.Milliseconds()})
	tick := time.NewTicker(s.opts.PingInterval)
	defer tick.Stop()
	var flapC <-chan time.Time
	write := func(frame []byte) bool {
		return c.ws.Write(c.ctx, websocket.MessageText, frame) == nil
	}
	if !write(ping) {
		return
	}
	for {
		select {
		case <-c.ctx.Done():
			return
		case frame := <-c.out:
			if !write(frame) {
				return
			}
		case <-tick.C:
			if s.gate.isFrozen() {
				continue // a frozen server sends nothing, not even late pings
			}
			if !write(ping) {
				return
			}
		case <-c.flap:
			t := time.NewTimer(s.opts.FlapAfter)
			defer t.Stop()
			flapC = t.C
		case <-flapC:
			c.closeWith(protocol.CloseFlapping, "flapping")
			return
		}
	}
}

// closeWith closes the connection with a close handshake. It may block for
// up to coder/websocket's close timeout, so callers run it off hot paths.
func (c *conn) closeWith(code int, reason string) {
	c.closeOnce.Do(func() {
		if err := c.ws.Close(websocket.StatusCode(code), reason); err != nil {
			c.s.log.Debug("close", "conn", c.id, "err", err)
		}
		c.cancel()
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
