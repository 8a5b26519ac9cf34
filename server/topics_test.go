//go:build !js

package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// updatesOf returns the next n updates of topic, skipping other frames.
func (p *peer) updatesOf(topic string, n int, d time.Duration) []int64 {
	p.t.Helper()
	var seqs []int64
	for len(seqs) < n {
		m := p.next(protocol.TypeUpdate, d)
		if m.Topic == topic {
			seqs = append(seqs, m.Seq)
		}
	}
	return seqs
}

func TestSubscribeWithSinceReplaysThenGoesLiveWithoutASeam(t *testing.T) {
	f := newFixture(t, &Options{Publish: true}, DemoOptions{NoFeed: true})
	ctx := context.Background()
	for range 5 {
		if _, err := f.srv.Publish(ctx, "news", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "news", HasSince: true, Since: 2})
	sub := p.next(protocol.TypeSubscribed, time.Second)
	if sub.From != 3 || sub.Head != 5 || sub.Stream == "" {
		t.Fatalf("subscribed %+v, want from 3, head 5 and a stream", sub)
	}
	f.srv.Publish(ctx, "news", []byte(`{}`))
	if got := p.updatesOf("news", 4, time.Second); got[0] != 3 || got[3] != 6 {
		t.Fatalf("replay then live: %v, want 3..6", got)
	}
	// A cursor from another stream replays everything retained.
	p2 := f.dial()
	p2.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "news", HasSince: true, Since: 5, Stream: "other"})
	if sub := p2.next(protocol.TypeSubscribed, time.Second); sub.From != 1 {
		t.Fatalf("other stream: from %d, want 1", sub.From)
	}
	// Without since: live only.
	p3 := f.dial()
	p3.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "news"})
	if sub := p3.next(protocol.TypeSubscribed, time.Second); sub.From != 7 {
		t.Fatalf("live only: from %d, want 7", sub.From)
	}
	// Unsubscribe: answered, and nothing more arrives.
	p3.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: "news"})
	if m := p3.next(protocol.TypeUnsubscribed, time.Second); m.Reason != "requested" {
		t.Fatalf("unsubscribed %+v", m)
	}
	f.srv.Publish(ctx, "news", []byte(`{}`))
	if m, ok := p3.maybe(protocol.TypeUpdate, 200*time.Millisecond); ok {
		t.Fatalf("update after unsubscribe: %+v", m)
	}
}

func TestTopicBoundsAndRefusals(t *testing.T) {
	f := newFixture(t, &Options{Publish: true, MaxTopics: 2, MaxSubscriptions: 1, HistoryMsgs: 3}, DemoOptions{NoFeed: true})
	p := f.dial()
	pub := func(id uint64, topic string) protocol.Message {
		p.send(protocol.Message{Type: protocol.TypePublish, ID: id, Topic: topic, Data: []byte(`1`)})
		for {
			m := p.next(protocol.TypeResponse, time.Second)
			if m.ID == id {
				return m
			}
		}
	}
	if m := pub(1, "a"); m.Error != nil || string(m.Result) != `{"seq":1}` {
		t.Fatalf("publish a: %+v", m)
	}
	pub(2, "b")
	if m := pub(3, "c"); m.Error == nil || m.Error.Code != protocol.ErrTooManyTopics {
		t.Fatalf("a third topic past MaxTopics 2: %+v", m)
	}
	p.sendRaw(`{"type":"publish","id":5,"topic":"a..b","data":1}`)
	if m := p.next(protocol.TypeError, time.Second); m.ID != 5 || m.Error.Code != protocol.ErrInvalidTopic {
		t.Fatalf("invalid topic: %+v", m)
	}
	// Joining a topic creates it: past MaxTopics that is refused too.
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "nope"})
	if m := p.next(protocol.TypeError, time.Second); m.Topic != "nope" || m.Error.Code != protocol.ErrTooManyTopics {
		t.Fatalf("a third topic joined past MaxTopics 2: %+v", m)
	}
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "a"})
	p.next(protocol.TypeSubscribed, time.Second)
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "b"})
	if m := p.next(protocol.TypeError, time.Second); m.Topic != "b" || m.Error.Code != protocol.ErrTooManySubs {
		t.Fatalf("a second subscription past MaxSubscriptions 1: %+v", m)
	}
	// Retention: 3 kept; a replay from 0 starts at the oldest kept.
	for range 5 {
		pub(9, "b")
	}
	p2 := f.dial()
	p2.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "b", HasSince: true, Since: 0})
	if sub := p2.next(protocol.TypeSubscribed, time.Second); sub.From != 4 || sub.Head != 6 {
		t.Fatalf("past retention: %+v, want from 4 head 6", sub)
	}
	if got := p2.updatesOf("b", 3, time.Second); got[0] != 4 || got[2] != 6 {
		t.Fatalf("replay %v", got)
	}
	// Publishing off: forbidden.
	g := newFixture(t, &Options{}, DemoOptions{NoFeed: true})
	q := g.dial()
	q.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: "a", Data: []byte(`1`)})
	if m := q.next(protocol.TypeResponse, time.Second); m.Error == nil || m.Error.Code != protocol.ErrForbidden {
		t.Fatalf("publish with Publish off: %+v", m)
	}
	if _, err := g.srv.Publish(context.Background(), "a b", []byte(`1`)); err == nil {
		t.Fatal("Server.Publish took an invalid topic")
	}
}

