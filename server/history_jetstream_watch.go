//go:build !js

package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A Watch follows a topic's stream with a consumer of its own: ephemeral,
// in memory, one replica, no acks, pulled, delivering in stream order. In
// a NATS cluster that consumer lives on one server. When that server dies
// (or the connection loses updates in flight) the Watch makes a new
// consumer, under a new name, from the seq after the last one it gave fn:
// no gap, no repeat.
//
// Why not the client library's ordered consumer, which does the same: it
// makes its consumer again under the same name, with 10 s per try, and a
// cluster keeps a server that was SIGKILLed as a candidate for placement
// until it has missed its events for 150 s (nats-server's orphan check),
// so one time in three its new consumer was placed on the dead server and
// every later try asked for that same consumer: the topic's updates
// stopped on that node for minutes. A new name is a new placement, and a
// try is bounded by jsConsumerCreateTimeout.
const (
	// jsPullExpiry is how long one pull request waits: an idle topic
	// costs one request per 5 s per node.
	jsPullExpiry = 5 * time.Second
	// jsPullHeartbeat is the consumer's idle heartbeat: two missed (2 s)
	// and the consumer is made again.
	jsPullHeartbeat = time.Second
	// jsConsumerCreateTimeout bounds one try to make a consumer.
	jsConsumerCreateTimeout = 3 * time.Second
	// jsConsumerInactive is how long a consumer nobody pulls from lives
	// on (one left behind on a server that was away).
	jsConsumerInactive = 30 * time.Second
	// jsRetryMin and jsRetryMax bound the pause between tries.
	jsRetryMin = 250 * time.Millisecond
	jsRetryMax = 2 * time.Second
	// jsDeleteTimeout bounds the removal of a consumer replaced or
	// stopped.
	jsDeleteTimeout = 2 * time.Second
	// jsWatchLinger is how long the hub keeps a topic attached (its
	// consumer running) after its last subscriber on the node left: a
	// subscribe meanwhile costs no consumer. Making and removing one is a
	// round trip to JetStream each and, left to jsConsumerInactive, about
	// 50 KB on the NATS server and a few goroutines here for 30 s.
	jsWatchLinger = 5 * time.Second
)

// watchLinger makes the hub keep an idle topic's Watch for jsWatchLinger.
func (h *jsHistory) watchLinger() time.Duration { return jsWatchLinger }

// jsWatcher is one Watch: its calls of fn are one at a time (under mu),
// and it tells fn the stream id its entries belong to whenever the topic's
// mark names a new one (a stream given a new id after a loss, here or by
// another node), so the watcher can load the topic again.
type jsWatcher struct {
	h     *jsHistory
	topic string
	fn    func(Entry)
	m     *mark
	ctx   context.Context // ends with stop
	kick  chan struct{}   // (1) make the consumer again
	done  sync.WaitGroup  // run

	mu      sync.Mutex
	told    string                   // the stream id fn was last given
	stopped bool                     // stop was called: fn is not called again
	gen     int                      // the consumer in use; messages of another are dropped
	dseq    uint64                   // the last consumer seq of gen seen: a gap is an update lost in flight
	next    int64                    // the seq after the last one given to fn (from, at first)
	upTo    int64                    // the stream's last seq when the Watch began; 0 once fn has been given up to it
	cc      jetstream.ConsumeContext // nil while run makes the next one
	name    string                   // cc's consumer
}

func (h *jsHistory) Watch(ctx context.Context, topic string, from int64, fn func(Entry)) (func(), error) {
	wctx, cancel := context.WithCancel(context.Background())
	w := &jsWatcher{h: h, topic: topic, fn: fn, m: h.markFor(topic), ctx: wctx, kick: make(chan struct{}, 1), next: max(from, 1)}
	// The stream's last seq before the consumer exists: every seq up to
	// it that is stored is delivered, so once the consumer has nothing
	// pending, the seqs up to it not delivered are not stored (a block
	// of the store truncated): fn is told, so no one waits for them.
	info, err := h.stream(ctx, topic)
	if err == nil {
		w.upTo = int64(info.State.LastSeq)
	}
	w.mu.Lock()
	w.gen = 1
	w.mu.Unlock()
	var cc jetstream.ConsumeContext
	var name string
	var pending uint64
	if err == nil {
		cc, name, pending, err = w.consume(ctx, 1, w.next)
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		cancel()
		return nil, ErrNoTopic
	}
	if err != nil {
		cancel()
		return nil, err
	}
	h.addWatcher(topic, w)
	w.mu.Lock()
	w.cc, w.name = cc, name
	w.syncLocked() // the stream the entries below belong to
	if pending == 0 {
		w.lostLocked()
	}
	w.mu.Unlock()
	w.done.Add(1)
	go w.run()
	return func() {
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		h.removeWatcher(topic, w)
		cancel() // ends run's tries and an update waiting for its mark
		w.done.Wait()
		w.mu.Lock()
		cc, name := w.cc, w.name // nil if stop came while run was making one
		w.mu.Unlock()
		if cc != nil {
			cc.Stop()
			// Removed now rather than left to jsConsumerInactive: a
			// topic joined and left again and again would otherwise
			// keep one consumer per watch for 30 s.
			h.deleteConsumer(topic, name)
		}
	}, nil
}

