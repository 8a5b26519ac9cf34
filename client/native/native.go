//go:build !js

// Package native runs wsready's client core over github.com/coder/websocket
// so Go programs (and wsready's own tests) use the very same client the
// browser runs.
//
// One goroutine owns the core: it feeds it socket events, timer ticks and
// requests, and carries out its effects. Each socket has a reader and a
// writer goroutine that only pass events to that loop.
package native

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/protocol"
)

// Options configures a Client. A nil *Options means the last stage (7:
// the session contract and resume) with the library's defaults.
type Options struct {
	// Config is the client's configuration (Rand defaults to
	// math/rand/v2). Default client.MustStage(client.MaxStage): every fix,
	// the library's defaults. A demo stage: Config: client.MustStage(3).
	Config *client.Config
	// OnState, OnUpdate and OnEvent run on the client's goroutine: they
	// must return quickly and must not call Request or Close (start a
	// goroutine for that). OnEvent receives trace events; setting it turns
	// tracing on.
	OnState  func(client.State)
	OnUpdate func(client.Update)
	OnEvent  func(client.Event)
	// OnRecord receives one sanitized record per reconnect decision (no
	// token, payload or peer text in it); same rules as OnState.
	OnRecord func(client.Record)
	// Token, when set, is called before every dial for the ticket the
	// client sends in its first frame. force asks for a fresh one (the
	// server said the last expired): never return a cached token then. An
	// error, or no answer within the core's TokenTimeout (ctx says so), is
	// a failed attempt, counted against the budget. It runs on a goroutine
	// of its own; ctx ends when the client closes.
	Token func(ctx context.Context, force bool) (string, error)
	// OnContinuityLost hears of updates the client will never deliver
	// (stage 7: the server no longer had them); same rules as OnState.
	OnContinuityLost func(client.ContinuityLost)
	// OnTopicError hears of a subscribe the server refused (code:
	// unknown_topic, too_many_subscriptions, unavailable, ...); the client
	// retries it at the subscribe deadline. Same rules as OnState.
	OnTopicError func(topic, code string)
	// LoadCursors, when set, is called once by Dial for the cursors to
	// resume from (what StoreCursors last saved); StoreCursors is called
	// on the client's goroutine after every batch of updates with every
	// topic's cursor. Same rules as OnState.
	LoadCursors  func() []client.Cursor
	StoreCursors func([]client.Cursor)
	// URLs are more servers to use: Dial's url first, then these, in turn,
	// one further on every reconnect (each reconnect follows a failure).
	URLs []string
	// DialOptions are passed to websocket.Dial.
	DialOptions *websocket.DialOptions
	// CloseTimeout bounds how long Close waits for the close handshakes of
	// the client's sockets (1000, "client stopped") before it drops them.
	// Default 2s.
	CloseTimeout time.Duration
}

// Client is a running wsready client. Create it with Dial.
type Client struct {
	urls []string
	next int // index into urls of the next dial (the loop's)
	opts Options
	core *client.Core
	subs map[string]map[uint64]func(client.Update) // the loop's
	subN uint64

	events chan event
	ctx    context.Context // ends when the client is closed
	cancel context.CancelFunc
	loopWG sync.WaitGroup // the loop
	sockWG sync.WaitGroup // socket goroutines

	mu       sync.Mutex
	state    client.State
	stats    client.Stats
	changed  chan struct{} // closed and replaced on every state change
	done     chan struct{} // closed when the loop has stopped the core
	lastDial error         // the last dial's error, for WaitReady; guarded by mu
}

// NotReadyError is WaitReady's error when ctx ends first: it wraps ctx's
// error and the last dial's, so errors.Is(err, context.DeadlineExceeded)
// and errors.As(err, &netErr) both work.
type NotReadyError struct {
	Err      error // ctx's
	LastDial error // nil if no dial failed
	State    client.State
}

func (e *NotReadyError) Error() string {
	s := "failed to get READY: " + e.Err.Error()
	if e.LastDial != nil {
		s += " (last dial: " + e.LastDial.Error() + ")"
	} else if f := e.State.LastError; f.Class != client.FailNone {
		s += " (" + f.Message() + ")"
	}
	return s
}

