//go:build !js

package server

import (
	"context"
	"errors"
	"sync"
	"time"
)

// sendQueue holds one connection's outbound frames, bounded in bytes: the
// frames waiting and the batch being written both count until written. It
// starts empty and grows on demand, so an idle connection costs no buffer.
type sendQueue struct {
	mu     sync.Mutex
	frames [][]byte
	bytes  int
	peak   int // the most bytes ever held, for tests and stats
	limit  int
	closed bool
	// flushing: a writer is at work (conn.writeInline or conn.flush);
	// set by the add that finds the queue idle, cleared by the writer when
	// it finds the queue empty. start runs (under mu) when add sets it; if
	// it returns true, add's caller runs the writer (conn.startWriter).
	flushing bool
	start    func() bool
	head     int           // frames[head:] wait; pop takes from the front
	space    chan struct{} // cap 1: bytes were written
}

var (
	errQueueFull   = errors.New("send queue over its byte bound")
	errQueueClosed = errors.New("send queue closed")
)

// newSendQueue returns a queue of limit bytes; start runs when frames
// arrive and no writer is at work, and if it returns true the add that ran
// it reports that its caller is the writer now (nil start: the caller takes
// frames itself, as tests do).
func newSendQueue(limit int, start func() bool) *sendQueue {
	return &sendQueue{limit: limit, start: start, space: make(chan struct{}, 1)}
}

// offer queues f without waiting. It fails with errQueueFull if f would
// take the queue past its limit (an empty queue takes any one frame). own
// reports that the queue was idle: the caller must run its writer.
func (q *sendQueue) offer(f []byte) (own bool, err error) {
	return q.add(f, q.limit)
}

func (q *sendQueue) add(f []byte, limit int) (own bool, err error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false, errQueueClosed
	}
	if q.bytes > 0 && q.bytes+len(f) > limit {
		q.mu.Unlock()
		return false, errQueueFull
	}
	q.frames = append(q.frames, f)
	q.bytes += len(f)
	q.peak = max(q.peak, q.bytes)
	if !q.flushing && q.start != nil {
		q.flushing = true
		own = q.start() // under mu: after close, no writer can start
	}
	q.mu.Unlock()
	return own, nil
}

// put queues f once the queue holds at most highWater bytes with it,
// waiting up to timeout for the writer to make room; this is how a reader
// that produces replies is paced by its own connection's writes.
func (q *sendQueue) put(ctx context.Context, f []byte, highWater int, timeout time.Duration) (own bool, err error) {
	var deadline <-chan time.Time
	for {
		own, err := q.add(f, highWater)
		if err != errQueueFull {
			return own, err
		}
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-q.space:
		case <-deadline:
			return false, errQueueFull
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// pop takes the first frame queued; its bytes stay counted until written
// reports them. None (ok false) ends the writer's turn: the next add makes
// a new writer.
func (q *sendQueue) pop() (f []byte, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.frames) {
		q.flushing = false
		return nil, false
	}
	f = q.frames[q.head]
	q.frames[q.head] = nil
	q.head++
	if q.head == len(q.frames) {
		q.head = 0
		q.frames = q.frames[:0]
		if cap(q.frames) > 64 {
			q.frames = nil // a burst is over: let its backing array go
		}
	}
	return f, true
}

// take moves the queued frames into buf (reused between calls) and returns
// it; their bytes stay counted until written reports them. An empty result
// ends the flusher's turn: the next add starts another.
func (q *sendQueue) take(buf [][]byte) [][]byte {
	q.mu.Lock()
	if len(q.frames) == q.head {
		q.flushing = false
	}
	buf = append(buf[:0], q.frames[q.head:]...)
	clear(q.frames)
	q.frames, q.head = q.frames[:0], 0
	if cap(q.frames) > 64 {
		q.frames = nil // a burst is over: let its backing array go
	}
	q.mu.Unlock()
	return buf
}

// written releases n bytes of frames that were taken and written.
func (q *sendQueue) written(n int) {
	q.mu.Lock()
	q.bytes -= n
	q.mu.Unlock()
	signal(q.space)
}

// close drops what is queued and makes later adds fail.
func (q *sendQueue) close() {
	q.mu.Lock()
	q.closed = true
	clear(q.frames)
	q.frames, q.head = nil, 0
	q.mu.Unlock()
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
