//go:build !js

package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wsready/wsready/protocol"
	"golang.org/x/time/rate"
)

// The hub serves subscriptions on this node. For every topic in use it
// keeps the retained updates, already encoded, in a ring fed by the
// History's Watch (so on JetStream every node sees every update in seq
// order, whichever node appended it). A subscribe with since is answered,
// under the topic's lock, by "subscribed" with the first seq that follows,
// then the ring's updates from there: live updates wait for the lock, so
// there is no gap and no duplicate at the seam. An update is encoded once
// and the same bytes are queued to every subscriber.
//
// A topic caches the stream id it attached to. When the History's Watch
// says the topic's history goes on under a new stream id (a JetStream store
// that came back with less than it had), the topic is retired: its ring is
// dropped, its subscribers are told (unsubscribed, stream_reset: they
// subscribe again, see the new id and report a reset), and the next
// subscribe attaches it afresh. The retired watch is stopped by the hub's
// one goroutine, since a Watch cannot be stopped from its own callback.
//
// A topic whose last subscriber here left is let go (retired) at once,
// unless the History's Watch is costly to start and stop (lingerer:
// JetStream's is a consumer on the NATS server): then the topic stays
// attached, idle, for the History's linger, and a subscribe meanwhile
// finds it as it was. A client that subscribes and unsubscribes in a loop
// then costs this node one watch per topic, not one per subscribe. The
// hub's goroutine lets idle topics go once their linger is over, and a
// new topic at the node's cap lets the idle ones go first.

type hub struct {
	s   *Server
	h   History
	lim Retention

	linger time.Duration // how long an idle topic stays attached; 0: let go at once

	mu      sync.Mutex
	topics  map[string]*topic
	idle    map[*topic]struct{} // topics left by their last subscriber (maybe joined again since), for run
	retired []*topic            // watches to stop (by run)
	closed  bool

	kick chan struct{} // cap 1: retired has topics
	done chan struct{} // closed by close: run ends
	wg   sync.WaitGroup

	pub publishHealth
}

// lingerer is a History whose Watch is costly to start and stop: the hub
// keeps a topic its last subscriber left attached for watchLinger.
type lingerer interface{ watchLinger() time.Duration }

// errHubClosed is a subscribe that came while the server closes.
var errHubClosed = errors.New("the server is closing")

// maxAttach bounds the loads of a topic whose stream id changes under it.
const maxAttach = 3

// reasonStreamReset is the unsubscribed reason for a topic whose history
// was given a new stream id under this node.
const reasonStreamReset = "stream_reset"

// publishHealth logs publish failures (a client's or Server.Publish's) as
// runFeed logs the feed's: one line when they start, one when a publish
// is stored again, not one per failure while the History is away. Every
// failure is counted in wsready_publish_failures_total.
type publishHealth struct {
	failing atomic.Bool // read without mu on every publish
	mu      sync.Mutex  // orders the two lines
	failed  int64       // failures since the start line, under mu
}

type topic struct {
	name string
	hub  *hub
	once sync.Once
	err  error // the attach's error; set before once returns

	mu       sync.Mutex
	stream   string
	target   int64 // the topic's last seq when attached: ready once head reaches it
	ready    bool
	head     int64          // the newest seq in the ring (or before it)
	ring     []cachedUpdate // contiguous seqs, oldest first
	bytes    int
	subs     map[*conn]*subscription
	waiting  map[*conn]*waiter // subscribes that came while loading
	stop     func()
	gen      int       // the watch whose entries count; a reset moves it on
	attached bool      // attach has finished
	retired  bool      // let go, or its stream id changed: no longer in hub.topics
	idleAt   time.Time // when its last subscriber left; zero while it has one
}

// waiter is a subscribe held until the topic's ring has caught up; its
// timer answers it unavailable if that takes longer than HistoryTimeout
// (a store that never delivers what it said it has), so no subscribe goes
// unanswered. Stopped when it is served, dropped or the hub closes.
type waiter struct {
	m     protocol.Message
	timer *time.Timer
}

