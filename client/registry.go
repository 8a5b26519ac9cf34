package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The request registry (stage 1): every request settles. Without it (stage
// 0) a request waits for its response forever.

type pendingRequest struct {
	id       uint64
	epoch    SocketID  // the socket it was sent on (0: not sent, or forwarded)
	deadline time.Time // zero without Registry
	done     bool
	sent     bool // on the wire (or forwarded to the leader tab) now
	everSent bool // it was sent at least once: its outcome is unknown
	queued   bool // it waits for READY and is sent again after a reconnect (queue.go)
	// msg is the frame without its id and timeout, kept while it may still
	// be sent (queued, or waiting).
	msg protocol.Message
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
	return c.RequestWith(method, params, RequestOptions{Timeout: timeout}, now)
}

// RequestOptions are a request's or a publish's options.
type RequestOptions struct {
	// Timeout is its own timeout (with Registry); 0 means
	// Config.RequestTimeout, a negative one is invalid.
	Timeout time.Duration
	// Queue makes it wait for READY, up to Timeout, instead of settling
	// with ErrNotReady, and send it again after a reconnect until it is
	// answered, with the same idempotency key (queue.go).
	// Config.QueueWhileNotReady queues every one. Needs Registry.
	Queue bool
	// Key is its idempotency key (protocol.ValidKey); "" with Queue: one
	// is drawn from Config.Rand.
	Key string
}

// RequestWith is Request with options.
func (c *Core) RequestWith(method string, params []byte, o RequestOptions, now time.Time) uint64 {
	invalid := ""
	switch {
	case method == "":
		invalid = "method must not be empty"
	case params != nil && !protocol.Valid(params):
		invalid = "params are not valid JSON"
	}
	return c.call(protocol.Message{Type: protocol.TypeRequest, Method: method, Params: params}, invalid, o, now)
}

// Publish appends data (JSON) to topic on the server; the response's
// result is {"seq":N}, the seq the update got. It settles like a request
// (same id space, timeouts and errors); an invalid topic name or data that
// is not valid JSON settle at once with ErrInvalidRequest.
func (c *Core) Publish(topic string, data []byte, timeout time.Duration, now time.Time) uint64 {
	return c.PublishWith(topic, data, RequestOptions{Timeout: timeout}, now)
}

// PublishWith is Publish with options.
func (c *Core) PublishWith(topic string, data []byte, o RequestOptions, now time.Time) uint64 {
	invalid := ""
	switch {
	case !protocol.ValidTopic(topic):
		invalid = "invalid topic name"
	case data == nil || !protocol.Valid(data):
		invalid = "data is not valid JSON"
	}
	return c.call(protocol.Message{Type: protocol.TypePublish, Topic: topic, Data: data}, invalid, o, now)
}

// call sends a request or a publish (m, without its id) and registers it.
// One whose frame would exceed protocol.MaxFrameBytes (tooLarge) settles
// at once with ErrInvalidRequest, never sent.
func (c *Core) call(m protocol.Message, invalid string, o RequestOptions, now time.Time) uint64 {
	c.nextID++
	id := c.nextID
	queue := (o.Queue || c.cfg.QueueWhileNotReady) && c.cfg.on.Registry
	ready := c.state().Ready
	if tooLarge != nil && invalid == "" {
		invalid = tooLarge(m, id, o.Key, queue)
	}
	switch {
	case invalid != "":
		c.reject(id, ErrInvalidRequest, invalid)
	case o.Timeout < 0:
		c.reject(id, ErrInvalidRequest, "timeout must not be negative")
	case o.Key != "" && !protocol.ValidKey(o.Key):
		c.reject(id, ErrInvalidRequest, "an idempotency key is 1 to 64 of A-Z a-z 0-9 - _")
	case c.ended == Stopped:
		c.reject(id, ErrNotReady, "client stopped")
	case c.ended != NotEnded:
		c.reject(id, ErrNotReady, "session "+string(c.ended))
	case !ready && !queue:
		c.reject(id, ErrNotReady, "connection not ready")
	default:
		m.Key = o.Key
		if queue && m.Key == "" {
			m.Key = c.newKey()
		}
		p := &pendingRequest{id: id, queued: queue, msg: m}
		if c.cfg.on.Registry {
			timeout := o.Timeout
			if timeout == 0 {
				timeout = c.cfg.RequestTimeout
			}
			p.deadline = now.Add(timeout)
			// Kept in deadline order: requests may have timeouts of their
			// own. p goes after every one due at or before it. (A loop,
			// not slices.BinarySearchFunc and slices.Insert: the generic
			// functions' dictionaries put *pendingRequest, and with it
			// time.Time, in an interface, which kept time's formatting in
			// the browser client.)
			i, j := 0, len(c.queue)
			for i < j {
				h := int(uint(i+j) >> 1)
				if c.queue[h].deadline.After(p.deadline) {
					j = h
				} else {
					i = h + 1
				}
			}
			c.queue = append(c.queue, nil)
			copy(c.queue[i+1:], c.queue[i:])
			c.queue[i] = p
		}
		c.pending[id] = p
		if ready {
			c.sendPending(p, now)
		} else {
			c.trace("queued", 0, "request "+utoa(id)+" waits for READY")
			c.waiting = append(c.waiting, p)
		}
	}
	c.after(now)
	return id
}

// sendPending puts a registered request on the wire: on the current
// socket, or for a follower tab to the leader (tabs.go).
func (c *Core) sendPending(p *pendingRequest, now time.Time) {
	m := p.msg
	m.ID = p.id
	if c.cfg.on.Registry && m.Type == protocol.TypeRequest {
		m.TimeoutMs = timeoutMs(p.deadline.Sub(now))
	}
	p.sent, p.everSent = true, true
	if !p.queued {
		p.msg = protocol.Message{} // never sent again: let the params go
	}
	if c.follower {
		p.epoch = 0
		c.stats.Forwarded++
		c.emit(Effect{Kind: EffForward, ID: p.id, Frame: protocol.Encode(m)})
		return
	}
	p.epoch = c.current
	c.send(m)
	c.appWaits(now) // heartbeat.go: a dead connection is found within 2 s
}

// Cancel forgets request id without settling it, for a driver whose caller
// gave up (a cancelled context). A response that comes later is dropped.
func (c *Core) Cancel(id uint64, now time.Time) {
	if p, ok := c.pending[id]; ok {
		p.done, p.msg = true, protocol.Message{}
		delete(c.pending, id)
		c.pruneWaiting()
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
	p.done, p.msg = true, protocol.Message{}
	delete(c.pending, m.ID)
	if m.Error != nil || m.Type == protocol.TypeError {
		c.settleErr(m.ID, &ServerError{ID: m.ID, Code: m.Error.Code, Message: m.Error.Message,
			RetryAfter: time.Duration(min(m.Error.RetryAfterMs, protocol.MaxTimeoutMs)) * time.Millisecond})
	} else {
		c.emit(Effect{Kind: EffSettle, ID: m.ID, Result: m.Result})
	}
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
		p.done, p.msg = true, protocol.Message{}
		delete(c.pending, p.id)
		if !p.everSent {
			// It waited for READY (queue.go) and never went out: safe to retry.
			c.trace("request-timeout", c.current, "request "+utoa(p.id)+" was not sent: not READY within its timeout")
			c.settleErr(p.id, &RequestError{Kind: ErrNotReady, ID: p.id, Detail: "not ready within its timeout"})
			continue
		}
		c.trace("request-timeout", c.current, "request "+utoa(p.id)+" timed out after "+c.cfg.RequestTimeout.String())
		c.settleErr(p.id, &RequestError{Kind: ErrRequestTimeout, ID: p.id, Epoch: uint64(p.epoch)})
	}
	if len(c.queue) == 0 {
		c.queue = nil // let the backing array go
	}
	c.pruneWaiting()
}

// pruneWaiting drops settled requests from the queue of those waiting for
// READY, so a client that stays down does not keep them.
func (c *Core) pruneWaiting() {
	w := c.waiting[:0]
	for _, p := range c.waiting {
		if !p.done {
			w = append(w, p)
		}
	}
	clear(c.waiting[len(w):]) // the settled ones are not kept alive
	c.waiting = w
}

// rejectOn settles the requests in flight on socket s (0: every one) with
// ErrConnectionClosed; a queued one goes back to wait for READY instead,
// to be sent again with its key (queue.go), unless the session is over.
// Stopping settles the ones still waiting too, with ErrNotReady (never
// sent) or ErrConnectionClosed. Without Registry they stay pending
// forever, unless the client is stopping.
func (c *Core) rejectOn(s SocketID, detail string, stopping bool) {
	if !c.cfg.on.Registry && !stopping {
		return
	}
	// In id order, so every run settles them the same way.
	ps := make([]*pendingRequest, 0, len(c.pending))
	for _, p := range c.pending {
		if stopping || (p.sent && (s == 0 || p.epoch == s)) {
			ps = append(ps, p)
		}
	}
	requeued, waited := false, len(c.waiting)
	for _, p := range sortByID(ps) {
		id := p.id
		if p.queued && !stopping {
			p.sent, p.epoch = false, 0
			c.waiting = append(c.waiting, p)
			requeued = true
			continue
		}
		p.done, p.msg = true, protocol.Message{}
		delete(c.pending, id)
		if !p.everSent {
			c.reject(id, ErrNotReady, detail)
			continue
		}
		c.settleErr(id, &RequestError{Kind: ErrConnectionClosed, ID: id, Epoch: uint64(p.epoch), Detail: detail})
	}
	if requeued {
		// Both runs are in id order (those that waited already, then the
		// requeued ones, taken in id order): merged, the queue is too.
		c.waiting = mergeByID(c.waiting[:waited], c.waiting[waited:])
	}
	if stopping || len(c.pending) == 0 {
		c.queue, c.waiting = nil, nil
	}
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

// reject settles request id with a *RequestError of kind (one function
// builds it for every site, for the reason emitClose gives).
func (c *Core) reject(id uint64, kind error, detail string) {
	c.settleErr(id, &RequestError{Kind: kind, ID: id, Detail: detail})
}

func (c *Core) settleErr(id uint64, err error) {
	c.emit(Effect{Kind: EffSettle, ID: id, Err: err})
}

// sortByID sorts requests by id: a merge sort on mergeByID (a
// disconnect's work, not a frame's), not slices.Sort, whose pdqsort for
// uint64 was code of its own in the browser client.
func sortByID(ps []*pendingRequest) []*pendingRequest {
	if len(ps) < 2 {
		return ps
	}
	h := len(ps) / 2
	return mergeByID(sortByID(ps[:h]), sortByID(ps[h:]))
}

// mergeByID merges two runs of requests, each in id order, into one.
func mergeByID(a, b []*pendingRequest) []*pendingRequest {
	out := make([]*pendingRequest, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].id < b[0].id {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}