// lostLocked tells fn, once, that the seqs from next up to upTo are not
// stored: called when the consumer has nothing pending. Called with w.mu
// held.
func (w *jsWatcher) lostLocked() {
	if w.stopped || w.upTo < w.next {
		w.upTo = 0
		return
	}
	w.fn(Entry{Seq: w.upTo, Lost: true})
	w.next, w.upTo = w.upTo+1, 0
}

// consume makes a consumer from seq next, within ctx, and starts pulling
// from it, its messages tagged gen; pending is how many messages it has
// to deliver as it starts.
func (w *jsWatcher) consume(ctx context.Context, gen int, next int64) (_ jetstream.ConsumeContext, _ string, pending uint64, _ error) {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	name := "wsready_" + hex.EncodeToString(b[:])
	cfg := jetstream.ConsumerConfig{Name: name, DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: jsConsumerInactive, Replicas: 1, MemoryStorage: true}
	if next > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, uint64(next)
	}
	cons, err := w.h.js.CreateConsumer(ctx, streamName(w.topic), cfg)
	if err != nil {
		return nil, "", 0, err
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) { w.deliver(gen, msg) },
		jetstream.PullExpiry(jsPullExpiry), jetstream.PullHeartbeat(jsPullHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			// A missed heartbeat, the consumer gone, no responders, the
			// connection closed: whatever it was, a new consumer from the
			// next seq loses nothing.
			w.again(gen)
		}))
	if err != nil {
		w.h.deleteConsumer(w.topic, name)
		return nil, "", 0, err
	}
	return cc, name, cons.CachedInfo().NumPending, nil
}

// again asks run for a new consumer, if gen is still the one in use.
func (w *jsWatcher) again(gen int) {
	w.mu.Lock()
	cur := gen == w.gen && !w.stopped
	w.mu.Unlock()
	if cur {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// deliver gives fn one message of consumer gen, in order, once.
func (w *jsWatcher) deliver(gen int, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		return
	}
	seq := int64(md.Sequence.Stream)
	w.mu.Lock()
	if w.stopped || gen != w.gen {
		w.mu.Unlock()
		return
	}
	if md.Sequence.Consumer != w.dseq+1 {
		// An update went missing between the server and here (lost with
		// a connection): start again from the one after fn's last.
		w.mu.Unlock()
		w.again(gen)
		return
	}
	w.dseq = md.Sequence.Consumer
	if seq < w.next {
		w.mu.Unlock()
		return // given to fn already, by the consumer before
	}
	w.mu.Unlock()
	// An update reaches a client only once the mark covers it. The mark is
	// raised to the stream's end as this consumer sees it, so a burst
	// costs one write, not one per update.
	if !w.h.raiseWatched(w.ctx, w.m, seq, seq+int64(md.NumPending)) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || gen != w.gen || seq < w.next {
		return
	}
	w.syncLocked() // a new id since the last entry comes first
	w.fn(Entry{Seq: seq, Data: msg.Data(), Time: md.Timestamp})
	w.next = seq + 1
	if md.NumPending == 0 && w.upTo > 0 {
		w.lostLocked()
	}
}

// run makes the consumer again each time it is asked to, until stop.
func (w *jsWatcher) run() {
	defer w.done.Done()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		}
		w.mu.Lock()
		w.gen++
		gen, old, oldName := w.gen, w.cc, w.name
		w.dseq, w.cc, w.name = 0, nil, ""
		w.mu.Unlock()
		old.Stop() // run is the only one that clears it, and sets it again or returns
		logged := false
		for pause := jsRetryMin; ; pause = min(2*pause, jsRetryMax) {
			w.mu.Lock()
			next := w.next
			w.mu.Unlock()
			ctx, cancel := context.WithTimeout(w.ctx, jsConsumerCreateTimeout)
			cc, name, _, err := w.consume(ctx, gen, next)
			cancel()
			if err == nil {
				w.mu.Lock()
				w.cc, w.name = cc, name
				w.mu.Unlock()
				if logged {
					w.h.log.Info("JetStream consumer made again: the topic's updates go on", "stream_ref", streamRef(w.topic))
				}
				break
			}
			if w.ctx.Err() != nil {
				return // stop
			}
			if !logged {
				logged = true
				w.h.log.Warn("failed to make a JetStream consumer again: the topic's updates wait on this node, retrying",
					"stream_ref", streamRef(w.topic), "cause", errKind(err))
			}
			select {
			case <-w.ctx.Done():
				return
			case <-time.After(pause):
			}
		}
		w.h.deleteConsumer(w.topic, oldName)
	}
}

// deleteConsumer removes a consumer no longer pulled from, within
// jsDeleteTimeout; one on a server that is away goes by itself after
// jsConsumerInactive.
func (h *jsHistory) deleteConsumer(topic, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), jsDeleteTimeout)
	defer cancel()
	h.js.DeleteConsumer(ctx, streamName(topic), name)
}