func TestServiceDownDropsEveryTopic(t *testing.T) {
	f := newFixture(t, &Options{Publish: true})
	if _, err := f.srv.Publish(context.Background(), "x", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "feed"})
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "x"})
	p.next(protocol.TypeSubscribed, time.Second)
	p.next(protocol.TypeSubscribed, time.Second)
	f.set("serviceDown", true)
	got := map[string]bool{}
	for range 2 {
		got[p.next(protocol.TypeUnsubscribed, time.Second).Topic] = true
	}
	if !got["feed"] || !got["x"] || f.srv.Stats().Subscribed != 0 {
		t.Fatalf("unsubscribed %v, stats %d subscribed", got, f.srv.Stats().Subscribed)
	}
}

func TestMemoryHistoryBounds(t *testing.T) {
	now := time.Unix(0, 0)
	h := NewMemoryHistory(Retention{MaxMsgs: 100, MaxBytes: 10, MaxAge: time.Minute}, 1, func() time.Time { return now })
	ctx := context.Background()
	for range 4 {
		h.Append(ctx, "t", []byte(`"abcd"`), true) // 6 bytes each: only one fits in 10
	}
	if info, _ := h.Info(ctx, "t"); info.First != 4 || info.Last != 4 {
		t.Fatalf("byte bound: %+v, want only 4 kept", info)
	}
	now = now.Add(2 * time.Minute)
	if info, _ := h.Info(ctx, "t"); info.First != 5 || info.Last != 4 {
		t.Fatalf("age bound: %+v, want none kept (first 5, last 4)", info)
	}
	if _, err := h.Append(ctx, "v", []byte(`1`), false); !errors.Is(err, ErrNoTopic) {
		t.Fatalf("append without create: %v", err)
	}
}

