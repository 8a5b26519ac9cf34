//go:build !js

// Package native runs wsready's client core over github.com/coder/websocket
// so Go programs (and wsready's own tests) use the very same client the
// browser runs.
//
// One goroutine owns the core (loop.go): it feeds it socket events, timer
// ticks and requests, and carries out its effects. Each socket, a WebSocket
// (socket.go) or, when Config.Transports names it, an HTTP session
// (http.go: an event stream and ordered POSTs, or long polls), has a
// reader and a writer goroutine that only pass events to that loop.
// The public methods (this file) post to the loop and wait for its answer.
// The core's types a program needs (Config, State, Update, the errors) are
// named in this package too (types.go), so a program imports it alone.
package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/protocol"
)

// Client is a running wsready client. Create it with Dial.
type Client struct {
	urls []string
	next int // index into urls of the next dial (the loop's)
	opts *Options
	core *client.Core
	// connectTimeout is the core's ConnectTimeout: the longest a dial
	// waits for a handshake slot (socket.go). requestTimeout is its
	// RequestTimeout, which a ctx deadline may shorten (call).
	connectTimeout, requestTimeout time.Duration

	subs map[string]map[uint64]func(Update) // the loop's
	subN uint64
	// subWait holds the answers of Subscribe calls waiting for the
	// server to take their topic (the loop's; at most one per call in
	// flight, so bounded by the callers): answered when the topic is
	// subscribed, refused (OnTopicError), or the connection is not up.
	subWait  map[string][]subWaiter
	topicErr map[string]TopicError // topics refused since the loop last looked, with the server's code and message (the loop's)

	events chan event
	ctx    context.Context // ends when the client is closed
	cancel context.CancelFunc
	loopWG sync.WaitGroup // the loop
	sockWG sync.WaitGroup // socket goroutines

	mu       sync.Mutex
	state    State
	stats    Stats
	changed  chan struct{} // closed and replaced on every state change
	done     chan struct{} // closed when the loop has stopped the core
	lastDial error         // the last dial's error, for WaitReady; guarded by mu
	// lastToken is the Token hook's last error, wrapped, for WaitReady;
	// nil once the hook answers. Guarded by mu.
	lastToken error
	waiting   []TopicWait // waitingNow's, as of the loop's last batch; guarded by mu
	// leaving counts, per topic, the unsubscribes posted (a Subscribe's
	// func called) that the loop has not yet published a state after, so
	// WaitReady called right after giving a refused topic up does not
	// fail on the state from before. Guarded by mu; an entry per topic
	// being left, gone once its count is back to 0.
	leaving map[string]int
	left    []string // the loop's: topics whose unsubscribe it took in since its last apply

	// The loop's: each topic's last topic error code on the connection of
	// codesEpoch (at most maxCodes topics), for waitingNow.
	codes      map[string]string
	codesEpoch uint64

	// The HTTP transport's (http.go): hc is the Client's own HTTP client,
	// made at its first use (the loop's); pollSince is when each server's
	// stream was last held back (guarded by mu, one entry per URL). An
	// HTTP session's ticket is the one its dial names (Effect.Token).
	hc        *http.Client
	pollSince map[string]time.Time
}

// maxCodes bounds Client.codes: past it, a new topic's code is not kept
// (WaitReady's error then says "no answer" for it).
const maxCodes = 1024

// eventQueue is how many events the loop's channel holds before a poster
// waits (a socket reader, a caller).
const eventQueue = 64

// Dial starts a client for the WebSocket URL and returns at once; the
// client connects (and reconnects) in the background. Use WaitReady to
// wait for READY. ctx only bounds the setup, not the client's life.
//
// Its errors are ctx's, or an *OptionError (errors.Is(err,
// ErrInvalidOptions)) for a url or Options it refuses; a server that cannot
// be reached is not one (WaitReady says so).
func Dial(ctx context.Context, url string, opts *Options) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("failed to start the client: %w", err)
	}
	if err := checkURL(url); err != nil {
		return nil, fmt.Errorf("failed to configure the client: %w", &OptionError{Option: "url", Err: err})
	}
	o, err := opts.cloneWithDefaults()
	if err != nil {
		return nil, fmt.Errorf("failed to configure the client: %w", err)
	}
	cfg := *o.Config
	if o.LoadCursors != nil {
		cfg.Cursors = o.LoadCursors()
	}
	core, err := client.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to configure the client: %w", &OptionError{Option: "Config", Err: err})
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		urls: append([]string{url}, o.URLs...), opts: o, core: core, connectTimeout: core.Config().ConnectTimeout, requestTimeout: core.Config().RequestTimeout,
		subs:   map[string]map[uint64]func(Update){},
		events: make(chan event, eventQueue), ctx: cctx, cancel: cancel,
		changed: make(chan struct{}), done: make(chan struct{}),
	}
	c.state = core.State()
	c.loopWG.Add(1)
	go c.loop()
	return c, nil
}

