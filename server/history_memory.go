//go:build !js

package server

import (
	"context"
	"sync"
	"time"
)

// The in-memory History (the default).

// memHistory is History in this process's memory: a bounded ring per topic.
// It is lost when the process ends; every restart starts new streams.
//
// At most maxTopics topics. At the cap, a new topic makes room by
// forgetting every idle one: watched by nobody (no subscriber on this
// node: the hub stops its watch when the last one leaves), made more than
// a second ago, and with no update retained (all gone by age or count),
// so only its seq and stream id go, as in a restart. A client that
// subscribes to one again gets a new stream, and hears its history was
// reset (nothing was lost that the history still had). Below the cap
// nothing is forgotten: a topic's seqs run on for as long as the process
// does.
type memHistory struct {
	lim       Retention
	maxTopics int
	now       func() time.Time

	mu     sync.Mutex
	topics map[string]*memTopic
	// fruitless is when a sweep at the cap last found no idle topic: the
	// next is not before a second later, so a flood of new topics at the
	// cap costs one pass over the topics a second, not one each.
	fruitless time.Time
}

type memTopic struct {
	made     time.Time // when this incarnation was made: not forgotten in its first second
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
		if len(h.topics) >= h.maxTopics && !h.forgetIdleLocked() {
			return nil, ErrTooManyTopics
		}
		t = &memTopic{made: h.now(), stream: newStreamID(), watchers: map[int]func(Entry){}}
		h.topics[topic] = t
	}
	return t, nil
}

// forgetIdleLocked forgets every idle topic (see memHistory) and reports
// whether it forgot any.
func (h *memHistory) forgetIdleLocked() bool {
	now := h.now()
	if !h.fruitless.IsZero() && now.Sub(h.fruitless) < time.Second {
		return false
	}
	freed := false
	for name, t := range h.topics {
		if len(t.watchers) > 0 || now.Sub(t.made) < time.Second {
			continue // watched, or just made (its subscriber is on its way to Watch it)
		}
		h.trim(t)
		if len(t.entries) == 0 {
			delete(h.topics, name)
			freed = true
		}
	}
	h.fruitless = time.Time{}
	if !freed {
		h.fruitless = now
	}
	return freed
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
	// The stream first, as JetStream's Watch gives it: one that differs
	// from what Info said (the topic forgotten and made again between the
	// two) makes the watcher load it again.
	fn(Entry{Stream: t.stream})
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