func (e *NotReadyError) Unwrap() []error {
	if e.LastDial == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.LastDial}
}

type evKind uint8

const (
	evOpened evKind = iota + 1
	evFrame
	evClosed
	evRequest
	evCancel
	evStop
	evToken
	evReconnect
	evSubscribe
	evUnsubscribe
	evPublish
	evTopics
)

type event struct {
	kind     evKind
	socket   client.SocketID
	frame    []byte
	code     int
	reason   string
	method   string
	params   []byte
	reply    chan requestReply
	id       uint64
	token    string
	err      error
	topic    string
	since    int64
	hasSince bool
	onUpdate func(client.Update)
	topics   chan []client.TopicStats
}

type requestReply struct {
	id     uint64
	result []byte
	err    error
}

// ErrClosed is returned by Request and WaitReady after Close.
var ErrClosed = errors.New("client closed")

// EndedError is WaitReady's error for a session in a terminal state
// (ended, forbidden, refresh_exhausted, gave_up): only Reconnect starts it
// again.
type EndedError struct {
	Ended client.Terminal
	Code  int // the close code that ended it, if one did
}

func (e *EndedError) Error() string {
	s := "session " + string(e.Ended)
	if e.Code != 0 {
		s += " (close " + strconv.Itoa(e.Code) + ")"
	}
	return s
}

// Dial starts a client for the WebSocket URL and returns at once; the
// client connects (and reconnects) in the background. Use WaitReady to
// wait for READY. ctx only bounds the setup, not the client's life.
func Dial(ctx context.Context, url string, opts *Options) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	cfg := client.MustStage(client.MaxStage)
	if o.Config != nil {
		cfg = o.Config
	}
	cfg = new(*cfg)
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if o.OnEvent != nil {
		cfg.Trace = true
	}
	if o.Token != nil {
		cfg.Auth = true
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 2 * time.Second
	}
	if o.LoadCursors != nil {
		cfg.Cursors = o.LoadCursors()
	}
	core, err := client.New(*cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to dial: %w", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{urls: append([]string{url}, o.URLs...), opts: o, core: core, subs: map[string]map[uint64]func(client.Update){}, events: make(chan event, 64), ctx: cctx, cancel: cancel,
		changed: make(chan struct{}), done: make(chan struct{})}
	c.state = core.State()
	c.loopWG.Add(1)
	go c.loop()
	return c, nil
}

// State returns the latest readiness.
func (c *Client) State() client.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Stats returns the core's counters as of the last step.
func (c *Client) Stats() client.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// WaitReady blocks until the client is READY, ctx ends, the session ends
// (an *EndedError) or the client closes (ErrClosed).
func (c *Client) WaitReady(ctx context.Context) error {
	var ended client.State
	err := c.WaitState(ctx, func(s client.State) bool {
		if s.Ended != client.NotEnded && s.Ended != client.Stopped {
			ended = s
			return true
		}
		return s.Ready
	})
	if err == nil && ended.Ended != client.NotEnded {
		return &EndedError{Ended: ended.Ended, Code: ended.EndCode}
	}
	if err != nil && ctx.Err() != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		return &NotReadyError{Err: err, LastDial: c.lastDial, State: c.state}
	}
	return err
}

// Reconnect starts a fresh session (a fresh budget and window): after a
// terminal state it dials again; a client that is down dials at once. It
// returns once the client has taken it in (the state is no longer ended).
func (c *Client) Reconnect() {
	done := make(chan requestReply, 1)
	if c.post(context.Background(), event{kind: evReconnect, reply: done}) {
		select {
		case <-done:
		case <-c.done:
		}
	}
}

// WaitState blocks until cond holds for the client's state.
func (c *Client) WaitState(ctx context.Context, cond func(client.State) bool) error {
	for {
		c.mu.Lock()
		st, ch := c.state, c.changed
		c.mu.Unlock()
		if cond(st) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return ErrClosed
		}
	}
}

// Request sends method with params (raw JSON, or nil) and waits for the
// result. Errors: a *client.RequestError (errors.Is with client.ErrNotReady,
// client.ErrRequestTimeout or client.ErrConnectionClosed), a
// *client.ServerError, ctx's error, or ErrClosed.
func (c *Client) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	return c.call(ctx, event{kind: evRequest, method: method, params: params})
}

