//go:build !js

package server

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Idempotency keys (stage 8). A request or a publish that carries a key
// is answered from a bounded cache, so a client that sends it again (it
// queued it while not READY, or resent it after a reconnect) has it run
// once: a repeat while the first is still running waits for it; a repeat
// within IdempotencyWindow after it gets the same answer, under its own
// id. Entries are keyed by (scope, key), the scope being whose the key is:
//
//   - the identity's user (with its tenant), when the connection has one;
//   - else the client id of its verified ticket (the demo's tickets);
//   - else, for an anonymous connection, its address (an IPv6 /64): the
//     scope a reconnect from the same network keeps. Keys are random (the
//     client draws 96 bits), so two anonymous clients behind one address
//     meet only if one copies the other's key.
//
// The cache holds at most MaxIdempotencyKeys entries and
// maxIdempotencyBytes of answers per node, the least recently used
// dropped first; an entry still running is never dropped (a key whose
// entry cannot be made runs uncached). An answer is kept for
// IdempotencyWindow after it was given. Nothing is cached across nodes:
// a retry that reaches another node runs again.

// maxIdempotencyBytes bounds the answers the cache holds, in bytes of
// their results and errors (32 MiB per node).
const maxIdempotencyBytes = 32 << 20

type idemKey struct{ scope, key string }

type idemEntry struct {
	k        idemKey
	done     chan struct{} // closed when the first run has finished
	resp     protocol.ResponseFrame
	answered bool      // the run gave an answer (not: the service was down)
	at       time.Time // when it finished
	size     int
	elem     *list.Element
}

type idemCache struct {
	window time.Duration
	max    int
	now    func() time.Time

	mu      sync.Mutex
	entries map[idemKey]*idemEntry
	lru     *list.List // of *idemEntry, most recently used first
	bytes   int
}

func newIdemCache(o *Options) *idemCache {
	return &idemCache{window: o.IdempotencyWindow, max: o.MaxIdempotencyKeys, now: o.Now,
		entries: map[idemKey]*idemEntry{}, lru: list.New()}
}

// once answers a request or a publish that carries key: fn's answer, run
// once per (scope, key) within the window. fn reports false when it gives
// no answer (the service is down): nothing is cached then, and a repeat
// that waited for it gets none either. Without a key fn just runs. fn runs
// with c's context without a key; with one, with the server's, since the
// answer is no longer this connection's alone: a client that loses its
// connection and sends the key again finds the run it started going on.
// The answer's ID is the caller's to set.
func (c *conn) once(key string, fn func(ctx context.Context) (protocol.ResponseFrame, bool)) (protocol.ResponseFrame, bool) {
	if key == "" {
		return fn(c.ctx)
	}
	ic := c.s.idem
	k := idemKey{scope: c.idemScope(), key: key}
	for {
		e, first := ic.get(k)
		if e == nil {
			return fn(c.s.ctx) // the cache is full of runs in progress: uncached
		}
		if first {
			return ic.run(e, func() (protocol.ResponseFrame, bool) { return fn(c.s.ctx) })
		}
		select {
		case <-e.done:
		case <-c.ctx.Done():
			return protocol.ResponseFrame{}, false // nobody to answer
		}
		ic.mu.Lock()
		resp, ok := e.resp, e.answered
		ic.mu.Unlock()
		if ok || ic.lookup(k) == nil {
			if ok {
				resp.Result = cloneRaw(resp.Result)
			}
			return resp, ok
		}
		// The first run gave no answer and another has begun: wait for it.
	}
}

// cloneRaw copies a cached result, so no two replies share its bytes.
func cloneRaw(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// idemScope is whose c's keys are (see the top of this file).
func (c *conn) idemScope() string {
	if u := c.identity.User; u != "" {
		return "u\x00" + c.identity.Tenant + "\x00" + u
	}
	c.s.mu.Lock()
	id := c.clientID
	c.s.mu.Unlock()
	if id != "" {
		return "c\x00" + id
	}
	return "a\x00" + addrKey(c.ip)
}

// get returns k's live entry (first false: another run's, done or not),
// or a new one this caller must run (first true), or nil when no entry
// can be made.
func (ic *idemCache) get(k idemKey) (e *idemEntry, first bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	now := ic.now()
	if e := ic.entries[k]; e != nil {
		if !ic.expiredLocked(e, now) {
			ic.lru.MoveToFront(e.elem)
			return e, false
		}
		ic.removeLocked(e)
	}
	ic.evictLocked(now, ic.max-1, maxIdempotencyBytes)
	if len(ic.entries) >= ic.max {
		return nil, false
	}
	e = &idemEntry{k: k, done: make(chan struct{})}
	e.elem = ic.lru.PushFront(e)
	ic.entries[k] = e
	return e, true
}

// lookup returns k's entry, or nil.
func (ic *idemCache) lookup(k idemKey) *idemEntry {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.entries[k]
}

// run runs fn for e and keeps its answer; a run that gives none (or
// panics) leaves no entry.
func (ic *idemCache) run(e *idemEntry, fn func() (protocol.ResponseFrame, bool)) (resp protocol.ResponseFrame, ok bool) {
	defer func() {
		ic.mu.Lock()
		defer ic.mu.Unlock()
		e.at = ic.now()
		if ok {
			e.resp, e.answered = resp, true
			e.resp.ID = 0
			e.resp.Result = cloneRaw(resp.Result)
			e.size = len(resp.Result) + len(e.k.key) + len(e.k.scope)
			if resp.Error != nil {
				e.size += len(resp.Error.Code) + len(resp.Error.Message)
			}
			ic.bytes += e.size
		} else if ic.entries[e.k] == e {
			ic.removeLocked(e)
		}
		close(e.done)
		ic.evictLocked(e.at, ic.max, maxIdempotencyBytes)
	}()
	return fn()
}

// expiredLocked: e's answer is older than the window. A run in progress
// never expires.
func (ic *idemCache) expiredLocked(e *idemEntry, now time.Time) bool {
	select {
	case <-e.done:
		return now.Sub(e.at) >= ic.window
	default:
		return false
	}
}

// evictLocked drops expired entries from the least recently used end, then
// finished ones until at most n entries and maxBytes of answers are left.
// Runs in progress stay.
func (ic *idemCache) evictLocked(now time.Time, n, maxBytes int) {
	for el := ic.lru.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*idemEntry)
		over := len(ic.entries) > n || ic.bytes > maxBytes
		if !over && !ic.expiredLocked(e, now) {
			break
		}
		select {
		case <-e.done:
			ic.removeLocked(e)
		default: // running: it stays
		}
		el = prev
	}
}

func (ic *idemCache) removeLocked(e *idemEntry) {
	ic.lru.Remove(e.elem)
	delete(ic.entries, e.k)
	ic.bytes -= e.size
}

// len is how many entries the cache holds (tests).
func (ic *idemCache) len() int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return len(ic.entries)
}
