//go:build !js

package server

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The request path: a request frame is answered by its method, found in
// the server's method table, at once or, while Slow replies is on,
// SlowReplyDelay later.

// method answers one request from its params (raw JSON, nil when the frame
// had none): a result that is valid JSON, or an error the client receives
// as the response's error.
type method func(s *Server, params json.RawMessage) (json.RawMessage, *protocol.ErrorBody)

// defaultMethods are the methods every server answers today: the demo's
// echo and time. The table is the server's own (Server.methods), so a
// later change can let an application register its methods in it.
func defaultMethods() map[string]method {
	return map[string]method{
		// echo answers with its params, null without.
		"echo": func(_ *Server, params json.RawMessage) (json.RawMessage, *protocol.ErrorBody) {
			if params == nil {
				return json.RawMessage("null"), nil
			}
			return params, nil
		},
		// time answers with the server's clock, {"unixMs": N}.
		"time": func(s *Server, _ json.RawMessage) (json.RawMessage, *protocol.ErrorBody) {
			return json.RawMessage(`{"unixMs":` + itoa64(s.opts.Now().UnixMilli()) + `}`), nil
		},
	}
}

// unknownMethod is the error for a method the table does not hold; it
// names the ones it does ("methods are echo and time").
func unknownMethod(table map[string]method) *protocol.ErrorBody {
	names := slices.Sorted(maps.Keys(table))
	list := names[len(names)-1]
	if len(names) > 1 {
		list = strings.Join(names[:len(names)-1], ", ") + " and " + list
	}
	return &protocol.ErrorBody{Code: protocol.ErrUnknownMethod, Message: "methods are " + list}
}

func (c *conn) request(m protocol.Message) {
	s := c.s
	start := time.Now()
	s.mu.Lock()
	down, slow := s.serviceDown, s.slowReplies
	s.mu.Unlock()
	if down {
		return // the service is down: requests go unanswered
	}
	resp, _ := c.once(m.Key, func(ctx context.Context) (protocol.ResponseFrame, bool) { // idempotency.go
		resp := protocol.ResponseFrame{Type: protocol.TypeResponse}
		if e := c.authorize(ctx, Action{Kind: ActRequest, Method: m.Method}); e != nil {
			resp.Error = e
		} else if fn, ok := s.methods[m.Method]; ok {
			resp.Result, resp.Error = fn(s, m.Params)
		} else {
			resp.Error = unknownMethod(s.methods)
		}
		return resp, true
	})
	resp.ID = m.ID
	if !slow {
		c.reply(resp)
		s.metrics.requests.Observe(time.Since(start).Seconds())
		return
	}
	if !c.delayReply(c.encode(resp)) {
		c.reply(protocol.ResponseFrame{Type: protocol.TypeResponse, ID: m.ID, Error: &protocol.ErrorBody{
			Code: protocol.ErrTooManyPending, Message: "too many unanswered requests on this connection (" + strconv.Itoa(s.opts.MaxPendingReplies) + ")"}})
	}
}

// delayReply sends frame SlowReplyDelay from now, without a goroutine while
// it waits. It reports false when MaxPendingReplies are already waiting.
func (c *conn) delayReply(frame []byte) bool {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	if c.slowOff {
		return true // the connection is ending: nobody will read it
	}
	if len(c.slow) >= c.s.opts.MaxPendingReplies {
		return false
	}
	if c.slow == nil {
		c.slow = map[*time.Timer]struct{}{}
	}
	var t *time.Timer
	t = time.AfterFunc(c.s.opts.SlowReplyDelay, func() {
		// Offered under slowMu, so once stopSlowReplies returns no
		// callback is still at work on this connection.
		c.slowMu.Lock()
		defer c.slowMu.Unlock()
		if _, live := c.slow[t]; live {
			delete(c.slow, t)
			c.offer(frame)
		}
	})
	c.slow[t] = struct{}{}
	return true
}

func (c *conn) stopSlowReplies() {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	c.slowOff = true
	for t := range c.slow {
		t.Stop()
	}
	c.slow = nil
}