type cachedUpdate struct {
	seq   int64
	frame []byte
	at    time.Time
	size  int // of the data, for the byte limit
}

type subscription struct {
	next int64 // the first seq this subscriber has not been sent
}

// newHub returns a hub over h and starts its goroutine; close stops it.
func newHub(s *Server, h History, lim Retention) *hub {
	hb := &hub{s: s, h: h, lim: lim, topics: map[string]*topic{}, idle: map[*topic]struct{}{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	if l, ok := h.(lingerer); ok {
		hb.linger = l.watchLinger()
	}
	hb.wg.Add(1)
	go hb.run()
	return hb
}

// run stops the watches of retired topics, and lets idle topics go once
// their linger is over: its timer is armed only while a topic is idle.
func (h *hub) run() {
	defer h.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-h.kick:
		case <-timer.C:
		}
		if next := h.letGoIdle(false); !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
		h.mu.Lock()
		ts := h.retired
		h.retired = nil
		h.mu.Unlock()
		for _, t := range ts {
			t.stopWatch()
		}
	}
}

// letGoIdle retires the idle topics whose linger is over (all of them
// with all), and returns when the next one's is (zero: none waits). Their
// watches are stopped by run.
func (h *hub) letGoIdle(all bool) time.Time {
	h.mu.Lock()
	ts := make([]*topic, 0, len(h.idle))
	for t := range h.idle {
		ts = append(ts, t)
	}
	h.mu.Unlock()
	now := time.Now()
	var next time.Time
	for _, t := range ts {
		t.mu.Lock()
		idle := !t.retired && !t.idleAt.IsZero()
		due := idle && (all || !now.Before(t.idleAt.Add(h.linger)))
		if due {
			t.retired = true
			clear(t.ring)
			t.ring, t.bytes = nil, 0
		} else if idle && (next.IsZero() || t.idleAt.Add(h.linger).Before(next)) {
			next = t.idleAt.Add(h.linger)
		}
		t.mu.Unlock()
		switch {
		case due:
			h.retire(t) // takes it out of idle too
		case !idle:
			h.mu.Lock()
			delete(h.idle, t) // joined again (remove puts it back when it is left), or retired
			h.mu.Unlock()
		}
	}
	return next
}

// retire takes t out of the hub (a later subscribe attaches the topic
// afresh) and has its watch stopped.
func (h *hub) retire(t *topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.topics[t.name] == t {
		delete(h.topics, t.name)
	}
	delete(h.idle, t)
	if h.closed {
		return // close stops every topic it took, this one with them
	}
	h.retired = append(h.retired, t)
	signal(h.kick)
}

// stopWatch stops t's watch, once.
func (t *topic) stopWatch() {
	t.mu.Lock()
	stop := t.stop
	t.stop = nil
	for c, w := range t.waiting {
		w.timer.Stop() // the hub closes: no answer comes after
		delete(t.waiting, c)
	}
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// topic returns the topic attached on this node, attaching it on first use.
// ErrNoTopic when the History does not have it.
func (h *hub) topic(ctx context.Context, name string) (*topic, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errHubClosed
	}
	t := h.topics[name]
	if t == nil && len(h.topics) >= h.s.opts.MaxTopics && len(h.idle) > 0 {
		// At the cap: the topics nobody here subscribes to make room.
		h.mu.Unlock()
		h.letGoIdle(true)
		signal(h.kick) // their watches
		h.mu.Lock()
		t = h.topics[name]
	}
	if t == nil {
		if len(h.topics) >= h.s.opts.MaxTopics {
			h.mu.Unlock()
			return nil, ErrTooManyTopics
		}
		t = &topic{name: name, hub: h, subs: map[*conn]*subscription{}, waiting: map[*conn]*waiter{}}
		h.topics[name] = t
	}
	h.mu.Unlock()
	t.once.Do(func() { t.err = t.attach(ctx) })
	if t.err != nil {
		h.mu.Lock()
		if h.topics[name] == t {
			delete(h.topics, name) // not kept: a later publish may create it
		}
		h.mu.Unlock()
		return nil, t.err
	}
	return t, nil
}

