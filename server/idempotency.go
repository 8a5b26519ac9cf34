//go:build !js

package server

import (
	"container/heap"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"sync"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Idempotency keys (stage 8). A request or a publish that carries a key
// is answered from a bounded cache, so a client that sends it again (it
// queued it while not READY, or resent it after a reconnect) has it run
// once: a repeat while the first is still running waits for it; a repeat
// within IdempotencyWindow after it gets the same answer, under its own
// id. Entries are kept per scope, the scope being whose the key is:
//
//   - the identity's user (with its tenant), when the connection has one:
//     a resend from any connection of that user, after a reconnect too,
//     finds it;
//   - else the connection's session (an anonymous connection's keys are
//     its own: a resend on a new connection runs again). Not its address:
//     clients behind one address (a NAT, a proxy without TrustedProxies)
//     would share one scope, and one of them could evict the others' keys.
//
// A key is bound to what it was first sent with: the request's method and
// params, or the publish's topic and data, byte for byte (a SHA-256 of
// them is kept). The same key with other content is answered with error
// idempotency_key_reused and runs nothing: answering it with the first
// call's result would say it was done when it was not.
//
// Bounds. A scope holds at most MaxIdempotencyKeysPerScope entries and
// maxIdempotencyScopeBytes of answers: past either, its own least
// recently used answers go, so one scope's flood never evicts another's
// keys. The node holds at most MaxIdempotencyKeys entries and
// maxIdempotencyBytes of answers in all: past either, the answers that go
// are the largest scope's (the most entries, or the most bytes), the
// fair share: a scope that holds no more than any other keeps its keys.
// An entry still running is never dropped: a key that would need one
// dropped (its scope, or the largest one, is all runs in progress) is
// refused with error too_many_pending and runs nothing. An answer is
// kept for IdempotencyWindow after it was given. Nothing is cached across
// nodes: a retry that reaches another node runs again.

// The bounds on answers, in bytes of their results and errors: 32 MiB
// per node, 1 MiB per scope.
const (
	maxIdempotencyBytes      = 32 << 20
	maxIdempotencyScopeBytes = 1 << 20
)

// idemPrint is a SHA-256 of what a key was sent with.
type idemPrint [sha256.Size]byte

// contentPrint hashes a call's kind ("request", "publish"), its name (the
// method or the topic) and its body (the params or the data), each
// length-prefixed so no two calls hash alike by shifting bytes between
// fields.
func contentPrint(kind, name string, body []byte) idemPrint {
	h := sha256.New()
	for _, b := range [][]byte{[]byte(kind), []byte(name), body} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	var p idemPrint
	h.Sum(p[:0])
	return p
}

type idemEntry struct {
	sc       *idemScope
	key      string
	fp       idemPrint     // what the key was first sent with
	done     chan struct{} // closed when the first run has finished
	resp     protocol.ResponseFrame
	answered bool      // the run gave an answer (not: the service was down)
	at       time.Time // when it finished
	size     int
	elem     *list.Element
}

// idemScope is one scope's entries.
type idemScope struct {
	name    string
	entries map[string]*idemEntry
	lru     *list.List // of *idemEntry, most recently used first
	bytes   int
	idx     int // in idemCache.largest
}

type idemCache struct {
	window   time.Duration
	max      int // entries per node
	perScope int // entries per scope
	now      func() time.Time

	mu      sync.Mutex
	scopes  map[string]*idemScope
	largest scopeHeap // the scopes, the one with the most entries on top
	n       int       // entries in all scopes
	bytes   int       // of answers in all scopes
	swept   time.Time // the last sweep of every scope's expired entries
}

func newIdemCache(o *Options) *idemCache {
	return &idemCache{window: o.IdempotencyWindow, max: o.MaxIdempotencyKeys, perScope: o.MaxIdempotencyKeysPerScope, now: o.Now,
		scopes: map[string]*idemScope{}}
}

// The answers once gives when a key cannot be run through the cache.
var (
	errKeyReused = &protocol.ErrorBody{Code: protocol.ErrIdempotencyKeyReused,
		Message: "this idempotency key was sent with another method, params, topic or data: use a new key for a new call"}
	errKeysBusy = &protocol.ErrorBody{Code: protocol.ErrTooManyPending,
		Message: "too many calls with idempotency keys in progress: try again when they are answered"}
)

// once answers a request or a publish that carries key: fn's answer, run
// once per (scope, key) within the window. fp is what the call was
// sent with (contentPrint): a key already held with another fp is
// refused (idempotency_key_reused), as is one the bounds leave no room
// for (too_many_pending); fn does not run then. fn reports false when it
// gives no answer (the service is down): nothing is cached then, and a
// repeat that waited for it gets none either. Without a key fn just runs.
// fn runs with c's context without a key; with one, with the server's,
// since the answer is no longer this connection's alone: a client that
// loses its connection and sends the key again finds the run it started
// going on. The answer's ID is the caller's to set.
func (c *conn) once(key string, fp idemPrint, fn func(ctx context.Context) (protocol.ResponseFrame, bool)) (protocol.ResponseFrame, bool) {
	if key == "" {
		return fn(c.ctx)
	}
	ic := c.s.idem
	scope := c.idemScope()
	for {
		e, first, refused := ic.get(scope, key, fp)
		if refused != nil {
			eb := *refused // each answer its own
			return protocol.ResponseFrame{Type: protocol.TypeResponse, Error: &eb}, true
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
		if ok || ic.lookup(scope, key) == nil {
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

// idemScope is whose c's keys are (see the top of this file). The tenant
// is length-prefixed: a tenant and a user are any text, and no two pairs
// may make one scope.
func (c *conn) idemScope() string {
	if u := c.identity.User; u != "" {
		t := c.identity.Tenant
		return "u" + strconv.Itoa(len(t)) + ":" + t + u
	}
	return "s:" + c.session
}

// get returns key's live entry in scope (first false: another run's, done
// or not), or a new one this caller must run (first true), or the error
// to answer with when the key was sent with another fp or no entry can
// be made.
func (ic *idemCache) get(scope, key string, fp idemPrint) (e *idemEntry, first bool, refused *protocol.ErrorBody) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	now := ic.now()
	sc := ic.scopes[scope]
	if sc != nil {
		if e := sc.entries[key]; e != nil {
			if !ic.expiredLocked(e, now) {
				if e.fp != fp {
					return nil, false, errKeyReused
				}
				sc.lru.MoveToFront(e.elem)
				return e, false, nil
			}
			ic.removeLocked(e)
			sc = ic.scopes[scope] // gone if that was its last entry
		}
	}
	// Room for one more: first in the scope itself, then in the node.
	if sc != nil && !ic.evictScopeLocked(sc, now, ic.perScope-1, maxIdempotencyScopeBytes) {
		return nil, false, errKeysBusy
	}
	if !ic.evictNodeLocked(now, ic.max-1, maxIdempotencyBytes) {
		return nil, false, errKeysBusy
	}
	if sc = ic.scopes[scope]; sc == nil { // the node's eviction may have emptied it
		sc = &idemScope{name: scope, entries: map[string]*idemEntry{}, lru: list.New()}
		ic.scopes[scope] = sc
		heap.Push(&ic.largest, sc)
	}
	e = &idemEntry{sc: sc, key: key, fp: fp, done: make(chan struct{})}
	e.elem = sc.lru.PushFront(e)
	sc.entries[key] = e
	ic.n++
	heap.Fix(&ic.largest, sc.idx)
	return e, true, nil
}

// lookup returns key's entry in scope, or nil.
func (ic *idemCache) lookup(scope, key string) *idemEntry {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if sc := ic.scopes[scope]; sc != nil {
		return sc.entries[key]
	}
	return nil
}

// run runs fn for e and keeps its answer; a run that gives none (or
// panics) leaves no entry. An answer that takes its scope or the node past
// their byte bounds makes room as a new entry does, or, if only runs in
// progress are left to drop, is not kept.
func (ic *idemCache) run(e *idemEntry, fn func() (protocol.ResponseFrame, bool)) (resp protocol.ResponseFrame, ok bool) {
	defer func() {
		ic.mu.Lock()
		defer ic.mu.Unlock()
		e.at = ic.now()
		close(e.done)
		if ok {
			e.resp, e.answered = resp, true
			e.resp.ID = 0
			e.resp.Result = cloneRaw(resp.Result)
			e.size = len(resp.Result) + len(e.key) + len(e.sc.name)
			if resp.Error != nil {
				e.size += len(resp.Error.Code) + len(resp.Error.Message)
			}
			e.sc.bytes += e.size
			ic.bytes += e.size
		} else if e.sc.entries[e.key] == e {
			ic.removeLocked(e)
			return
		}
		if e.sc.entries[e.key] != e {
			return // dropped meanwhile (it expired and the key ran again)
		}
		ic.evictScopeLocked(e.sc, e.at, ic.perScope, maxIdempotencyScopeBytes)
		ic.evictNodeLocked(e.at, ic.max, maxIdempotencyBytes)
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

// evictScopeLocked drops sc's expired entries from its least recently
// used end, then its finished ones until it holds at most n entries and
// maxBytes of answers. It reports false when only runs in progress are
// left and sc is still over.
func (ic *idemCache) evictScopeLocked(sc *idemScope, now time.Time, n, maxBytes int) bool {
	for el := sc.lru.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*idemEntry)
		over := len(sc.entries) > n || sc.bytes > maxBytes
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
	return len(sc.entries) <= n && sc.bytes <= maxBytes
}

// evictNodeLocked makes the node hold at most n entries and maxBytes of
// answers: every scope's expired entries go first (swept at most once per
// tenth of the window while the node is full), then the largest scope's
// least recently used answers, by entries or, when the bytes are over, by
// bytes. It reports false when the scope to take from holds only runs in
// progress.
func (ic *idemCache) evictNodeLocked(now time.Time, n, maxBytes int) bool {
	if ic.n <= n && ic.bytes <= maxBytes {
		return true
	}
	if now.Sub(ic.swept) >= ic.window/10 {
		ic.swept = now
		for _, sc := range ic.scopes {
			ic.evictScopeLocked(sc, now, len(sc.entries), sc.bytes)
		}
	}
	for ic.n > n || ic.bytes > maxBytes {
		var sc *idemScope
		if ic.n > n {
			sc = ic.largest[0]
		} else {
			for _, s := range ic.scopes { // rare: answers of 32 MiB in all
				if sc == nil || s.bytes > sc.bytes {
					sc = s
				}
			}
		}
		if !ic.dropOldestLocked(sc) {
			return false
		}
	}
	return true
}

// dropOldestLocked drops sc's least recently used finished entry; false
// when it has none.
func (ic *idemCache) dropOldestLocked(sc *idemScope) bool {
	for el := sc.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*idemEntry)
		select {
		case <-e.done:
			ic.removeLocked(e)
			return true
		default:
		}
	}
	return false
}

// removeLocked drops e, and its scope when that is left empty.
func (ic *idemCache) removeLocked(e *idemEntry) {
	sc := e.sc
	sc.lru.Remove(e.elem)
	delete(sc.entries, e.key)
	sc.bytes -= e.size
	ic.n--
	ic.bytes -= e.size
	if len(sc.entries) == 0 {
		heap.Remove(&ic.largest, sc.idx)
		delete(ic.scopes, sc.name)
	} else {
		heap.Fix(&ic.largest, sc.idx)
	}
}

// len is how many entries the cache holds (tests).
func (ic *idemCache) len() int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.n
}

// scopeLen is how many entries scope holds (tests).
func (ic *idemCache) scopeLen(scope string) int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if sc := ic.scopes[scope]; sc != nil {
		return len(sc.entries)
	}
	return 0
}

// scopeHeap orders the scopes by their entries, the most first
// (container/heap), so the node's bound takes from the largest in
// O(log scopes).
type scopeHeap []*idemScope

func (h scopeHeap) Len() int           { return len(h) }
func (h scopeHeap) Less(i, j int) bool { return len(h[i].entries) > len(h[j].entries) }
func (h scopeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *scopeHeap) Push(x any) {
	sc := x.(*idemScope)
	sc.idx = len(*h)
	*h = append(*h, sc)
}
func (h *scopeHeap) Pop() any {
	old := *h
	sc := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	sc.idx = -1
	return sc
}
