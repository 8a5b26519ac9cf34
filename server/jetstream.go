//go:build !js

package server

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The JetStream mapping. Each topic is a stream of its own, named
// StreamPrefix+topic, holding one subject, SubjectPrefix+topic, so a
// stream's sequence numbers are the topic's seqs: +1 per update, from 1, no
// gaps (JetStream assigns them atomically, whichever node publishes). The
// stream keeps the newest HistoryMsgs updates, none older than HistoryAge
// (limits retention, discard old), on file storage. The stream's creation
// time names its incarnation (TopicInfo.Stream): a stream deleted and made
// again starts a new one, and clients holding cursors of the old one are
// told continuity was lost. Each node loads a topic when first used with an
// ordered consumer from the stream's first retained seq and keeps it
// running for live updates (topics.go). Topic names are already limited to
// characters valid in both a subject token and a stream name.
const (
	StreamPrefix  = "WSREADY_"
	SubjectPrefix = "wsready.topic."
)

type jsHistory struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	lim       Retention
	maxTopics int
	ownConn   bool

	mu    sync.Mutex
	known map[string]bool // topics whose stream exists
}

// NewJetStreamHistory keeps topics in JetStream over nc. With own set,
// Close closes nc.
func NewJetStreamHistory(nc *nats.Conn, lim Retention, maxTopics int, own bool) (History, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &jsHistory{nc: nc, js: js, lim: lim, maxTopics: maxTopics, ownConn: own, known: map[string]bool{}}, nil
}

func streamName(topic string) string { return StreamPrefix + topic }

// ensure makes topic's stream if it does not exist yet.
func (h *jsHistory) ensure(ctx context.Context, topic string) error {
	h.mu.Lock()
	known := h.known[topic]
	h.mu.Unlock()
	if known {
		return nil
	}
	_, err := h.js.Stream(ctx, streamName(topic))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if n, cerr := h.count(ctx); cerr != nil {
			return cerr
		} else if n >= h.maxTopics {
			return ErrTooManyTopics
		}
		_, err = h.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       streamName(topic),
			Subjects:   []string{SubjectPrefix + topic},
			Retention:  jetstream.LimitsPolicy,
			Discard:    jetstream.DiscardOld,
			MaxMsgs:    int64(h.lim.MaxMsgs),
			MaxAge:     h.lim.MaxAge,
			MaxMsgSize: 64 << 10,
			Storage:    jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // another node made it first
		}
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.known[topic] = true
	h.mu.Unlock()
	return nil
}

// count is the number of wsready streams.
func (h *jsHistory) count(ctx context.Context) (int, error) {
	l := h.js.StreamNames(ctx, jetstream.WithStreamListSubject(SubjectPrefix+">"))
	n := 0
	for range l.Name() {
		n++
	}
	return n, l.Err()
}

func (h *jsHistory) Create(ctx context.Context, topic string) error { return h.ensure(ctx, topic) }

func (h *jsHistory) Append(ctx context.Context, topic string, data []byte, create bool) (int64, error) {
	if create {
		if err := h.ensure(ctx, topic); err != nil {
			return 0, err
		}
	} else if _, err := h.Info(ctx, topic); err != nil {
		return 0, err
	}
	ack, err := h.js.Publish(ctx, SubjectPrefix+topic, data, jetstream.WithExpectStream(streamName(topic)))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			h.mu.Lock()
			delete(h.known, topic) // deleted behind our back: made again next time
			h.mu.Unlock()
		}
		return 0, err
	}
	return int64(ack.Sequence), nil
}

func (h *jsHistory) Info(ctx context.Context, topic string) (TopicInfo, error) {
	st, err := h.js.Stream(ctx, streamName(topic))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return TopicInfo{}, ErrNoTopic
	}
	if err != nil {
		return TopicInfo{}, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return TopicInfo{}, err
	}
	last := int64(info.State.LastSeq)
	first := int64(info.State.FirstSeq)
	if info.State.Msgs == 0 {
		first = last + 1
	}
	return TopicInfo{Stream: strconv.FormatInt(info.Created.UnixNano(), 36), First: first, Last: last}, nil
}

func (h *jsHistory) Watch(ctx context.Context, topic string, from int64, fn func(Entry)) (func(), error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(from)}
	}
	cons, err := h.js.OrderedConsumer(ctx, streamName(topic), cfg)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, ErrNoTopic
	}
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		fn(Entry{Seq: int64(md.Sequence.Stream), Data: m.Data(), Time: md.Timestamp})
	})
	if err != nil {
		return nil, err
	}
	return cc.Stop, nil
}

func (h *jsHistory) Close() error {
	if h.ownConn {
		h.nc.Close()
	}
	return nil
}

// natsConnectTimeout bounds the first connection to NATS.
const natsConnectTimeout = 5 * time.Second

// ConnectJetStream connects to the NATS server at url (one or several,
// comma-separated) and returns a History over its JetStream. The
// connection reconnects forever; Close ends it.
func ConnectJetStream(url string, lim Retention, maxTopics int) (History, error) {
	// No reconnect buffer: a publish while NATS is away fails at once
	// (unavailable) instead of being held and stored later, after the
	// publisher was told it failed.
	nc, err := nats.Connect(url, nats.Name("wsready"), nats.Timeout(natsConnectTimeout),
		nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false), nats.ReconnectBufSize(-1))
	if err != nil {
		return nil, err
	}
	h, err := NewJetStreamHistory(nc, lim, maxTopics, true)
	if err != nil {
		nc.Close()
	}
	return h, err
}
