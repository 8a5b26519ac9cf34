//go:build !js

package server

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/protocol"
)

// consumersOf counts the JetStream consumers on topic's stream.
func consumersOf(t *testing.T, s *dataStore, topic string) int {
	t.Helper()
	nc, err := natsembed.Connect(s.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, streamName(topic))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	l := st.ConsumerNames(ctx)
	for range l.Name() {
		n++
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// A client that subscribes and unsubscribes in a loop costs the node one
// JetStream consumer per topic, shared and kept while the topic lingers,
// then removed: not one per subscribe, each left on the NATS server for
// its 30 s inactivity limit (before: 30 subscribes, 30 consumers, and
// under a tight loop thousands, hundreds of MB). A subscriber who comes
// meanwhile still gets its replay exactly, then live updates.
func TestJetStreamChurnSharesOneConsumerPerTopic(t *testing.T) {
	s := openDataStore(t, t.TempDir())
	s.publish("room", 3)
	f := newFixture(t, &Options{History: s.h, Publish: true, HistoryTimeout: 5 * time.Second}, DemoOptions{NoFeed: true})
	p := f.dial()
	const churn = 30 // within the default SubscribeBurst (64)
	for range churn {
		p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
		if sub := p.next(protocol.TypeSubscribed, 5*time.Second); sub.Head != 3 {
			t.Fatalf("subscribed %+v, want head 3", sub)
		}
		p.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: "room"})
		p.next(protocol.TypeUnsubscribed, 5*time.Second)
	}
	if n := consumersOf(t, s, "room"); n != 1 {
		t.Fatalf("%d subscribes and unsubscribes left %d consumers on the stream, want 1 (shared while the topic lingers)", churn, n)
	}

	// A resuming subscriber meanwhile: the gap exactly, then live.
	q := f.dial()
	q.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room", HasSince: true, Since: 1})
	if sub := q.next(protocol.TypeSubscribed, 5*time.Second); sub.From != 2 || sub.Head != 3 {
		t.Fatalf("resume from 1: %+v, want from 2 head 3", sub)
	}
	if got := q.updatesOf("room", 2, 5*time.Second); got[0] != 2 || got[1] != 3 {
		t.Fatalf("replay: %v, want [2 3]", got)
	}
	if _, err := f.srv.Publish(context.Background(), "room", []byte(`{"n":4}`)); err != nil {
		t.Fatal(err)
	}
	if got := q.updatesOf("room", 1, 5*time.Second); got[0] != 4 {
		t.Fatalf("live: %v, want [4]", got)
	}
	if n := consumersOf(t, s, "room"); n != 1 {
		t.Fatalf("%d consumers with one subscriber, want 1", n)
	}

	// Left by its last subscriber, the topic is let go after its linger,
	// and its consumer removed with it (not left for 30 s).
	q.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: "room"})
	q.next(protocol.TypeUnsubscribed, 5*time.Second)
	left := time.Now()
	waitFor(t, jsWatchLinger+5*time.Second, "the idle topic's consumer removed", func() bool { return consumersOf(t, s, "room") == 0 })
	if d := time.Since(left); d < jsWatchLinger-500*time.Millisecond {
		t.Fatalf("the consumer went %v after the last subscriber left, before the %v linger", d, jsWatchLinger)
	}
	// And the next subscribe loads it again.
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room", HasSince: true, Since: 3})
	if sub := p.next(protocol.TypeSubscribed, 5*time.Second); sub.From != 4 || sub.Head != 4 {
		t.Fatalf("subscribe after the topic was let go: %+v, want from 4 head 4", sub)
	}
	if got := p.updatesOf("room", 1, 5*time.Second); got[0] != 4 {
		t.Fatalf("replay after the topic was let go: %v", got)
	}
}

// Topics lingering after their last subscriber left do not hold the
// node's cap: a new topic at the cap lets them go at once.
func TestJetStreamLingeringTopicsMakeRoomAtTheCap(t *testing.T) {
	s := openDataStore(t, t.TempDir())
	f := newFixture(t, &Options{History: s.h, MaxTopics: 2, HistoryTimeout: 5 * time.Second}, DemoOptions{NoFeed: true})
	p := f.dial()
	for _, topic := range []string{"room1", "room2"} {
		p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: topic})
		p.next(protocol.TypeSubscribed, 5*time.Second)
		p.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: topic})
		p.next(protocol.TypeUnsubscribed, 5*time.Second)
	}
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room3"})
	answer := time.After(5 * time.Second)
	for answered := false; !answered; {
		select {
		case m := <-p.frames:
			if m.Type == protocol.TypePing {
				continue // the fixture's heartbeat, not the answer
			}
			if m.Type != protocol.TypeSubscribed || m.Topic != "room3" {
				t.Fatalf("a third topic with two lingering at the cap of 2: %+v", m)
			}
			answered = true
		case <-answer:
			t.Fatal("no answer to a third topic's subscribe")
		}
	}
	waitFor(t, 5*time.Second, "the lingering topics' consumers removed", func() bool {
		return consumersOf(t, s, "room1") == 0 && consumersOf(t, s, "room2") == 0
	})
	if n := consumersOf(t, s, "room3"); n != 1 {
		t.Fatalf("room3 has %d consumers, want 1", n)
	}
}