// call posts a request or a publish and waits for its outcome.
func (c *Client) call(ctx context.Context, e event) ([]byte, error) {
	reply := make(chan requestReply, 2) // the id, then the outcome: never blocks the loop
	e.reply = reply
	if !c.post(ctx, e) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrClosed
	}
	var id uint64
	for {
		select {
		case r := <-reply:
			if r.result == nil && r.err == nil { // the id, before the outcome
				id = r.id
				continue
			}
			return r.result, r.err
		case <-ctx.Done():
			c.post(context.Background(), event{kind: evCancel, id: id})
			return nil, ctx.Err()
		case <-c.done:
			return nil, ErrClosed
		}
	}
}

// Subscribe asks for topic's updates: onUpdate runs (on the client's
// goroutine, same rules as OnState) for each, from now on and across
// reconnects (stage 7 resumes without gaps). since, when not nil, asks for
// a replay of what followed that seq on the first subscribe. The returned
// function unsubscribes (the topic is left when its last subscriber goes).
// The error is for an invalid topic name or a closed client; a refusal by
// the server (unknown_topic, ...) reaches OnTopicError and is retried.
func (c *Client) Subscribe(ctx context.Context, topic string, since *int64, onUpdate func(client.Update)) (func(), error) {
	if onUpdate == nil {
		onUpdate = func(client.Update) {}
	}
	e := event{kind: evSubscribe, topic: topic, onUpdate: onUpdate, reply: make(chan requestReply, 1)}
	if since != nil {
		e.since, e.hasSince = *since, true
	}
	if !c.post(ctx, e) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrClosed
	}
	var r requestReply
	select {
	case r = <-e.reply:
	case <-c.done:
		return nil, ErrClosed
	}
	if r.err != nil {
		return nil, r.err
	}
	var once sync.Once
	return func() {
		once.Do(func() { c.post(context.Background(), event{kind: evUnsubscribe, topic: topic, id: r.id}) })
	}, nil
}

// Publish appends data (JSON) to topic and returns the seq the server gave
// it. Errors are Request's; the server's codes include forbidden (publish
// is off, or the topic is the server's), too_many_topics and unavailable.
func (c *Client) Publish(ctx context.Context, topic string, data []byte) (int64, error) {
	res, err := c.call(ctx, event{kind: evPublish, topic: topic, params: data})
	if err != nil {
		return 0, err
	}
	seq, ok := parseSeq(res)
	if !ok {
		return 0, fmt.Errorf("publish: the server's result %.40q carries no seq", res)
	}
	return seq, nil
}

// parseSeq reads N from {"seq":N}.
func parseSeq(b []byte) (int64, bool) {
	s := string(b)
	const pre = `{"seq":`
	if len(s) < len(pre)+2 || s[:len(pre)] != pre || s[len(s)-1] != '}' {
		return 0, false
	}
	n, err := strconv.ParseInt(s[len(pre):len(s)-1], 10, 64)
	return n, err == nil && n > 0
}

// Topics returns each topic's accounting (cursor, delivered, replayed,
// duplicates, lost), the service topic first.
func (c *Client) Topics() []client.TopicStats {
	ch := make(chan []client.TopicStats, 1)
	if !c.post(context.Background(), event{kind: evTopics, topics: ch}) {
		return nil
	}
	select {
	case t := <-ch:
		return t
	case <-c.done:
		return nil
	}
}

// Close stops the client: every socket it still has closes with 1000
// (Close waits up to Options.CloseTimeout for the handshakes), pending
// requests fail with ErrConnectionClosed, and every goroutine ends before
// it returns.
func (c *Client) Close() error {
	c.post(context.Background(), event{kind: evStop})
	c.loopWG.Wait()
	return nil
}

func (c *Client) post(ctx context.Context, e event) bool {
	select {
	case c.events <- e:
		return true
	case <-ctx.Done():
		return false
	case <-c.done:
		return false
	}
}

type socket struct {
	id     client.SocketID
	ctx    context.Context
	cancel context.CancelFunc
	out    chan []byte
	ws     chan *websocket.Conn // holds the conn once dialled (cap 1)
	closed bool
}