// attach loads the topic from the History (Info) and watches it from its
// first retained seq. A stream id that changes while it does so (the
// Watch's first marker names another) makes it load again.
func (t *topic) attach(ctx context.Context) error {
	for range maxAttach {
		info, err := t.hub.h.Info(ctx, t.name)
		if err != nil {
			return err
		}
		t.mu.Lock()
		t.gen++
		gen := t.gen
		t.stream, t.target, t.head = info.Stream, info.Last, info.First-1
		t.ready = t.head >= t.target
		clear(t.ring)
		t.ring, t.bytes = t.ring[:0], 0
		t.mu.Unlock()
		stop, err := t.hub.h.Watch(ctx, t.name, info.First, func(e Entry) { t.deliver(gen, e) })
		if err != nil {
			return err
		}
		t.mu.Lock()
		if t.gen != gen { // a new stream id meanwhile
			t.mu.Unlock()
			stop()
			continue
		}
		t.stop, t.attached = stop, true
		t.mu.Unlock()
		t.hub.s.subscribeLoaded()
		return nil
	}
	return fmt.Errorf("failed to load the topic: its stream id changed %d times while it loaded", maxAttach)
}

// close stops the hub's goroutine and every topic's watch.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	ts := make([]*topic, 0, len(h.topics)+len(h.retired))
	for _, t := range h.topics {
		ts = append(ts, t)
	}
	ts = append(ts, h.retired...)
	h.retired = nil
	h.mu.Unlock()
	close(h.done)
	h.wg.Wait()
	for _, t := range ts {
		t.stopWatch()
	}
}

// deliver takes the topic's next update from the History's watch gen: an
// update, or a stream marker.
func (t *topic) deliver(gen int, e Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen || t.retired {
		return // a watch that is being stopped
	}
	if e.Stream != "" {
		if e.Stream != t.stream {
			t.resetLocked(e.Stream)
		}
		return
	}
	if e.Seq <= t.head {
		return // seen already (a consumer's redelivery)
	}
	if e.Seq > t.head+1 || e.Lost {
		// The History skipped seqs it no longer has: the ring must stay
		// contiguous, so it starts again here. A subscriber resuming
		// from before is told from where it goes on: its loss, with the
		// range (subscribed's from past its since).
		clear(t.ring)
		t.ring, t.bytes = t.ring[:0], 0
	}
	var frame []byte
	if e.Lost {
		t.head = e.Seq // nothing to send: up to here nothing is stored
	} else {
		frame = protocol.Encode(protocol.Message{Type: protocol.TypeUpdate, Topic: t.name, Seq: e.Seq, Data: e.Data})
		t.ring = append(t.ring, cachedUpdate{seq: e.Seq, frame: frame, at: e.Time, size: len(e.Data)})
		t.bytes += len(e.Data)
		t.head = e.Seq
		t.trim(t.hub.s.opts.Now())
	}
	if !t.ready {
		if t.head >= t.target {
			t.ready = true
			for c, w := range t.waiting {
				delete(t.waiting, c)
				w.timer.Stop()
				if c.ctx.Err() == nil {
					t.serveLocked(c, w.m)
				}
			}
		}
		return
	}
	for c, sub := range t.subs {
		if e.Seq >= sub.next {
			sub.next = e.Seq + 1
			if frame != nil {
				c.offer(frame)
			}
		}
	}
}

