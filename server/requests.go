//go:build !js

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/wsready/wsready/protocol"
)

// The request path. A request frame names a method: the library's own
// (protocol.MethodPresence, answered from the presence table on the
// reader), or one of the application's (Options.Methods, plus echo and
// time once a Demo is made over the server). An application method runs on
// a goroutine of its own, owned by the connection: at most
// MaxConcurrentRequests at once per connection (the reader waits for one to
// end before it reads on), each with a context that ends with the request's
// own timeout or the connection, and the connection's end waits for them.
// The answer goes out at once or, while the Slow replies switch is on,
// SlowReplyDelay later.

// Method answers one request: its result is sent as the response's
// result, json.Marshal'ed (a json.RawMessage as it is; nil as null). An
// *Error is sent as the response's error with its code and message; any
// other error as internal with a fixed message (never the error's text,
// which may hold what the client must not see). A panic is internal too,
// logged with the method's name and without its params.
//
// ctx ends when the request's own timeout passes (its frame's timeoutMs,
// capped by Options.MaxRequestTimeout; Options.DefaultRequestTimeout
// without one) or its connection ends. The client is answered timeout at
// the deadline whatever the method does after it; a method that ignores
// ctx keeps one of its connection's MaxConcurrentRequests slots, and the
// connection's end waits for it. A method may run at the same time as
// others of the same connection.
type Method func(ctx context.Context, call *Call) (any, error)

// Call is one request, as a Method receives it.
type Call struct {
	// Identity is who the connection belongs to (zero: anonymous).
	Identity Identity
	// Method is the name the request called.
	Method string
	// Params are the request's params, valid JSON; nil when it had none.
	// The method may keep them: they are its own copy.
	Params json.RawMessage
	// Session is the connection's session id (the welcome frame's).
	Session string
	// Server is the server the request came to, so a method can publish
	// (Server.Publish) or ask who is on a topic (Server.Presence) without
	// keeping the *Server that New returned after its Options were made.
	Server *Server
}

// maxErrorMessageBytes bounds the message of an *Error a method or a hook
// returns: a longer one is cut (at a UTF-8 boundary).
const maxErrorMessageBytes = 1024

// maxResultBytes bounds a method's encoded result, so its response frame
// stays within protocol.MaxFrameBytes, which clients enforce: a larger one
// is answered internal and logged.
const maxResultBytes = protocol.MaxFrameBytes - 256

