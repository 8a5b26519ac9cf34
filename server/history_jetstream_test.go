//go:build !js

package server

import (
	"context"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// Two nodes on one embedded JetStream: a publish on one reaches a
// subscriber on the other in order; a replay from since works on either;
// when NATS restarts (same directory, same port), publishes fail with
// "unavailable" meanwhile and the subscription goes on afterwards without
// a gap or a repeat.
func TestJetStreamNodesShareTopicsAndSurviveANATSRestart(t *testing.T) {
	dir := t.TempDir()
	ns, err := natsembed.Start(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := ns.ClientURL()
	defer func() { ns.Shutdown() }()
	lim := Retention{MaxMsgs: 1000, MaxBytes: 1 << 20, MaxAge: time.Hour}
	node := func() *fixture {
		h, err := ConnectJetStream(context.Background(), url, JetStreamOptions{Retention: lim, MaxTopics: 16})
		if err != nil {
			t.Fatal(err)
		}
		return newFixture(t, &Options{History: h, Publish: true, HistoryTimeout: time.Second}, DemoOptions{NoFeed: true})
	}
	a, b := node(), node()
	ctx := context.Background()
	for range 3 {
		if _, err := a.srv.Publish(ctx, "chat", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	p := b.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "chat", HasSince: true, Since: 1})
	sub := p.next(protocol.TypeSubscribed, 5*time.Second)
	if sub.From != 2 || sub.Head != 3 || sub.Stream == "" {
		t.Fatalf("subscribed on node b: %+v", sub)
	}
	if got := p.updatesOf("chat", 2, 5*time.Second); got[0] != 2 || got[1] != 3 {
		t.Fatalf("replay on node b: %v", got)
	}
	a.srv.Publish(ctx, "chat", []byte(`2`))
	if got := p.updatesOf("chat", 1, 5*time.Second); got[0] != 4 {
		t.Fatalf("live from node a on node b: %v", got)
	}

	// NATS goes away and comes back on the same port and directory.
	ns.Shutdown()
	ns.WaitForShutdown()
	if _, err := a.srv.Publish(ctx, "chat", []byte(`3`)); err == nil {
		t.Fatal("a publish with NATS down succeeded")
	}
	q := a.dial()
	q.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: "chat", Data: []byte(`4`)})
	if m := q.next(protocol.TypeResponse, 5*time.Second); m.Error == nil || m.Error.Code != protocol.ErrUnavailable {
		t.Fatalf("publish by a client with NATS down: %+v", m)
	}
	ns, err = natsembed.Start(dir, url[len("nats://"):])
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	poll.UntilEvery(15*time.Second, 100*time.Millisecond, func() bool { // retries until NATS has failed over
		seq, err = a.srv.Publish(ctx, "chat", []byte(`5`))
		return err == nil
	})
	if err != nil || seq != 5 {
		t.Fatalf("after NATS came back: seq %d, %v; want 5 (the stream kept 1..4)", seq, err)
	}
	if got := p.updatesOf("chat", 1, 15*time.Second); got[0] != 5 {
		t.Fatalf("node b after the NATS restart: %v, want 5", got)
	}
}