// resetLocked handles a new stream id for the topic: the entries of the
// current watch are ignored from now on. While attach runs it loads the
// topic again; after, the topic is retired and its subscribers told, so
// they subscribe again and meet the new stream. Called with t.mu held.
func (t *topic) resetLocked(stream string) {
	t.gen++
	if !t.attached {
		return
	}
	t.retired = true
	n := len(t.subs) + len(t.waiting)
	t.hub.s.log.Info("topic's history has a new stream id: its subscribers are told to subscribe again",
		"stream_was", t.stream, "stream", stream, "subscribers", n)
	frame := func(c *conn) []byte {
		return c.encode(protocol.UnsubscribedFrame{Type: protocol.TypeUnsubscribed, Topic: t.name, Reason: reasonStreamReset})
	}
	for c := range t.subs {
		c.subMu.Lock()
		if c.subs[t.name] == t {
			delete(c.subs, t.name)
		}
		c.subMu.Unlock()
		t.hub.s.presence.leave(c, t.name) // it joins again with its subscribe
		c.offer(frame(c))
	}
	for c, w := range t.waiting {
		w.timer.Stop()
		c.offer(frame(c))
	}
	clear(t.subs)
	clear(t.waiting)
	clear(t.ring)
	t.ring, t.bytes = nil, 0
	t.hub.retire(t)
}

// trim drops the ring's oldest updates past the retention limits.
func (t *topic) trim(now time.Time) {
	lim := t.hub.lim
	cut := now.Add(-lim.MaxAge)
	n := 0
	for n < len(t.ring) && (len(t.ring)-n > lim.MaxMsgs || t.bytes > lim.MaxBytes || t.ring[n].at.Before(cut)) {
		t.bytes -= t.ring[n].size
		t.ring[n] = cachedUpdate{}
		n++
	}
	if n > 0 {
		t.ring = append(t.ring[:0], t.ring[n:]...)
	}
}

// first is the oldest seq the ring can replay (head+1 when it is empty).
func (t *topic) first() int64 {
	if len(t.ring) > 0 {
		return t.ring[0].seq
	}
	return t.head + 1
}

// serveLocked answers a subscribe: "subscribed" with the first seq to
// follow, the replay, then live updates. The subscription is recorded
// first, so whoever reads "subscribed" finds it counted (Stats, presence). Called
// with t.mu held: live updates wait for the replay.
func (t *topic) serveLocked(c *conn, m protocol.Message) {
	t.trim(t.hub.s.opts.Now())
	from := t.head + 1 // no since: live only
	if m.HasSince {
		since := m.Since
		if m.Stream != "" && m.Stream != t.stream {
			since = 0 // a cursor from another stream means nothing here: everything retained
		}
		from = max(since+1, t.first())
	}
	t.subs[c] = &subscription{next: max(from, t.head+1)}
	t.idleAt = time.Time{} // in use: not let go
	c.subMu.Lock()
	if c.subs == nil {
		c.subs = map[string]*topic{}
	}
	c.subs[t.name] = t
	c.subMu.Unlock()
	// In presence before subscribed is queued too: whoever reads subscribed
	// finds the user listed (a watcher gets its own join just before).
	t.hub.s.presence.join(c, t.name, m.Presence)
	c.offer(c.encode(protocol.SubscribedFrame{Type: protocol.TypeSubscribed, Topic: t.name, From: from, Head: t.head, Stream: t.stream}))
	for _, u := range t.ring {
		if u.seq >= from {
			c.offer(u.frame)
		}
	}
}

// remove drops c's subscription (and its place in presence); it reports
// whether there was one. A topic left with no subscriber on this node is
// released, as centrifuge's hub unsubscribes a node from a channel its
// last client left: retired (its watch stopped by the hub's goroutine,
// its ring dropped), so it no longer counts toward MaxTopics here and the
// History may forget it; the next subscribe attaches it afresh (a replay
// then comes from the History), and one that found it just before looks
// it up again (serveOrWait). With a linger (lingerer) it is only marked
// idle here, and let go by the hub's goroutine once the linger is over.
func (t *topic) remove(c *conn) bool {
	t.mu.Lock()
	_, had := t.subs[c]
	delete(t.subs, c)
	if w := t.waiting[c]; w != nil {
		w.timer.Stop()
		delete(t.waiting, c)
	}
	t.releaseIfIdle() // unlocks t.mu
	t.hub.s.presence.leave(c, t.name)
	return had
}