// State returns the latest readiness.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Stats returns the core's counters as of the last step.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// WaitReady blocks until the client is READY, ctx ends (a *NotReadyError:
// why the last dial failed, or, connected, the topics the server has not
// taken with its last answer about each), the server refuses a topic the
// app asked for (a *SubscribeError naming it with the server's code and
// message, errors.Is(err, ErrTopicRefused): READY waits until the app
// gives the topic up, so WaitReady says so at once rather than at ctx's
// end), the session ends (an *EndedError) or the client closes
// (ErrClosed).
func (c *Client) WaitReady(ctx context.Context) error {
	var ended, refused State
	err := c.WaitState(ctx, func(s State) bool {
		if s.Ended != client.NotEnded && s.Ended != client.Stopped {
			ended = s
			return true
		}
		if s.Refusals > 0 && !s.Ready && !c.isLeaving(s.Refused.Topic) {
			refused = s
			return true
		}
		return s.Ready
	})
	if err == nil && ended.Ended != client.NotEnded {
		return &EndedError{Ended: ended.Ended, Code: ended.EndCode, Reason: ended.EndReason}
	}
	if err == nil && refused.Refusals > 0 {
		r := refused.Refused
		return fmt.Errorf("failed to get READY: %w", &SubscribeError{Topic: r.Topic, Code: r.Code, Message: r.Message, Others: refused.Refusals - 1})
	}
	if err != nil && ctx.Err() != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		nr := &NotReadyError{Err: err, LastDial: c.lastDial, State: c.state, Waiting: slices.Clone(c.waiting)}
		if c.state.LastError.Class == client.FailToken {
			nr.Token = c.lastToken
		}
		return nr
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

// NetworkChanged tells the client the network changed under it (the
// program saw its interface change, or a mobile binding was told of a
// move), or that the program resumed from a sleep: a connection that is
// up is probed at once and closed if the probe goes unanswered within its
// timeout (a quarter to three quarters of a ping interval), rather than
// after 1.25 intervals of silence; one lost now is redialled after the
// small online delay (at most 500 ms), not the backoff's; a client
// backing off dials within that delay. It returns at once; after Close it
// does nothing. (client.Core.NetworkChanged has the rules.)
func (c *Client) NetworkChanged() {
	c.post(context.Background(), event{kind: evNetwork})
}

// WaitState blocks until cond holds for the client's state. Its errors are
// ctx's and ErrClosed.
func (c *Client) WaitState(ctx context.Context, cond func(State) bool) error {
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
// result. Errors: a *RequestError (errors.Is with ErrNotReady,
// client.ErrRequestTimeout or client.ErrConnectionClosed), a
// *ServerError, ctx's error, or ErrClosed.
func (c *Client) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	return c.call(ctx, event{kind: evRequest, method: method, params: params})
}

// RequestWith is Request with options: its own timeout, and Queue (wait
// for READY, up to the timeout, instead of failing with
// ErrNotReady; sent again after a reconnect) with an idempotency
// Key (one is drawn when Queue has none).
func (c *Client) RequestWith(ctx context.Context, method string, params []byte, o RequestOptions) ([]byte, error) {
	return c.call(ctx, event{kind: evRequest, method: method, params: params, opts: o})
}

// Presence asks who is subscribed to topic (the reserved method
// protocol.MethodPresence): users sorted by id, at most the server's
// bound (Truncated then). Errors are Request's.
func (c *Client) Presence(ctx context.Context, topic string) (*protocol.PresenceResult, error) {
	params, err := json.Marshal(protocol.PresenceParams{Topic: topic})
	if err != nil {
		return nil, fmt.Errorf("failed to ask for presence: %w", err)
	}
	res, err := c.Request(ctx, protocol.MethodPresence, params)
	if err != nil {
		return nil, fmt.Errorf("failed to ask for presence: %w", err)
	}
	var r protocol.PresenceResult
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, fmt.Errorf("failed to read the presence of %q: %w", topic, err)
	}
	return &r, nil
}

