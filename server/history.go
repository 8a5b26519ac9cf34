//go:build !js

package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// History keeps each topic's updates, numbered per topic from 1 with no
// gaps, within its retention limits. The server reads it through a hub
// (topics.go) that keeps the retained updates of every topic in use on this
// node, so a replay is served from memory and only loading a topic touches
// the backend. Two implementations: NewMemoryHistory (the default) and
// NewJetStreamHistory (jetstream.go).
type History interface {
	// Append adds data (valid JSON) to topic and returns its seq. With
	// create false a topic that does not exist is ErrNoTopic; with create
	// true it is made, unless that would pass the topic cap
	// (ErrTooManyTopics).
	Append(ctx context.Context, topic string, data []byte, create bool) (int64, error)
	// Create makes topic, with no update yet, if it does not exist.
	Create(ctx context.Context, topic string) error
	// Info describes topic, or returns ErrNoTopic.
	Info(ctx context.Context, topic string) (TopicInfo, error)
	// Watch calls fn with every update of topic from seq from on: the
	// retained ones (an update already gone is skipped), then each new one
	// as it is appended, in seq order, one call at a time, until stop is
	// called. fn must not block for long.
	Watch(ctx context.Context, topic string, from int64, fn func(Entry)) (stop func(), err error)
	// Close releases the backend.
	Close() error
}

// TopicInfo is where a topic's history stands.
type TopicInfo struct {
	// Stream names this incarnation of the topic's history: seqs from two
	// streams are unrelated (a memory server restarted, a stream recreated).
	Stream string
	First  int64 // the oldest retained seq; Last+1 when none is retained
	Last   int64 // the newest seq; 0 before the first update
}

// Entry is one update of a topic.
type Entry struct {
	Seq  int64
	Data []byte
	Time time.Time // when it was appended
}

// Retention bounds each topic's history: the newest MaxMsgs updates, at
// most MaxBytes of data, none older than MaxAge.
type Retention struct {
	MaxMsgs  int
	MaxBytes int
	MaxAge   time.Duration
}

// Errors of a History.
var (
	ErrNoTopic       = errors.New("no such topic")
	ErrTooManyTopics = errors.New("too many topics")
)

// memHistory is History in this process's memory: a bounded ring per topic.
// It is lost when the process ends; every restart starts new streams.
type memHistory struct {
	lim       Retention
	maxTopics int
	now       func() time.Time

	mu     sync.Mutex
	topics map[string]*memTopic
}

type memTopic struct {
	stream   string
	entries  []Entry // retained, oldest first
	bytes    int
	last     int64
	watchers map[int]func(Entry)
	nextW    int
}

// NewMemoryHistory returns a History kept in memory with the given limits
// per topic and at most maxTopics topics.
func NewMemoryHistory(lim Retention, maxTopics int, now func() time.Time) History {
	if now == nil {
		now = time.Now
	}
	return &memHistory{lim: lim, maxTopics: maxTopics, now: now, topics: map[string]*memTopic{}}
}

func newStreamID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (h *memHistory) Create(_ context.Context, topic string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.topicLocked(topic, true)
	return err
}

func (h *memHistory) topicLocked(topic string, create bool) (*memTopic, error) {
	t := h.topics[topic]
	if t == nil {
		if !create {
			return nil, ErrNoTopic
		}
		if len(h.topics) >= h.maxTopics {
			return nil, ErrTooManyTopics
		}
		t = &memTopic{stream: newStreamID(), watchers: map[int]func(Entry){}}
		h.topics[topic] = t
	}
	return t, nil
}

func (h *memHistory) Append(_ context.Context, topic string, data []byte, create bool) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.topicLocked(topic, create)
	if err != nil {
		return 0, err
	}
	t.last++
	e := Entry{Seq: t.last, Data: append([]byte(nil), data...), Time: h.now()}
	t.entries = append(t.entries, e)
	t.bytes += len(e.Data)
	h.trim(t)
	for _, fn := range t.watchers { // under h.mu: every watcher sees seqs in order
		fn(e)
	}
	return e.Seq, nil
}

// trim drops the oldest entries past the limits.
func (h *memHistory) trim(t *memTopic) {
	cut := h.now().Add(-h.lim.MaxAge)
	n := 0
	for n < len(t.entries) && (len(t.entries)-n > h.lim.MaxMsgs || t.bytes > h.lim.MaxBytes || t.entries[n].Time.Before(cut)) {
		t.bytes -= len(t.entries[n].Data)
		t.entries[n] = Entry{}
		n++
	}
	if n > 0 {
		t.entries = append(t.entries[:0], t.entries[n:]...)
	}
}

func (h *memHistory) Info(_ context.Context, topic string) (TopicInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[topic]
	if t == nil {
		return TopicInfo{}, ErrNoTopic
	}
	h.trim(t)
	first := t.last + 1
	if len(t.entries) > 0 {
		first = t.entries[0].Seq
	}
	return TopicInfo{Stream: t.stream, First: first, Last: t.last}, nil
}

func (h *memHistory) Watch(_ context.Context, topic string, from int64, fn func(Entry)) (func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[topic]
	if t == nil {
		return nil, ErrNoTopic
	}
	for _, e := range t.entries {
		if e.Seq >= from {
			fn(e)
		}
	}
	id := t.nextW
	t.nextW++
	t.watchers[id] = fn
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(t.watchers, id)
	}, nil
}

func (h *memHistory) Close() error { return nil }
