//go:build !js

package native

import (
	"context"
	"fmt"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/protocol"
)

// The loop is the one goroutine that owns the core: every socket event,
// timer tick and caller's request reaches it as an event on c.events, it
// steps the core, and it carries out the core's effects (apply). Nothing
// else touches the core, the socket table or the subscriber table.

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
	evNetwork
	evProbe
)

// event is one thing for the loop to do; kind says which fields mean
// something.
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
	onUpdate func(client.Update)
	topics   chan []client.TopicStats
	opts     client.RequestOptions   // evRequest, evPublish
	subOpts  client.SubscribeOptions // evSubscribe
	taken    subWaiter               // evSubscribe: answered once the server took or refused the topic (answerSubscribes)
	ok       bool                    // evProbe: the server answered over HTTP
}

// requestReply answers a caller: first the request's id (so a cancel can
// name it), then its outcome.
type requestReply struct {
	id     uint64
	result []byte
	err    error
}

// post hands e to the loop; it reports false if ctx ended or the client
// closed first.
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
		c.answerSubscribes()
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
				id := c.core.RequestWith(e.method, e.params, e.opts, now)
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
				if !c.core.SubscribeWith(e.topic, e.subOpts, now) {
					e.reply <- requestReply{err: refusedSubscribe(e.topic, e.subOpts.Since)}
					break
				}
				c.subN++
				if c.subs[e.topic] == nil {
					c.subs[e.topic] = map[uint64]func(client.Update){}
				}
				c.subs[e.topic][c.subN] = e.onUpdate
				e.reply <- requestReply{id: c.subN}
				if c.subWait == nil {
					c.subWait = map[string][]subWaiter{}
				}
				c.subWait[e.topic] = append(c.subWait[e.topic], e.taken)
			case evUnsubscribe:
				c.left = append(c.left, e.topic)
				if m := c.subs[e.topic]; m != nil {
					delete(m, e.id)
					if len(m) == 0 {
						delete(c.subs, e.topic)
						c.core.Unsubscribe(e.topic, now)
					}
				}
			case evPublish:
				id := c.core.PublishWith(e.topic, e.params, e.opts, now)
				waiters[id] = e.reply
				e.reply <- requestReply{id: id}
			case evTopics:
				e.topics <- c.core.Topics()
			case evNetwork:
				c.core.NetworkChanged(now)
			case evProbe:
				c.core.HTTPProbe(e.ok, now)
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
	if c.hc != nil {
		c.hc.CloseIdleConnections()
	}
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
			if e.Transport == client.TransportHTTP {
				sockets[e.Socket] = c.startHTTP(e.Socket, url, e.Token) // the ticket the core holds for it
			} else {
				sockets[e.Socket] = c.startSocket(e.Socket, url)
			}
		case client.EffProbeHTTP:
			c.probeHTTP(c.urls[c.next])
		case client.EffSend:
			if s := sockets[e.Socket]; s != nil && !s.closed {
				s.send(e.Frame)
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
			if e.State.Epoch != c.codesEpoch { // a new connection: the old one's answers are not its
				c.codes, c.codesEpoch = nil, e.State.Epoch
			}
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
		case client.EffPresence:
			if c.opts.OnPresence != nil {
				c.opts.OnPresence(e.Presence)
			}
		case client.EffTopicError:
			if c.codes == nil {
				c.codes = map[string]string{}
			}
			if _, ok := c.codes[e.TopicError.Topic]; ok || len(c.codes) < maxCodes {
				c.codes[e.TopicError.Topic] = e.TopicError.Code
			}
			if c.subWait[e.TopicError.Topic] != nil {
				if c.topicErr == nil {
					c.topicErr = map[string]client.TopicError{}
				}
				c.topicErr[e.TopicError.Topic] = e.TopicError
			}
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
			c.askToken(e.Force)
		}
	}
	w := c.waitingNow(c.state) // the loop's own field: read without the lock
	c.mu.Lock()
	c.stats = c.core.Stats()
	c.waiting = w
	for _, t := range c.left {
		if c.leaving[t]--; c.leaving[t] <= 0 {
			delete(c.leaving, t)
		}
	}
	if len(c.left) > 0 {
		// A WaitReady that passed over a refusal of a topic being left
		// looks again, even if the state did not change (another
		// subscriber of the topic stays).
		close(c.changed)
		c.changed = make(chan struct{})
	}
	c.mu.Unlock()
	c.left = c.left[:0]
}

// isLeaving reports whether an unsubscribe of topic was posted and the
// loop has not yet published the state after it.
func (c *Client) isLeaving(topic string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaving[topic] > 0
}

// askToken runs the Token hook on a goroutine of its own (it may block on
// the network) and reports its answer to the loop.
func (c *Client) askToken(force bool) {
	c.sockWG.Add(1)
	go func() {
		defer c.sockWG.Done()
		tok, err := c.opts.Token(c.ctx, force)
		c.mu.Lock()
		c.lastToken = nil
		if err != nil {
			c.lastToken = fmt.Errorf("failed to get a token: %w", err)
		}
		c.mu.Unlock()
		c.post(c.ctx, event{kind: evToken, token: tok, err: err})
	}()
}

// answerSubscribes lets the Subscribe calls go whose topic the server has
// taken (subscribed), or refused (OnTopicError heard it), and every one
// while the client has no working connection (the subscribe goes out when
// it has: waiting for that is WaitReady's). So a Subscribe that returns nil
// on a connected client is followed by every update published after it.
func (c *Client) answerSubscribes() {
	if len(c.subWait) == 0 {
		return
	}
	c.mu.Lock()
	up := c.state.Protocol == client.Up && c.state.Ended == client.NotEnded
	c.mu.Unlock()
	if off := c.core.Config().Disable; off.Service || off.Heartbeat {
		up = false // no service layer (or no ping to say the peer is up): nothing to wait for
	}
	var taken map[string]bool
	if up {
		taken = map[string]bool{}
		for _, t := range c.core.Topics() {
			taken[t.Topic] = t.Subscribed
		}
	}
	for topic, ws := range c.subWait {
		te, refused := c.topicErr[topic]
		if up && !taken[topic] && !refused {
			continue
		}
		var err error
		if refused {
			err = &SubscribeError{Topic: topic, Code: te.Code, Message: te.Message}
		}
		for _, w := range ws {
			w <- err // buffered (1) and answered once
		}
		delete(c.subWait, topic)
	}
	clear(c.topicErr)
}

// waitingNow is what WaitReady's error names when the client is connected
// (transport up, the peer not lost) and the service layer is not up: the
// topics the server has not taken on this connection, each with its last
// answer on it (codes). Nil otherwise. The loop's.
func (c *Client) waitingNow(s client.State) []TopicWait {
	if s.Transport != client.Up || s.Protocol == client.Down || s.Service == client.Up {
		return nil
	}
	var w []TopicWait
	for _, t := range c.core.Topics() {
		if !t.Subscribed {
			w = append(w, TopicWait{Topic: t.Topic, Code: c.codes[t.Topic]})
		}
	}
	return w
}
