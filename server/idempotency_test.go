//go:build !js

package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// slowHistory is a memory History whose Append takes delay and is
// counted per topic.
type slowHistory struct {
	History
	delay   time.Duration
	mu      sync.Mutex
	appends map[string]int
}

func newSlowHistory(delay time.Duration) *slowHistory {
	return &slowHistory{History: NewMemoryHistory(Retention{MaxMsgs: 100, MaxBytes: 1 << 20, MaxAge: time.Hour}, 16, time.Now),
		delay: delay, appends: map[string]int{}}
}

func (h *slowHistory) Append(ctx context.Context, topic string, data []byte, create bool) (int64, error) {
	h.mu.Lock()
	h.appends[topic]++
	h.mu.Unlock()
	select {
	case <-time.After(h.delay):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return h.History.Append(ctx, topic, data, create)
}

func (h *slowHistory) count(topic string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.appends[topic]
}

func keyed(id uint64, key string) protocol.Message {
	return protocol.Message{Type: protocol.TypePublish, ID: id, Topic: "room", Data: []byte(`{"n":1}`), Key: key}
}

// A publish resent with its key after the connection it was sent on died
// (mid-run) runs once: the resend, on a new connection (here the HTTP
// transport, as after a fallback) of the same user, waits for the first
// run and gets its answer under its own id.
func TestAKeyedPublishResentAcrossAReconnectRunsOnce(t *testing.T) {
	h := newSlowHistory(300 * time.Millisecond)
	f := newFixture(t, &Options{Publish: true, History: h, Auth: AuthOptional, IssueTickets: true}, DemoOptions{NoFeed: true})
	tok, _ := f.token(t, "alice")
	a := f.dial()
	a.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
	a.next(protocol.TypeAuthenticated, time.Second)
	a.send(keyed(1, "k-0123456789abcdef"))
	waitFor(t, time.Second, "the first run started", func() bool { return h.count("room") == 1 })
	a.ws.CloseNow() // lost mid-run: the client never hears the answer
	f.waitOpen(0)

	p := &httpPeer{t: t, f: f, session: f.newSession(t, `{"token":"`+tok+`"}`), frames: make(chan protocol.Message, 64), events: make(chan sseEvent, 64), closed: make(chan closeInfo, 4)}
	p.stream("")
	t.Cleanup(p.closeStream)
	p.next(protocol.TypeAuthenticated, time.Second)
	p.send(http.StatusNoContent, keyed(7, "k-0123456789abcdef"))
	r := p.next(protocol.TypeResponse, 2*time.Second)
	if r.ID != 7 || string(r.Result) != `{"seq":1}` {
		t.Fatalf("resent publish answered %+v", r)
	}
	p.send(http.StatusNoContent, keyed(8, "k-0123456789abcdef"))
	if r := p.next(protocol.TypeResponse, 100*time.Millisecond); r.ID != 8 || string(r.Result) != `{"seq":1}` {
		t.Fatalf("again: %+v", r)
	}
	if n := h.count("room"); n != 1 {
		t.Fatalf("the publish ran %d times", n)
	}
	p.send(http.StatusNoContent, keyed(9, "another-key"))
	if r := p.next(protocol.TypeResponse, 2*time.Second); string(r.Result) != `{"seq":2}` {
		t.Fatalf("another key: %+v", r)
	}
	// An anonymous connection's keys are its session's: the same key on
	// another anonymous connection, even from this address, runs.
	anon := f.dial()
	anon.send(keyed(1, "k-0123456789abcdef"))
	if r := anon.next(protocol.TypeResponse, 2*time.Second); string(r.Result) != `{"seq":3}` {
		t.Fatalf("an anonymous connection got alice's answer: %+v", r)
	}
}

// Two sends of one key at once, on two connections of one user, run it
// once; both get the answer.
func TestARepeatWhileTheFirstRunsWaitsForIt(t *testing.T) {
	h := newSlowHistory(200 * time.Millisecond)
	f := newFixture(t, &Options{Publish: true, History: h, Auth: AuthOptional, IssueTickets: true}, DemoOptions{NoFeed: true})
	tok, _ := f.token(t, "alice")
	a, b := f.dial(), f.dial()
	for _, p := range []*peer{a, b} {
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
		p.next(protocol.TypeAuthenticated, time.Second)
	}
	a.send(keyed(1, "same"))
	b.send(keyed(2, "same"))
	ra, rb := a.next(protocol.TypeResponse, 2*time.Second), b.next(protocol.TypeResponse, 2*time.Second)
	if ra.ID != 1 || rb.ID != 2 || string(ra.Result) != `{"seq":1}` || string(rb.Result) != `{"seq":1}` || h.count("room") != 1 {
		t.Fatalf("answers %+v %+v, %d runs", ra, rb, h.count("room"))
	}
}

// A keyed request is answered from the cache within the window, in its
// scope only; a run with no answer (service down) is not kept.
func TestIdempotencyScopeWindowAndBounds(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	f := newFixture(t, &Options{Publish: true, Auth: AuthOptional, IssueTickets: true, Now: now,
		IdempotencyWindow: time.Minute, MaxIdempotencyKeys: 3}, DemoOptions{NoFeed: true})
	timeOf := func(p *peer, id uint64, key string) string {
		t.Helper()
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "time", Key: key})
		r := p.next(protocol.TypeResponse, time.Second)
		if r.ID != id {
			t.Fatalf("response %+v, want id %d", r, id)
		}
		return string(r.Result)
	}
	tick := func() { clock.Add(int64(time.Second)) }
	alice := f.dial()
	alice.send(protocol.Message{Type: protocol.TypeAuth, Token: func() string { s, _ := f.token(t, "alice"); return s }()})
	alice.next(protocol.TypeAuthenticated, time.Second)
	first := timeOf(alice, 1, "k1")
	tick()
	if again := timeOf(alice, 2, "k1"); again != first {
		t.Fatalf("k1 ran again: %s then %s", first, again)
	}
	// Another identity's k1 is its own.
	bob := f.dial()
	bob.send(protocol.Message{Type: protocol.TypeAuth, Token: func() string { s, _ := f.token(t, "bob"); return s }()})
	bob.next(protocol.TypeAuthenticated, time.Second)
	if b := timeOf(bob, 1, "k1"); b == first {
		t.Fatalf("bob got alice's answer %s", b)
	}
	// alice on a new connection: her answer.
	alice2 := f.dial()
	alice2.send(protocol.Message{Type: protocol.TypeAuth, Token: func() string { s, _ := f.token(t, "alice"); return s }()})
	alice2.next(protocol.TypeAuthenticated, time.Second)
	if again := timeOf(alice2, 3, "k1"); again != first {
		t.Fatalf("alice's k1 on a new connection ran again: %s then %s", first, again)
	}
	// Past the window it runs again.
	clock.Add(int64(time.Minute))
	if late := timeOf(alice, 4, "k1"); late == first {
		t.Fatalf("k1 answered from the cache after the window: %s", late)
	}
	// At most 3 keys: the least recently used goes.
	for i, k := range []string{"k2", "k3", "k4", "k5"} {
		tick()
		timeOf(alice, uint64(10+i), k)
	}
	if n := f.srv.idem.len(); n > 3 {
		t.Fatalf("%d keys kept, bound 3", n)
	}
	tick()
	k5 := timeOf(alice, 20, "k5")
	tick()
	if k2 := timeOf(alice, 21, "k2"); k2 == k5 {
		t.Fatal("evicted k2 answered from the cache")
	}
	if again := timeOf(alice, 22, "k5"); again != k5 {
		t.Fatalf("k5 ran again: %s then %s", k5, again)
	}
	// Service down: no answer, nothing kept.
	f.set("serviceDown", true)
	alice.send(keyed(30, "pub"))
	if r, ok := alice.maybe(protocol.TypeResponse, 200*time.Millisecond); ok {
		t.Fatalf("a publish answered while the service is down: %+v", r)
	}
	f.set("serviceDown", false)
	alice.send(keyed(31, "pub"))
	if r := alice.next(protocol.TypeResponse, time.Second); r.ID != 31 || string(r.Result) != `{"seq":1}` {
		t.Fatalf("publish after service down: %+v", r)
	}
}