// releaseIfIdle lets t go, or marks it idle (lingerer), if it has no
// subscriber or waiting subscribe left. Called with t.mu held; it
// unlocks it.
func (t *topic) releaseIfIdle() {
	h := t.hub
	idle := t.attached && !t.retired && len(t.subs) == 0 && len(t.waiting) == 0
	linger := idle && h.linger > 0
	switch {
	case linger:
		if t.idleAt.IsZero() {
			t.idleAt = time.Now()
		}
	case idle:
		t.retired = true
		clear(t.ring)
		t.ring, t.bytes = nil, 0
	}
	t.mu.Unlock()
	switch {
	case linger:
		h.mu.Lock()
		if h.topics[t.name] == t {
			h.idle[t] = struct{}{}
		}
		h.mu.Unlock()
		signal(h.kick) // run arms its timer
	case idle:
		h.retire(t)
	}
}

// expire answers a subscribe that waited HistoryTimeout for the topic's
// ring to catch up with unavailable (the client asks again), unless it
// was served or dropped meanwhile.
func (t *topic) expire(c *conn, w *waiter) {
	t.mu.Lock()
	if t.waiting[c] != w {
		t.mu.Unlock()
		return
	}
	delete(t.waiting, c)
	t.releaseIfIdle() // unlocks t.mu
	t.hub.s.log.Debug("a subscribe waited too long for its topic to load: answered unavailable", "within", t.hub.s.opts.HistoryTimeout)
	c.errorsOut.Add(1)
	c.offer(c.encode(protocol.ErrorFrame{Type: protocol.TypeError, Topic: t.name, Code: protocol.ErrUnavailable,
		Message: "the topic's history is unavailable; try again"}))
}

// subscribe serves a subscribe frame (on c's reader).
func (c *conn) subscribe(m protocol.Message) {
	s := c.s
	if f := s.hook(); f != nil && f.DropsService() {
		return // the service is down: subscribes are ignored, not refused
	}
	if c.overSubscribeRate(m) {
		return
	}
	c.subMu.Lock()
	_, again := c.subs[m.Topic]
	n := len(c.subs)
	c.subMu.Unlock()
	if !again && n >= s.opts.MaxSubscriptions {
		c.sendTopicError(m.Topic, protocol.ErrTooManySubs, "at most "+strconv.Itoa(s.opts.MaxSubscriptions)+" topics per connection")
		return
	}
	if e := c.authorize(c.ctx, Action{Kind: ActSubscribe, Topic: m.Topic}); e != nil {
		c.sendTopicError(m.Topic, e.Code, e.Message)
		return
	}
	if m.Presence {
		// Its events say who is there, as the wsready.presence request does.
		if e := c.authorize(c.ctx, Action{Kind: ActPresence, Topic: m.Topic}); e != nil {
			c.sendTopicError(m.Topic, e.Code, e.Message)
			return
		}
	}
	ctx, cancel := context.WithTimeout(c.ctx, s.opts.HistoryTimeout)
	defer cancel()
	// Twice at most: a topic retired between the lookup and its lock (its
	// stream id changed) is attached afresh.
	created := false
	for range 3 {
		t, err := s.hub.topic(ctx, m.Topic)
		switch {
		case errors.Is(err, ErrNoTopic) && !created:
			// A topic exists as soon as someone may join it: the
			// subscriber gets everything published after this. Bounded
			// by MaxTopics, like a publish that creates one.
			created = true
			if err := s.hub.h.Create(ctx, m.Topic); errors.Is(err, ErrTooManyTopics) {
				c.sendTopicError(m.Topic, protocol.ErrTooManyTopics, "the server's topic cap is reached")
				return
			} else if err != nil {
				s.subscribeFailed(err)
				c.sendTopicError(m.Topic, protocol.ErrUnavailable, "the topic's history is unavailable; try again")
				return
			}
			continue
		case errors.Is(err, ErrNoTopic):
			c.sendTopicError(m.Topic, protocol.ErrUnavailable, "the topic's history is unavailable; try again")
			return
		case errors.Is(err, ErrTooManyTopics):
			c.sendTopicError(m.Topic, protocol.ErrTooManyTopics, "this node has reached its topic cap")
			return
		case err != nil:
			s.subscribeFailed(err) // not the error's text: it may quote the peer's topic name
			c.sendTopicError(m.Topic, protocol.ErrUnavailable, "the topic's history is unavailable; try again")
			return
		}
		if t.serveOrWait(c, m) {
			return
		}
	}
	c.sendTopicError(m.Topic, protocol.ErrUnavailable, "the topic's history is unavailable; try again")
}