// call posts a request or a publish and waits for its outcome. ctx's
// deadline, when it comes before the request's own timeout (its
// RequestOptions.Timeout, or Config.RequestTimeout), becomes the timeout
// the core holds it to and sends (timeoutMs): the action's deadline holds
// in every phase, and a queued one the next dial cannot serve in time
// fails at once with ErrNotReady.
func (c *Client) call(ctx context.Context, e event) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok && e.opts.Timeout >= 0 {
		own := e.opts.Timeout
		if own == 0 {
			own = c.requestTimeout
		}
		if left := time.Until(dl); left > 0 && left < own {
			e.opts.Timeout = left
		}
	}
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
// On a connected client it returns once the server has taken the
// subscribe, so everything published after it returns is delivered (a
// topic joined while READY does not take READY away: WaitReady alone would
// not say so); while not connected it returns at once and the subscribe
// goes out with the connection (WaitReady waits for that). The error is
// for an invalid topic name (errors.Is(err, protocol.ErrBadTopic)), a
// negative since, a closed client (ErrClosed), or ctx's end, before the
// subscribe was taken in (no func) or while waiting for the server (the
// func is returned: the subscription stands). A refusal by the server
// (forbidden, too_many_subscriptions, an application's own code, ...)
// ends the wait with a *SubscribeError (its Code is the server's) and the
// func: the subscription stands and is asked for again on the next
// connection, as OnTopicError also hears; call the func to give it up. (A
// transient error, such as unavailable, is asked for again at the
// subscribe deadline: see Options.OnTopicError.)
func (c *Client) Subscribe(ctx context.Context, topic string, since *int64, onUpdate func(Update)) (func(), error) {
	var o SubscribeOptions
	if since != nil {
		o.Since, o.HasSince = *since, true
	}
	return c.SubscribeWith(ctx, topic, o, onUpdate)
}

// SubscribeWith is Subscribe with options: Since (with HasSince) and
// Presence, which sends the topic's join and leave events to
// Options.OnPresence. Subscribing again to a topic with another Presence
// asks the server again (without losing or repeating an update).
func (c *Client) SubscribeWith(ctx context.Context, topic string, o SubscribeOptions, onUpdate func(Update)) (func(), error) {
	if onUpdate == nil {
		onUpdate = func(Update) {}
	}
	e := event{kind: evSubscribe, topic: topic, onUpdate: onUpdate, reply: make(chan requestReply, 1), subOpts: o, taken: make(subWaiter, 1)}
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
	stop := func() {
		once.Do(func() {
			c.mu.Lock()
			if c.leaving == nil {
				c.leaving = map[string]int{}
			}
			c.leaving[topic]++
			c.mu.Unlock()
			c.post(context.Background(), event{kind: evUnsubscribe, topic: topic, id: r.id})
		})
	}
	select {
	case err := <-e.taken:
		return stop, err
	case <-c.done:
		return stop, nil // closed: nothing more will be delivered anyway
	case <-ctx.Done():
		return stop, fmt.Errorf("failed to wait for the server to take the subscribe to %s (the subscription stands; call the returned func to leave it): %w", topic, ctx.Err())
	}
}

// subWaiter is a Subscribe call waiting for the server to take its topic:
// it is sent nil (taken, or no connection to wait on) or the refusal, once.
type subWaiter chan error

// Publish appends data (JSON) to topic and returns the seq the server gave
// it. Errors are Request's; the server's codes include forbidden (publish
// is off, or the topic is the server's), too_many_topics and unavailable.
func (c *Client) Publish(ctx context.Context, topic string, data []byte) (int64, error) {
	return c.PublishWith(ctx, topic, data, RequestOptions{})
}

// PublishWith is Publish with options (RequestWith's).
func (c *Client) PublishWith(ctx context.Context, topic string, data []byte, o RequestOptions) (int64, error) {
	res, err := c.call(ctx, event{kind: evPublish, topic: topic, params: data, opts: o})
	if err != nil {
		return 0, err
	}
	seq, ok := parseSeq(res)
	if !ok {
		return 0, fmt.Errorf("failed to publish: the server's result %.40q carries no seq", res)
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
// duplicates, lost), the service topic first; nil after Close.
func (c *Client) Topics() []TopicStats {
	ch := make(chan []TopicStats, 1)
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
// it returns. It always returns nil; a second Close does nothing more.
func (c *Client) Close() error {
	c.post(context.Background(), event{kind: evStop})
	c.loopWG.Wait()
	return nil
}

// errNegativeSince is Subscribe's error for a since below 0.
var errNegativeSince = errors.New("since must not be negative")

// refusedSubscribe is the loop's answer to a subscribe the core refused:
// the topic name (errors.Is(err, protocol.ErrBadTopic)) or since.
func refusedSubscribe(topic string, since int64) error {
	if !protocol.ValidTopic(topic) {
		return fmt.Errorf("failed to subscribe to %q: %w", topic, protocol.ErrBadTopic)
	}
	return fmt.Errorf("failed to subscribe to %q: %w", topic, errNegativeSince)
}
