//go:build !js

package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"
)

// History keeps each topic's updates, numbered per topic from 1 with no
// gaps, within its retention limits. The server reads it through a hub
// (topics.go) that keeps the retained updates of every topic in use on this
// node, so a replay is served from memory and only loading a topic touches
// the backend. Two implementations: NewMemoryHistory (the default) and
// NewJetStreamHistory (history_jetstream.go).
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
	// called (no call is made once stop returns). fn must not block for
	// long, nor call stop. fn may also be given a stream marker (an Entry
	// with Stream set and no Seq): the entries after it belong to that
	// stream id. One that differs from the id Info gave says the topic's
	// history was given a new id meanwhile (a JetStream store that came
	// back with less than it had): its seqs are unrelated to those before,
	// and the watcher loads the topic again (Info, then a new Watch). fn
	// may also be given a loss marker (Lost set): the seqs up to its Seq
	// not given yet are not stored (a damaged store lost them) and will
	// never come.
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

// Entry is one update of a topic, or a stream marker (see History.Watch).
type Entry struct {
	Seq  int64
	Data []byte
	Time time.Time // when it was appended
	// Stream, set on a marker only, names the stream the entries that
	// follow belong to.
	Stream string
	// Lost, set on a loss marker only (no Data), says every seq up to Seq
	// not given yet is gone: the store lost them.
	Lost bool
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

func newStreamID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
