package client

import (
	"slices"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The request registry (stage 1): every request settles. Without it (stage
// 0) a request waits for its response forever.

type pendingRequest struct {
	id       uint64
	epoch    SocketID
	deadline time.Time // zero without Registry
	done     bool
}

// Request sends a request and returns its id; the outcome arrives later as
// an EffSettle effect with that id (possibly among this call's effects).
// An empty method or params that are not valid JSON settle at once with
// ErrInvalidRequest.
// Ids only ever increase, across reconnects too, so a late response to an
// old request matches nothing and is dropped. A client that is not READY
// settles the request at once with ErrNotReady: it was never sent.
func (c *Core) Request(method string, params []byte, now time.Time) uint64 {
	return c.RequestWithTimeout(method, params, 0, now)
}

// RequestWithTimeout is Request with a timeout of its own (with Registry); 0
// means Config.RequestTimeout, a negative one is invalid.
func (c *Core) RequestWithTimeout(method string, params []byte, timeout time.Duration, now time.Time) uint64 {
	invalid := ""
	switch {
	case method == "":
		invalid = "method must not be empty"
	case params != nil && !protocol.Valid(params):
		invalid = "params are not valid JSON"
	}
	return c.call(protocol.Message{Type: protocol.TypeRequest, Method: method, Params: params}, invalid, timeout, now)
}

// Publish appends data (JSON) to topic on the server; the response's
// result is {"seq":N}, the seq the update got. It settles like a request
// (same id space, timeouts and errors); an invalid topic name or data that
// is not valid JSON settle at once with ErrInvalidRequest.
func (c *Core) Publish(topic string, data []byte, timeout time.Duration, now time.Time) uint64 {
	invalid := ""
	switch {
	case !protocol.ValidTopic(topic):
		invalid = "invalid topic name"
	case data == nil || !protocol.Valid(data):
		invalid = "data is not valid JSON"
	}
	return c.call(protocol.Message{Type: protocol.TypePublish, Topic: topic, Data: data}, invalid, timeout, now)
}

// call sends a request or a publish (m, without its id) and registers it.
func (c *Core) call(m protocol.Message, invalid string, timeout time.Duration, now time.Time) uint64 {
	c.nextID++
	id := c.nextID
	switch {
	case invalid != "":
		c.settleErr(id, &RequestError{Kind: ErrInvalidRequest, ID: id, Detail: invalid})
	case timeout < 0:
		c.settleErr(id, &RequestError{Kind: ErrInvalidRequest, ID: id, Detail: "timeout must not be negative"})
	case c.ended == Stopped:
		c.settleErr(id, &RequestError{Kind: ErrNotReady, ID: id, Detail: "client stopped"})
	case c.ended != NotEnded:
		c.settleErr(id, &RequestError{Kind: ErrNotReady, ID: id, Detail: "session " + string(c.ended)})
	case !c.state().Ready:
		c.settleErr(id, &RequestError{Kind: ErrNotReady, ID: id, Detail: "connection not ready"})
	default:
		p := &pendingRequest{id: id, epoch: c.current}
		if c.cfg.Features.Registry {
			if timeout == 0 {
				timeout = c.cfg.RequestTimeout
			}
			p.deadline = now.Add(timeout)
			// Kept in deadline order: requests may have timeouts of their own.
			i, _ := slices.BinarySearchFunc(c.queue, p.deadline, func(q *pendingRequest, t time.Time) int {
				if q.deadline.After(t) {
					return 1
				}
				return -1
			})
			c.queue = slices.Insert(c.queue, i, p)
		}
		c.pending[id] = p
		m.ID = id
		if c.cfg.Features.Registry && m.Type == protocol.TypeRequest {
			m.TimeoutMs = timeoutMs(p.deadline.Sub(now))
		}
		c.send(m)
	}
	c.after(now)
	return id
}

// Cancel forgets request id without settling it, for a driver whose caller
// gave up (a cancelled context). A response that comes later is dropped.
func (c *Core) Cancel(id uint64, now time.Time) {
	if p, ok := c.pending[id]; ok {
		p.done = true
		delete(c.pending, id)
	}
	c.after(now)
}

// Pending is the number of requests in flight.
func (c *Core) Pending() int { return len(c.pending) }

func (c *Core) onResponse(m protocol.Message) {
	p, ok := c.pending[m.ID]
	if !ok {
		c.stats.DroppedResponses++
		c.trace("response-dropped", c.current, "response "+utoa(m.ID)+" matches no pending request: dropped")
		return
	}
	p.done = true
	delete(c.pending, m.ID)
	if m.Error != nil || m.Type == protocol.TypeError {
		c.settleErr(m.ID, &ServerError{ID: m.ID, Code: m.Error.Code, Message: m.Error.Message,
			RetryAfter: time.Duration(min(m.Error.RetryAfterMs, protocol.MaxTimeoutMs)) * time.Millisecond})
		return
	}
	c.emit(Effect{Kind: EffSettle, ID: m.ID, Result: m.Result})
}

func (c *Core) expireRequests(now time.Time) {
	for len(c.queue) > 0 {
		p := c.queue[0]
		if !p.done && p.deadline.After(now) {
			return
		}
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if p.done {
			continue
		}
		p.done = true
		delete(c.pending, p.id)
		c.trace("request-timeout", c.current, "request "+utoa(p.id)+" timed out after "+c.cfg.RequestTimeout.String())
		c.settleErr(p.id, &RequestError{Kind: ErrRequestTimeout, ID: p.id, Epoch: uint64(p.epoch)})
	}
	if len(c.queue) == 0 {
		c.queue = nil // let the backing array go
	}
}

// rejectAll settles every pending request with ErrConnectionClosed. Without
// Registry they stay pending forever, unless the client is stopping.
func (c *Core) rejectAll(detail string, stopping bool) {
	if !c.cfg.Features.Registry && !stopping {
		return
	}
	// In id order, so every run settles them the same way.
	ids := make([]uint64, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := c.pending[id]
		p.done = true
		delete(c.pending, id)
		c.settleErr(id, &RequestError{Kind: ErrConnectionClosed, ID: id, Epoch: uint64(p.epoch), Detail: detail})
	}
	c.queue = nil
}

func (c *Core) nextRequestDeadline() time.Time {
	for len(c.queue) > 0 && c.queue[0].done {
		c.queue[0] = nil
		c.queue = c.queue[1:]
	}
	if len(c.queue) == 0 {
		return time.Time{}
	}
	return c.queue[0].deadline
}

// timeoutMs is a request's timeoutMs: what is left of its timeout, in
// whole milliseconds rounded up, within the protocol's 1 ms to 1 h (the
// server caps it further).
func timeoutMs(left time.Duration) int64 {
	ms := (left + time.Millisecond - 1) / time.Millisecond
	return int64(min(max(ms, 1), protocol.MaxTimeoutMs))
}

func (c *Core) settleErr(id uint64, err error) {
	c.emit(Effect{Kind: EffSettle, ID: id, Err: err})
}