// At the topic cap the memory history makes room by forgetting the topics
// nobody watches whose updates are all gone (by age here), and only those;
// a topic made again starts a new stream. With nothing to forget it
// refuses, and does not look again for a second.
func TestMemoryHistoryForgetsIdleTopicsAtTheCap(t *testing.T) {
	now := time.Unix(0, 0)
	h := NewMemoryHistory(Retention{MaxMsgs: 100, MaxBytes: 1 << 10, MaxAge: time.Minute}, 2, func() time.Time { return now })
	ctx := context.Background()
	for _, topic := range []string{"a", "b"} {
		if _, err := h.Append(ctx, topic, []byte(`1`), true); err != nil {
			t.Fatal(err)
		}
	}
	oldA, _ := h.Info(ctx, "a")
	if _, err := h.Append(ctx, "c", []byte(`1`), true); !errors.Is(err, ErrTooManyTopics) {
		t.Fatalf("a third topic while both keep an update: %v, want ErrTooManyTopics", err)
	}
	stop, err := h.Watch(ctx, "b", 1, func(Entry) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	now = now.Add(2 * time.Minute) // both updates expire; b is watched
	if _, err := h.Append(ctx, "c", []byte(`1`), true); err != nil {
		t.Fatalf("a third topic once a is idle: %v", err)
	}
	if _, err := h.Info(ctx, "a"); !errors.Is(err, ErrNoTopic) {
		t.Fatalf("a after it was forgotten: %v, want ErrNoTopic", err)
	}
	if info, err := h.Info(ctx, "b"); err != nil || info.Last != 1 {
		t.Fatalf("the watched topic b: %+v, %v; want kept, last 1", info, err)
	}
	// b is watched and c keeps its update: nothing to forget.
	if _, err := h.Append(ctx, "d", []byte(`1`), true); !errors.Is(err, ErrTooManyTopics) {
		t.Fatalf("d with nothing idle: %v, want ErrTooManyTopics", err)
	}
	stop() // b is idle now, but the last look was fruitless just now
	now = now.Add(500 * time.Millisecond)
	if _, err := h.Append(ctx, "d", []byte(`1`), true); !errors.Is(err, ErrTooManyTopics) {
		t.Fatalf("d within a second of a fruitless look: %v, want ErrTooManyTopics", err)
	}
	now = now.Add(time.Second)
	if _, err := h.Append(ctx, "d", []byte(`1`), true); err != nil {
		t.Fatalf("d once b is idle, a second on: %v", err)
	}
	now = now.Add(2 * time.Minute)
	if err := h.Create(ctx, "a"); err != nil {
		t.Fatalf("a made again: %v", err)
	}
	if newA, _ := h.Info(ctx, "a"); newA.Stream == oldA.Stream || newA.Last != 0 {
		t.Fatalf("a made again: %+v, want a new stream from 0 (was %+v)", newA, oldA)
	}
}

// A subscription is recorded before its "subscribed" is queued, so a
// client that counts subscriptions (Stats.Subscribed) right after it reads
// "subscribed" sees its own. TestCountersMatchWhatTheClientsDid flaked
// with Subscribed 4 of 5 when the frame went first. The queue's start
// hook runs the moment the first frame, "subscribed", is queued.
func TestASubscriptionIsRecordedBeforeItsSubscribedIsQueued(t *testing.T) {
	srv := mustNew(t, &Options{Logger: discard()})
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	if _, err := srv.Publish(ctx, "news", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	top, err := srv.hub.topic(ctx, "news")
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{s: srv, ctx: ctx}
	seen := -1
	c.q = newSendQueue(1<<20, func() bool {
		_, inTopic := top.subs[c] // serveLocked holds top.mu on this goroutine
		if inTopic {
			seen = c.subscriptions()
		} else {
			seen = 0
		}
		return false // no writer: the test takes the frames
	})
	top.mu.Lock()
	top.serveLocked(c, protocol.Message{Type: protocol.TypeSubscribe, Topic: "news", HasSince: true, Since: 0})
	top.mu.Unlock()
	if seen != 1 {
		t.Fatalf("when subscribed was queued the connection had %d subscriptions recorded, want 1", seen)
	}
	if f := c.q.take(nil); len(f) == 0 || !strings.Contains(string(f[0]), `"type":"subscribed"`) {
		t.Fatalf("first frame queued: %q", f)
	}
}

// renamedHistory is the memory History whose topic is renamed between the
// hub's Info and its Watch, once: Info names stream "old" the first time
// and "new" after, and the first Watch begins with a marker for "new". A
// fake, because the point is that moment, which real parts cannot hit on
// purpose; the rename itself is tested on a real NATS store.
type renamedHistory struct {
	History
	infos, watches atomic.Int32
}

func (h *renamedHistory) Info(ctx context.Context, topic string) (TopicInfo, error) {
	ti, err := h.History.Info(ctx, topic)
	ti.Stream = "new"
	if h.infos.Add(1) == 1 {
		ti.Stream = "old"
	}
	return ti, err
}

func (h *renamedHistory) Watch(ctx context.Context, topic string, from int64, fn func(Entry)) (func(), error) {
	if h.watches.Add(1) == 1 {
		fn(Entry{Stream: "new"})
	}
	// The memory history's own marker names its real stream: as this
	// wrapper presents it, "new".
	return h.History.Watch(ctx, topic, from, func(e Entry) {
		if e.Stream != "" {
			e.Stream = "new"
		}
		fn(e)
	})
}

// A server at its topic cap makes room for a new topic by forgetting the
// ones nobody subscribes to whose history has expired: a chat's rooms come
// and go without a restart. (Before, every topic the memory history had
// ever made counted for the process's life: with MaxTopics 2 the third room
// was refused for good.)
func TestTopicsComeAndGoAtTheCap(t *testing.T) {
	f := newFixture(t, &Options{MaxTopics: 2, HistoryAge: 100 * time.Millisecond}, DemoOptions{NoFeed: true})
	ctx := context.Background()
	for _, topic := range []string{"room1", "room2"} {
		if _, err := f.srv.Publish(ctx, topic, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.srv.Publish(ctx, "room3", []byte(`{}`)); !errors.Is(err, ErrTooManyTopics) {
		t.Fatalf("a third topic while both keep their update: %v, want ErrTooManyTopics", err)
	}
	// The hub lets idle topics go on its own timer (topics.go).
	serverTimersRun(1100 * time.Millisecond) // their updates expire, and the refusal's second is over
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room3"})
	if sub := p.next(protocol.TypeSubscribed, 2*time.Second); sub.Topic != "room3" {
		t.Fatalf("subscribe to a new topic at the cap: %+v", sub)
	}
	if _, err := f.srv.Publish(ctx, "room4", []byte(`{}`)); err != nil {
		t.Fatalf("a fourth topic: %v", err)
	}
	if _, err := f.srv.Publish(ctx, "room3", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := p.updatesOf("room3", 1, 2*time.Second); got[0] != 1 {
		t.Fatalf("room3's first update: %v", got)
	}
}

// Rooms clients joined and left are freed too (a review found they were
// not): the hub releases a topic when its last subscriber on the node
// leaves, by unsubscribing or by closing, so the memory history can forget
// it once its updates expire; a room joined again is attached afresh.
func TestTopicsJoinedAndLeftAreFreedAtTheCap(t *testing.T) {
	f := newFixture(t, &Options{MaxTopics: 2, HistoryAge: 100 * time.Millisecond}, DemoOptions{NoFeed: true})
	ctx := context.Background()
	p := f.dial()
	for _, topic := range []string{"room1", "room2"} {
		p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: topic})
		p.next(protocol.TypeSubscribed, 2*time.Second)
		if _, err := f.srv.Publish(ctx, topic, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	p.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: "room1"})
	p.next(protocol.TypeUnsubscribed, 2*time.Second)
	p.ws.CloseNow() // leaves room2
	f.waitOpen(0)
	serverTimersRun(1100 * time.Millisecond) // the hub lets idle topics go on its own timer; their updates expire
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room3"})
	if sub := q.next(protocol.TypeSubscribed, 2*time.Second); sub.Topic != "room3" {
		t.Fatalf("a new room at the cap: %+v", sub)
	}
	if _, err := f.srv.Publish(ctx, "room4", []byte(`{}`)); err != nil {
		t.Fatalf("a fourth room: %v", err)
	}
	// room3 is still subscribed: it is kept, and its updates flow.
	if _, err := f.srv.Publish(ctx, "room3", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := q.updatesOf("room3", 1, 2*time.Second); got[0] != 1 {
		t.Fatalf("room3's update: %v", got)
	}
}

// A stream id that changes while the hub loads a topic makes it load the
// topic again: subscribers get the new id, never the one it replaced.
func TestATopicRenamedWhileLoadingIsLoadedAgain(t *testing.T) {
	h := &renamedHistory{History: NewMemoryHistory(Retention{MaxMsgs: 10, MaxBytes: 1 << 10, MaxAge: time.Hour}, 4, nil)}
	f := newFixture(t, &Options{History: h}, DemoOptions{NoFeed: true})
	if _, err := f.srv.Publish(context.Background(), "news", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "news", HasSince: true})
	if sub := p.next(protocol.TypeSubscribed, time.Second); sub.Stream != "new" || sub.From != 1 {
		t.Fatalf("subscribed %+v, want stream new from 1", sub)
	}
	if got := p.updatesOf("news", 1, time.Second); got[0] != 1 {
		t.Fatalf("update %v", got)
	}
	if i, w := h.infos.Load(), h.watches.Load(); i != 2 || w != 2 {
		t.Fatalf("%d loads and %d watches, want 2 of each", i, w)
	}
}