// overSubscribeRate answers a subscribe past the connection's
// SubscribeRate with rate_limited and retryAfterMs, and reports true.
// Called by the reader only.
func (c *conn) overSubscribeRate(m protocol.Message) bool {
	o := c.s.opts
	if c.subLim == nil {
		c.subLim = rate.NewLimiter(rate.Limit(o.SubscribeRate), o.SubscribeBurst)
	}
	now := o.Now()
	res := c.subLim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	if res.OK() && wait <= 0 {
		return false
	}
	res.CancelAt(now)
	ms := max(int64(math.Ceil(float64(wait)/float64(time.Millisecond))), 1)
	c.errorsOut.Add(1)
	c.s.metrics.subLimited.Inc()
	c.reply(protocol.ErrorFrame{Type: protocol.TypeError, Topic: m.Topic, Code: protocol.ErrRateLimited, RetryAfterMs: ms,
		Message: "this connection subscribes more than " + strconv.FormatFloat(o.SubscribeRate, 'g', -1, 64) + " times per second: retry after retryAfterMs"})
	return true
}

// serveOrWait serves a subscribe, or holds it until the ring has caught
// up; false if t was retired meanwhile.
func (t *topic) serveOrWait(c *conn, m protocol.Message) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.retired:
		return false
	case !t.ready:
		// Served when the ring has caught up, or answered unavailable
		// after HistoryTimeout.
		if old := t.waiting[c]; old != nil {
			old.timer.Stop()
		}
		w := &waiter{m: m}
		w.timer = time.AfterFunc(t.hub.s.opts.HistoryTimeout, func() { t.expire(c, w) })
		t.waiting[c] = w
		t.idleAt = time.Time{}
	default:
		t.serveLocked(c, m)
	}
	return true
}

// unsubscribe serves an unsubscribe frame.
func (c *conn) unsubscribe(m protocol.Message) {
	c.subMu.Lock()
	t := c.subs[m.Topic]
	delete(c.subs, m.Topic)
	c.subMu.Unlock()
	if t != nil {
		t.remove(c)
	}
	c.reply(protocol.UnsubscribedFrame{Type: protocol.TypeUnsubscribed, Topic: m.Topic, Reason: "requested"})
}

// dropSubscriptions removes every subscription of c; with a reason it
// tells the client, one unsubscribed per topic. It returns how many there
// were.
func (c *conn) dropSubscriptions(reason string) int {
	c.subMu.Lock()
	subs := c.subs
	c.subs = nil
	c.subMu.Unlock()
	for name, t := range subs {
		t.remove(c)
		if reason != "" {
			c.offer(c.encode(protocol.UnsubscribedFrame{Type: protocol.TypeUnsubscribed, Topic: name, Reason: reason}))
		}
	}
	if c.ctx.Err() != nil {
		// The connection ended: anything a subscribe served meanwhile
		// (a topic that caught up) leaves presence too.
		c.s.presence.forget(c)
	}
	return len(subs)
}

func (c *conn) subscriptions() int {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	return len(c.subs)
}

