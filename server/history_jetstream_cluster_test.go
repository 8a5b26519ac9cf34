//go:build !js

package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	natssrv "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/internal/poll"
)

func startNATSCluster(t *testing.T) ([]*natssrv.Server, string) {
	t.Helper()
	servers, err := natsembed.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
		}
		for _, s := range servers {
			s.WaitForShutdown() // its goroutines end before the leak check
		}
	})
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	return servers, strings.Join(urls, ",")
}

var testRetention = Retention{MaxMsgs: 1000, MaxBytes: 1 << 20, MaxAge: time.Hour}

// Replicas out of JetStream's range, or more than the NATS server(s) can
// place, are refused when the History starts, with ErrReplicas and words
// that say why.
func TestJetStreamRefusesReplicasItCannotKeep(t *testing.T) {
	ns, err := natsembed.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	ctx := context.Background()
	for _, n := range []int{-1, 6} {
		h, err := ConnectJetStream(ctx, ns.ClientURL(), JetStreamOptions{Retention: testRetention, MaxTopics: 4, Replicas: n})
		if !errors.Is(err, ErrReplicas) {
			if h != nil {
				h.Close()
			}
			t.Errorf("Replicas %d: %v, want ErrReplicas", n, err)
		}
	}
	_, err = ConnectJetStream(ctx, ns.ClientURL(), JetStreamOptions{Retention: testRetention, MaxTopics: 4, Replicas: 3})
	if !errors.Is(err, ErrReplicas) || !strings.Contains(err.Error(), "3 replicas are more than a NATS server outside a cluster keeps (1)") {
		t.Errorf("3 replicas on a server of its own: %v", err)
	}

	_, urls := startNATSCluster(t)
	_, err = ConnectJetStream(ctx, urls, JetStreamOptions{Retention: testRetention, MaxTopics: 4, Replicas: 4})
	if !errors.Is(err, ErrReplicas) || !strings.Contains(err.Error(), "4 replicas are more than the NATS cluster has servers with JetStream up") {
		t.Errorf("4 replicas on a cluster of three: %v", err)
	}
}

// streamReplicas maps every stream on the cluster to its replicas.
func streamReplicas(t *testing.T, urls string) map[string]int {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]int{}
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		out[info.Config.Name] = info.Config.Replicas
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// With Replicas 3 every stream wsready makes, the marks bucket's too, has
// three replicas; one started with 3 on streams made with 1 changes them.
func TestJetStreamReplicasOnACluster(t *testing.T) {
	_, urls := startNATSCluster(t)
	ctx := context.Background()
	h1, err := ConnectJetStream(ctx, urls, JetStreamOptions{Retention: testRetention, MaxTopics: 4, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h1.Append(ctx, "one", []byte(`1`), true); err != nil {
		t.Fatal(err)
	}
	h1.Close()
	got := streamReplicas(t, urls)
	if len(got) != 2 || got[kvStreamPrefix+marksBucket] != 1 || got[streamName("one")] != 1 {
		t.Fatalf("with Replicas 1: %v", got)
	}

	h3, err := ConnectJetStream(ctx, urls, JetStreamOptions{Retention: testRetention, MaxTopics: 4, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer h3.Close()
	if _, err := h3.Append(ctx, "three", []byte(`1`), true); err != nil {
		t.Fatal(err)
	}
	got = streamReplicas(t, urls)
	if len(got) != 3 {
		t.Fatalf("streams %v, want the bucket's and two topics'", got)
	}
	for name, n := range got {
		if n != 3 {
			t.Errorf("stream %s has %d replicas after a start with 3", name, n)
		}
	}
	// The topic made with one replica kept its updates through the change.
	if info, err := h3.Info(ctx, "one"); err != nil || info.Last != 1 {
		t.Errorf("topic one after the change: %+v, %v", info, err)
	}
}

// A node given the URLs of a cluster of three rides over the NATS server
// it is connected to going away: it reconnects to another, appends go on
// (refused meanwhile, never stored later), and a Watch delivers every seq
// once, in order, across the move.
func TestJetStreamNodeRidesOverItsNATSServerStopping(t *testing.T) {
	servers, urls := startNATSCluster(t)
	ctx := context.Background()
	h, err := ConnectJetStream(ctx, urls, JetStreamOptions{Retention: testRetention, MaxTopics: 4, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Append(ctx, "chat", []byte(`1`), true); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seqs []int64
	stop, err := h.Watch(ctx, "chat", 1, func(e Entry) {
		if e.Seq > 0 {
			mu.Lock()
			seqs = append(seqs, e.Seq)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	nc := h.(*jsHistory).nc
	was := nc.ConnectedServerName()
	for _, s := range servers {
		if s.Name() == was {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	last := int64(1)
	appended := 0
	// NATS fails over on its own clock: retry each append until it is taken.
	poll.UntilEvery(45*time.Second, 100*time.Millisecond, func() bool {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		seq, err := h.Append(actx, "chat", []byte(`2`), false)
		cancel()
		if err != nil {
			return false
		}
		if seq != last+1 {
			t.Fatalf("append got seq %d after %d: a refused append was stored", seq, last)
		}
		last = seq
		appended++
		return appended == 5
	})
	if last != 6 {
		t.Fatalf("appended up to seq %d within 45s of the server stopping, want 6", last)
	}
	if now := nc.ConnectedServerName(); now == was || now == "" {
		t.Errorf("connected to %q, was %q: want another server", now, was)
	}
	poll.Until(15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seqs) >= 6
	})
	mu.Lock()
	defer mu.Unlock()
	for i, s := range seqs {
		if s != int64(i+1) || len(seqs) != 6 {
			t.Fatalf("watched %v, want 1..6 once each", seqs)
		}
	}
}

// A Watch whose consumer vanishes (deleted, or on a server that died)
// makes another from the next seq: no gap, no repeat.
func TestJetStreamWatchGoesOnWhenItsConsumerIsDeleted(t *testing.T) {
	ns, err := natsembed.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	ctx := context.Background()
	h, err := ConnectJetStream(ctx, ns.ClientURL(), JetStreamOptions{Retention: testRetention, MaxTopics: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	seqs := make(chan int64, 16)
	for range 3 {
		if _, err := h.Append(ctx, "chat", []byte(`1`), true); err != nil {
			t.Fatal(err)
		}
	}
	stop, err := h.Watch(ctx, "chat", 2, func(e Entry) {
		if e.Seq > 0 {
			seqs <- e.Seq
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	next := func() int64 {
		select {
		case s := <-seqs:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no update within 10s")
			return 0
		}
	}
	if a, b := next(), next(); a != 2 || b != 3 {
		t.Fatalf("watched %d, %d; want 2, 3", a, b)
	}
	js := h.(*jsHistory).js
	st, err := js.Stream(ctx, streamName("chat"))
	if err != nil {
		t.Fatal(err)
	}
	l := st.ConsumerNames(ctx)
	deleted := 0
	for name := range l.Name() {
		if err := js.DeleteConsumer(ctx, streamName("chat"), name); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if deleted != 1 {
		t.Fatalf("deleted %d consumers, want the Watch's one", deleted)
	}
	for range 3 {
		if _, err := h.Append(ctx, "chat", []byte(`2`), false); err != nil {
			t.Fatal(err)
		}
	}
	for want := int64(4); want <= 6; want++ {
		if got := next(); got != want {
			t.Fatalf("after the consumer was deleted: seq %d, want %d", got, want)
		}
	}
	select {
	case s := <-seqs:
		t.Fatalf("an extra update, seq %d", s)
	case <-time.After(300 * time.Millisecond):
	}
}