func (c *Client) loop() {
	defer c.loopWG.Done()
	sockets := map[client.SocketID]*socket{}
	waiters := map[uint64]chan requestReply{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	c.core.Start(time.Now())
	var stopping <-chan time.Time // set once Stop: the bound on the close handshakes
	for {
		c.apply(sockets, waiters, timer)
		if stopping != nil && len(sockets) == 0 {
			break
		}
		select {
		case <-timer.C:
			c.core.Tick(time.Now())
		case <-stopping:
			goto done // handshakes that did not finish in time are dropped below
		case e := <-c.events:
			now := time.Now()
			switch e.kind {
			case evOpened:
				c.core.Opened(e.socket, now)
			case evFrame:
				c.core.Received(e.socket, e.frame, now)
			case evClosed:
				delete(sockets, e.socket)
				c.core.Closed(e.socket, e.code, e.reason, now)
			case evRequest:
				id := c.core.Request(e.method, e.params, now)
				waiters[id] = e.reply
				e.reply <- requestReply{id: id}
			case evCancel:
				delete(waiters, e.id)
				c.core.Cancel(e.id, now)
			case evToken:
				if e.err != nil {
					c.core.TokenFailed(now)
				} else {
					c.core.TokenReady(e.token, now)
				}
			case evSubscribe:
				if !c.core.Subscribe(e.topic, e.since, e.hasSince, now) {
					e.reply <- requestReply{err: fmt.Errorf("invalid topic %q: 1 to %d of A-Z a-z 0-9 - _", e.topic, protocol.MaxTopicBytes)}
					break
				}
				c.subN++
				if c.subs[e.topic] == nil {
					c.subs[e.topic] = map[uint64]func(client.Update){}
				}
				c.subs[e.topic][c.subN] = e.onUpdate
				e.reply <- requestReply{id: c.subN}
			case evUnsubscribe:
				if m := c.subs[e.topic]; m != nil {
					delete(m, e.id)
					if len(m) == 0 {
						delete(c.subs, e.topic)
						c.core.Unsubscribe(e.topic, now)
					}
				}
			case evPublish:
				id := c.core.Publish(e.topic, e.params, 0, now)
				waiters[id] = e.reply
				e.reply <- requestReply{id: id}
			case evTopics:
				e.topics <- c.core.Topics()
			case evReconnect:
				c.core.Reconnect(now)
				c.apply(sockets, waiters, timer) // the state the caller waits on
				e.reply <- requestReply{}
			case evStop:
				if stopping == nil {
					c.core.Stop(now)
					c.apply(sockets, waiters, timer)
					// The core closed its current socket; close the ones it
					// replaced too (stages without the stale filter leak them).
					for _, s := range sockets {
						if !s.closed {
							s.closed = true
							c.closeSocket(s, protocol.CloseNormal, "client stopped")
						}
					}
					t := time.NewTimer(c.opts.CloseTimeout)
					defer t.Stop()
					stopping = t.C
				}
			}
		}
	}
done:
	for _, s := range sockets {
		s.cancel()
	}
	close(c.done)
	c.cancel()
	c.sockWG.Wait()
}

// apply carries out the core's effects.
func (c *Client) apply(sockets map[client.SocketID]*socket, waiters map[uint64]chan requestReply, timer *time.Timer) {
	updates := false
	defer func() {
		if updates && c.opts.StoreCursors != nil {
			c.opts.StoreCursors(c.core.Cursors())
		}
	}()
	for _, e := range c.core.Effects() {
		switch e.Kind {
		case client.EffDial:
			url := c.urls[c.next]
			c.next = (c.next + 1) % len(c.urls)
			s := c.startSocket(e.Socket, url)
			sockets[e.Socket] = s
		case client.EffSend:
			if s := sockets[e.Socket]; s != nil && !s.closed {
				select {
				case s.out <- e.Frame:
				default: // a stuck socket: the registry times the request out
				}
			}
		case client.EffClose:
			if s := sockets[e.Socket]; s != nil && !s.closed {
				s.closed = true
				c.closeSocket(s, e.Code, e.Reason)
			}
		case client.EffTimer:
			timer.Stop()
			if !e.At.IsZero() {
				timer.Reset(time.Until(e.At))
			}
		case client.EffSettle:
			if w, ok := waiters[e.ID]; ok {
				delete(waiters, e.ID)
				r := requestReply{id: e.ID, result: e.Result, err: e.Err}
				if r.err == nil && r.result == nil {
					r.result = []byte("null")
				}
				w <- r
			}
		case client.EffState:
			c.mu.Lock()
			c.state = e.State
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			if c.opts.OnState != nil {
				c.opts.OnState(e.State)
			}
		case client.EffUpdate:
			updates = true
			if c.opts.OnUpdate != nil {
				c.opts.OnUpdate(e.Update)
			}
			for _, fn := range c.subs[e.Update.Topic] {
				fn(e.Update)
			}
		case client.EffContinuityLost:
			updates = true
			if c.opts.OnContinuityLost != nil {
				c.opts.OnContinuityLost(e.Lost)
			}
		case client.EffTopicError:
			if c.opts.OnTopicError != nil {
				c.opts.OnTopicError(e.TopicError.Topic, e.TopicError.Code)
			}
		case client.EffLog:
			if c.opts.OnEvent != nil {
				c.opts.OnEvent(e.Event)
			}
		case client.EffRecord:
			if c.opts.OnRecord != nil {
				c.opts.OnRecord(e.Record)
			}
		case client.EffToken:
			force := e.Force
			c.sockWG.Add(1)
			go func() {
				defer c.sockWG.Done()
				tok, err := c.opts.Token(c.ctx, force)
				c.post(c.ctx, event{kind: evToken, token: tok, err: err})
			}()
		}
	}
	c.mu.Lock()
	c.stats = c.core.Stats()
	c.mu.Unlock()
}

func (c *Client) startSocket(id client.SocketID, url string) *socket {
	ctx, cancel := context.WithCancel(c.ctx)
	s := &socket{id: id, ctx: ctx, cancel: cancel, out: make(chan []byte, 64), ws: make(chan *websocket.Conn, 1)}
	c.sockWG.Add(1)
	go func() {
		defer c.sockWG.Done()
		defer cancel()
		ws, resp, err := websocket.Dial(ctx, url, c.opts.DialOptions)
		if err != nil {
			c.mu.Lock()
			c.lastDial = fmt.Errorf("failed to dial: %w", err)
			c.mu.Unlock()
			// A refusal's Retry-After reaches the core the way a close
			// reason's would; nothing else of the error does.
			reason := ""
			if resp != nil {
				if d, ok := protocol.ParseRetryAfterHeader(resp.Header.Get("Retry-After")); ok {
					reason = protocol.RetryAfterReason(d)
				}
			}
			c.post(c.ctx, event{kind: evClosed, socket: id, code: protocol.CloseAbnormal, reason: reason})
			return
		}
		ws.SetReadLimit(protocol.MaxFrameBytes)
		s.ws <- ws
		c.sockWG.Add(1)
		go func() {
			defer c.sockWG.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case f := <-s.out:
					if err := ws.Write(ctx, websocket.MessageText, f); err != nil {
						return
					}
				}
			}
		}()
		c.post(c.ctx, event{kind: evOpened, socket: id})
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				code, reason := protocol.CloseAbnormal, err.Error()
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					code, reason = int(ce.Code), ce.Reason
				}
				ws.CloseNow()
				c.post(c.ctx, event{kind: evClosed, socket: id, code: code, reason: reason})
				return
			}
			if !c.post(c.ctx, event{kind: evFrame, socket: id, frame: b}) {
				ws.CloseNow()
				return
			}
		}
	}()
	return s
}

// closeSocket starts the close handshake without blocking the loop; the
// socket's reader reports the close when it completes (coder/websocket
// gives up on an unresponsive peer after 5 s).
func (c *Client) closeSocket(s *socket, code int, reason string) {
	select {
	case ws := <-s.ws:
		s.ws <- ws
		c.sockWG.Add(1)
		go func() {
			defer c.sockWG.Done()
			ws.Close(websocket.StatusCode(code), reason)
		}()
	default:
		s.cancel() // still dialling: abandon the dial
	}
}