// publish serves a publish frame: the update is appended to the topic's
// history and the response carries its seq. With a key, once (idempotency.go).
func (c *conn) publish(m protocol.Message) {
	if resp, ok := c.once(m.Key, contentPrint("publish", m.Topic, m.Data), func(ctx context.Context) (protocol.ResponseFrame, bool) { return c.publishOnce(ctx, m) }); ok {
		resp.ID = m.ID
		c.reply(resp)
	}
}

// publishOnce appends a publish's update under ctx; false: no answer (the
// service is down).
func (c *conn) publishOnce(pctx context.Context, m protocol.Message) (protocol.ResponseFrame, bool) {
	s := c.s
	fail := func(code, msg string) (protocol.ResponseFrame, bool) {
		return protocol.ResponseFrame{Type: protocol.TypeResponse, Error: &protocol.ErrorBody{Code: code, Message: msg}}, true
	}
	if e := c.authorize(pctx, Action{Kind: ActPublish, Topic: m.Topic}); e != nil {
		return fail(e.Code, e.Message)
	}
	f := s.hook()
	if f != nil && f.OwnsTopic(m.Topic) {
		return fail(protocol.ErrForbidden, "the "+protocol.DefaultTopic+" topic is the demo feed's own")
	}
	if f != nil && f.DropsService() {
		return protocol.ResponseFrame{}, false // the service is down: publishes go unanswered, like requests
	}
	ctx, cancel := context.WithTimeout(pctx, s.opts.HistoryTimeout)
	seq, err := s.hub.h.Append(ctx, m.Topic, m.Data, true)
	cancel()
	switch {
	case errors.Is(err, ErrTooManyTopics):
		return fail(protocol.ErrTooManyTopics, "the server's topic cap is reached")
	case err != nil:
		if pctx.Err() == nil { // not the connection ending
			s.publishFailed(err)
		}
		return fail(protocol.ErrUnavailable, "the topic's history is unavailable; try again")
	default:
		s.publishStored()
		s.metrics.published.Inc()
		return protocol.ResponseFrame{Type: protocol.TypeResponse, Result: []byte(`{"seq":` + itoa64(seq) + `}`)}, true
	}
}

// errKind names an error's kind for logs without its text, which may
// carry a topic name a peer chose.
func errKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "history backend error"
}

func (c *conn) sendTopicError(topic, code, msg string) {
	c.errorsOut.Add(1)
	c.reply(protocol.ErrorFrame{Type: protocol.TypeError, Topic: topic, Code: code, Message: msg})
}

// Publish appends data (valid JSON) to topic from the backend's side, as
// the demo feed does, creating the topic if needed; it returns the seq.
// It works with Options.Publish off (that switch is for clients).
func (s *Server) Publish(ctx context.Context, topic string, data []byte) (int64, error) {
	if !protocol.ValidTopic(topic) {
		return 0, errors.New("server: invalid topic name")
	}
	if !protocol.Valid(data) {
		return 0, errors.New("server: data is not valid JSON")
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.HistoryTimeout)
	defer cancel()
	seq, err := s.hub.h.Append(actx, topic, data, true)
	switch {
	case err == nil:
		s.publishStored()
	case errors.Is(err, ErrTooManyTopics), ctx.Err() != nil:
		// The topic cap, or the caller gave up: not the backend failing.
	default:
		s.publishFailed(err)
	}
	return seq, err
}

// publishFailed counts a publish the History failed to store, and logs
// the first of a run of them.
func (s *Server) publishFailed(err error) {
	s.metrics.publishFailures.Inc()
	p := &s.hub.pub
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed++
	if !p.failing.Load() {
		p.failing.Store(true)
		s.logs.Warn("publishes not stored: the history backend failed", "cause", errKind(err))
	}
}

// publishStored ends a run of failures, if one was on, with one line.
func (s *Server) publishStored() {
	p := &s.hub.pub
	if !p.failing.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failing.Load() {
		p.failing.Store(false)
		s.logs.Info("publishes stored again", "failed", p.failed)
		p.failed = 0
	}
}