// The node's bound takes from the largest scope, never a smaller one's:
// eight anonymous sessions each filling their own bound fill the node,
// and A's three keys stay. A scope whose entries are all runs in progress
// refuses a new key (too_many_pending) and runs nothing. The bound per
// scope is at most the node's.
func TestIdempotencyNodeBoundTakesFromTheLargestScope(t *testing.T) {
	f := newFixture(t, &Options{Publish: true, MaxIdempotencyKeys: 40, MaxIdempotencyKeysPerScope: 10}, DemoOptions{NoFeed: true})
	a := f.dial()
	aScope := "s:" + a.next(protocol.TypeWelcome, time.Second).Session
	seqs := map[string]string{}
	for i, k := range []string{"a1", "a2", "a3"} {
		seqs[k] = string(publishWait(a, uint64(i+1), "room", `{"n":1}`, k).Result)
	}
	for s := range 8 {
		p := f.dial()
		scope := "s:" + p.next(protocol.TypeWelcome, time.Second).Session
		for i := range 15 {
			if r := publishWait(p, uint64(i+1), "flood", `1`, "f-"+strconv.Itoa(i)); r.Error != nil {
				t.Fatalf("session %d key %d: %+v", s, i, r.Error)
			}
		}
		if n := f.srv.idem.scopeLen(scope); n > 10 || n == 0 {
			t.Fatalf("session %d holds %d keys, want 1 to its bound, 10", s, n)
		}
	}
	if n := f.srv.idem.len(); n != 40 {
		t.Fatalf("the node holds %d keys, want its bound, 40", n)
	}
	if n := f.srv.idem.scopeLen(aScope); n != 3 {
		t.Fatalf("A's scope holds %d keys, want its 3", n)
	}
	for i, k := range []string{"a1", "a2", "a3"} {
		if r := publishWait(a, uint64(10+i), "room", `{"n":1}`, k); string(r.Result) != seqs[k] {
			t.Fatalf("A's %s after the others filled the node: %+v, want %s", k, r, seqs[k])
		}
	}

	// One key per scope, and alice's one is still running on another
	// connection: her second key is refused, and does not run.
	h := newSlowHistory(300 * time.Millisecond)
	g := newFixture(t, &Options{Publish: true, History: h, Auth: AuthOptional, IssueTickets: true, MaxIdempotencyKeysPerScope: 1}, DemoOptions{NoFeed: true})
	tok, _ := g.token(t, "alice")
	b, c := g.dial(), g.dial()
	for _, p := range []*peer{b, c} {
		p.send(protocol.Message{Type: protocol.TypeAuth, Token: tok})
		p.next(protocol.TypeAuthenticated, time.Second)
	}
	b.send(keyed(1, "first"))
	waitFor(t, time.Second, "the first run started", func() bool { return h.count("room") == 1 })
	if r := publishWait(c, 2, "room", `{"n":1}`, "second"); r.Error == nil || r.Error.Code != protocol.ErrTooManyPending {
		t.Fatalf("a second key while the scope is all runs in progress: %+v, want too_many_pending", r)
	}
	if r := b.next(protocol.TypeResponse, 2*time.Second); string(r.Result) != `{"seq":1}` {
		t.Fatalf("the first run: %+v", r)
	}
	if n := h.count("room"); n != 1 {
		t.Fatalf("%d appends: the refused key ran", n)
	}
	// Once it is answered, the next key takes its place.
	if r := publishWait(c, 3, "room", `{"n":1}`, "second"); string(r.Result) != `{"seq":2}` {
		t.Fatalf("the second key after the first was answered: %+v", r)
	}

	for _, o := range []*Options{{MaxIdempotencyKeysPerScope: -1}, {MaxIdempotencyKeys: 10, MaxIdempotencyKeysPerScope: 11}} {
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), "MaxIdempotencyKeysPerScope") {
			t.Errorf("New(%+v): %v, want MaxIdempotencyKeysPerScope refused", *o, err)
		}
	}
}