// checkMethods reports to bad every entry New refuses and returns a copy
// of ms (nil for none).
func checkMethods(ms map[string]Method, bad func(field, format string, args ...any)) map[string]Method {
	for name, fn := range ms {
		switch {
		case name == "":
			bad("Methods", "holds an empty method name")
		case strings.HasPrefix(name, protocol.ReservedMethodPrefix):
			bad("Methods", "holds %q: names starting %q are the library's", name, protocol.ReservedMethodPrefix)
		case !utf8.ValidString(name):
			bad("Methods", "holds a name that is not UTF-8")
		case fn == nil:
			bad("Methods", "holds %q with a nil Method", name)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	return maps.Clone(ms)
}

// methodTable is the server's methods: the application's, plus the demo's
// once a Demo is made. Replaced whole (copy on write), read without a lock
// on every request.
type methodTable struct {
	m atomic.Pointer[map[string]Method]
}

func (t *methodTable) init(app map[string]Method) {
	m := maps.Clone(app)
	if m == nil {
		m = map[string]Method{}
	}
	t.m.Store(&m)
}

// lookup returns the method called name, nil if there is none.
func (t *methodTable) lookup(name string) Method { return (*t.m.Load())[name] }

// addMissing adds the methods of extra the table does not hold yet (an
// application's own method of the same name stays).
func (t *methodTable) addMissing(extra map[string]Method) {
	for {
		old := t.m.Load()
		m := maps.Clone(*old)
		for name, fn := range extra {
			if _, ok := m[name]; !ok {
				m[name] = fn
			}
		}
		if t.m.CompareAndSwap(old, &m) {
			return
		}
	}
}

// errUnknownMethod answers a request for a method the server does not
// have. It names none of the ones it has: they are the application's.
var errUnknownMethod = &protocol.ErrorBody{Code: protocol.ErrUnknownMethod, Message: "unknown method"}

// requestState is a connection's method calls in flight.
type requestState struct {
	slots chan struct{} // one per call running; made by the reader on first use
	wg    sync.WaitGroup
	held  int // delayed replies reserved for calls still running (Slow replies); under the conn's slowMu
}

func (c *conn) request(m protocol.Message) {
	s := c.s
	start := time.Now()
	var down, slow bool
	if f := s.hook(); f != nil {
		down, slow = f.DropsService(), f.DelaysReplies()
	}
	if down {
		return // the service is down: requests go unanswered
	}
	if m.Method == protocol.MethodPresence {
		res, e := c.presenceRequest(m.Params)
		c.answer(protocol.ResponseFrame{Type: protocol.TypeResponse, ID: m.ID, Result: res, Error: e}, start, slow)
		return
	}
	if e := c.authorize(c.ctx, Action{Kind: ActRequest, Method: m.Method}); e != nil {
		c.answer(protocol.ResponseFrame{Type: protocol.TypeResponse, ID: m.ID, Error: e}, start, slow)
		return
	}
	fn := s.methods.lookup(m.Method)
	if fn == nil {
		c.answer(protocol.ResponseFrame{Type: protocol.TypeResponse, ID: m.ID, Error: errUnknownMethod}, start, slow)
		return
	}
	if slow && !c.holdDelayed() {
		// Refused in the order requests come, before the method runs.
		c.reply(tooManyPending(m.ID, s.opts.MaxPendingReplies))
		return
	}
	if c.req.slots == nil {
		c.req.slots = make(chan struct{}, s.opts.MaxConcurrentRequests)
	}
	slots := c.req.slots
	select {
	case slots <- struct{}{}: // a slot: the call may start
	default:
		// Every slot is taken: the reader waits, reading nothing (pongs
		// included), until a call ends. The server holds the peer's
		// frames, not the peer: the sweep does not count the silence.
		c.slotWait.Store(true)
		var ended bool
		select {
		case slots <- struct{}{}:
		case <-c.ctx.Done():
			ended = true
		}
		c.slotWaits.Add(1)
		c.slotWait.Store(false)
		if ended {
			return
		}
	}
	call := &Call{Identity: c.identity, Method: m.Method, Params: m.Params, Session: c.session, Server: c.s}
	c.req.wg.Add(1) // on the reader, before run's wait (which follows the reader's end)
	go c.call(fn, call, m.ID, m.Key, s.requestTimeout(m.TimeoutMs), start, slow, func() { <-slots })
}

// requestTimeout is the life of a call's context: the frame's timeoutMs
// capped by MaxRequestTimeout, or DefaultRequestTimeout without one.
func (s *Server) requestTimeout(ms int64) time.Duration {
	if ms <= 0 {
		return s.opts.DefaultRequestTimeout
	}
	return min(time.Duration(ms)*time.Millisecond, s.opts.MaxRequestTimeout)
}

// call runs one method on its own goroutine and answers it: with its
// outcome, or with timeout when its context's deadline passes first (then
// the outcome, when it comes, is dropped). release frees the call's slot
// when the method returns.
//
// A request with an idempotency key runs through the cache (idempotency.go):
// once per key within the window, a repeat getting the first run's answer
// under its own id, and the run's context the server's, not this
// connection's, so a client that lost its connection and sends the key
// again finds the run it started going on.
func (c *conn) call(fn Method, call *Call, id uint64, key string, timeout time.Duration, start time.Time, slow bool, release func()) {
	defer c.req.wg.Done()
	defer release()
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	var answered atomic.Bool
	timedOut := protocol.ResponseFrame{Type: protocol.TypeResponse, ID: id, Error: errTimeout}
	// At the deadline, while the method may still run: a timer's callback
	// that only queues (never waits), as the delayed replies do.
	stop := context.AfterFunc(ctx, func() {
		if c.ctx.Err() != nil || !answered.CompareAndSwap(false, true) {
			return // the connection ended (nobody to tell), or answered already
		}
		frame := c.encode(timedOut)
		c.s.metrics.requests.Observe(time.Since(start).Seconds())
		if slow {
			c.delayHeld(frame)
		} else {
			c.offer(frame)
		}
	})
	deadline, _ := ctx.Deadline()
	r, ran := c.once(key, contentPrint("request", call.Method, call.Params), func(base context.Context) (protocol.ResponseFrame, bool) {
		rctx := ctx // without a key: the call's own context
		if base != c.ctx {
			// A keyed run outlives this connection (the server's context)
			// but keeps the request's deadline.
			var rcancel context.CancelFunc
			rctx, rcancel = context.WithDeadline(base, deadline)
			defer rcancel()
		}
		res, e := c.invoke(rctx, fn, call)
		return protocol.ResponseFrame{Type: protocol.TypeResponse, Result: res, Error: e}, true
	})
	stop()
	if !ran {
		return // the connection ended while a first run with its key went on: nobody to answer
	}
	res, e := r.Result, r.Error
	if !answered.CompareAndSwap(false, true) {
		return
	}
	resp := protocol.ResponseFrame{Type: protocol.TypeResponse, ID: id, Result: res, Error: e}
	if !time.Now().Before(deadline) && c.ctx.Err() == nil {
		// It returned at or after its deadline, before the callback
		// answered (the clock, not ctx.Err: a keyed run's own context
		// may be cancelled before this one's timer has run).
		resp = timedOut
	}
	if slow {
		c.delayHeld(c.encode(resp))
		return
	}
	c.answer(resp, start, false)
}

// errTimeout answers a call whose context's deadline passed first.
var errTimeout = &protocol.ErrorBody{Code: protocol.ErrTimeout, Message: "the method did not answer within the request's timeout"}

// errInternal is what a client is told of a method's failure that is not
// an *Error: nothing of the failure itself.
var errInternal = &protocol.ErrorBody{Code: protocol.ErrInternal, Message: "internal error"}

// invoke calls fn and turns its outcome into a response's result or error.
func (c *conn) invoke(ctx context.Context, fn Method, call *Call) (res json.RawMessage, e *protocol.ErrorBody) {
	log := c.s.logs // a peer can repeat these lines: rate limited (lograte.go)
	defer func() {
		if r := recover(); r != nil {
			// The method's name is the application's; its params are the
			// peer's and stay out of the log.
			log.Error("method panicked", "method", call.Method, "conn", c.id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, e = nil, errInternal
		}
	}()
	v, err := fn(ctx, call)
	if err != nil {
		var ae *Error
		switch {
		case errors.As(err, &ae) && protocol.ValidErrorCode(ae.Code):
			return nil, &protocol.ErrorBody{Code: ae.Code, Message: truncateUTF8(ae.Message, maxErrorMessageBytes)}
		case errors.As(err, &ae):
			log.Error("method returned an *Error whose code is not valid (1 to 64 of a-z 0-9 _ . -)", "method", call.Method)
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			log.Debug("method gave up: its context ended", "method", call.Method)
		default:
			// Not err's text: it may quote what the peer sent.
			log.Warn("method failed", "method", call.Method, "error_type", fmt.Sprintf("%T", err))
		}
		return nil, errInternal
	}
	b, err := encodeResult(v)
	if err != nil {
		log.Error("method result not sent", "method", call.Method, "cause", err.Error())
		return nil, errInternal
	}
	return b, nil
}

// encodeResult is a method's result as a response carries it: JSON both
// codecs accept, within maxResultBytes.
func encodeResult(v any) (json.RawMessage, error) {
	var b []byte
	switch r := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case json.RawMessage:
		if r == nil {
			return json.RawMessage("null"), nil
		}
		b = r
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("failed to encode the result: %T: %w", v, err)
		}
	}
	if len(b) > maxResultBytes {
		return nil, errors.New("the result is " + strconv.Itoa(len(b)) + " bytes, over " + strconv.Itoa(maxResultBytes))
	}
	if !protocol.Valid(b) {
		return nil, errors.New("the result is not JSON the protocol accepts")
	}
	return b, nil
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// answer sends a response: at once (waiting for room in the queue), or
// SlowReplyDelay later while Slow replies is on.
func (c *conn) answer(resp protocol.ResponseFrame, start time.Time, slow bool) {
	s := c.s
	if !slow {
		c.reply(resp)
		s.metrics.requests.Observe(time.Since(start).Seconds())
		return
	}
	if !c.delayReply(c.encode(resp)) {
		c.reply(tooManyPending(resp.ID, s.opts.MaxPendingReplies))
	}
}

func tooManyPending(id uint64, most int) protocol.ResponseFrame {
	return protocol.ResponseFrame{Type: protocol.TypeResponse, ID: id, Error: &protocol.ErrorBody{
		Code: protocol.ErrTooManyPending, Message: "too many unanswered requests on this connection (" + strconv.Itoa(most) + ")"}}
}

// holdDelayed reserves a delayed reply for a call about to start while
// Slow replies is on; false when MaxPendingReplies are taken (waiting or
// reserved).
func (c *conn) holdDelayed() bool {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	if len(c.slow)+c.req.held >= c.s.opts.MaxPendingReplies {
		return false
	}
	c.req.held++
	return true
}

// delayHeld sends frame SlowReplyDelay from now in the place holdDelayed
// reserved.
func (c *conn) delayHeld(frame []byte) {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	c.req.held--
	c.delayLocked(frame)
}

// endRequests waits for the connection's method calls to return; their
// contexts ended with the connection's.
func (c *conn) endRequests() { c.req.wg.Wait() }

// delayReply sends frame SlowReplyDelay from now, without a goroutine while
// it waits. It reports false when MaxPendingReplies are already waiting.
func (c *conn) delayReply(frame []byte) bool {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	if len(c.slow)+c.req.held >= c.s.opts.MaxPendingReplies && !c.slowOff {
		return false
	}
	c.delayLocked(frame)
	return true
}

// delayLocked arms frame's timer, with slowMu held.
func (c *conn) delayLocked(frame []byte) {
	if c.slowOff {
		return // the connection is ending: nobody will read it
	}
	if c.slow == nil {
		c.slow = map[*time.Timer]struct{}{}
	}
	var t *time.Timer
	t = time.AfterFunc(c.s.faultSettings().SlowReplyDelay, func() {
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
