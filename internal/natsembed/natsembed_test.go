//go:build !js

package natsembed

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wsready/wsready/internal/poll"
)

// A configuration Run cannot honour is refused with ErrConfig, before
// anything listens.
func TestRunRefusesInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []Config{
		{},
		{Dir: dir, Listen: "nope"},
		{Dir: dir, Listen: "127.0.0.1:70000"},
		{Dir: dir, Name: "two words"},
		{Dir: dir, ClusterListen: "127.0.0.1:0"},
		{Dir: dir, Routes: []string{"127.0.0.1:6222"}},
		{Dir: dir, Cluster: "c", Routes: []string{"127.0.0.1:6222"}},
		{Dir: dir, Cluster: "c", ClusterListen: "127.0.0.1:0"},
		{Dir: dir, Cluster: "c d", ClusterListen: "127.0.0.1:0", Routes: []string{"127.0.0.1:6222"}},
		{Dir: dir, Cluster: "c", ClusterListen: "127.0.0.1:0", Routes: []string{"127.0.0.1"}},
		{Dir: dir, Cluster: "c", ClusterListen: "127.0.0.1:0", Routes: []string{"http://127.0.0.1:6222"}},
		{Dir: dir, Cluster: "c", ClusterListen: "127.0.0.1:0", Routes: []string{"nats-route://u:p@127.0.0.1:6222"}},
		{Dir: dir, Cluster: "c", ClusterListen: "127.0.0.1:0", Routes: []string{"nats-route://127.0.0.1:0"}},
		{Dir: dir, Cluster: "c", ClusterListen: "127.0.0.1:0", Routes: []string{"127.0.0.1:6222/x"}},
	} {
		s, err := Run(c)
		if !errors.Is(err, ErrConfig) {
			if s != nil {
				s.Shutdown()
			}
			t.Errorf("Run(%+v): %v, want ErrConfig", c, err)
		}
	}
	for _, r := range []string{"127.0.0.1:6222", "nats-route://127.0.0.1:6222", "nats://localhost:6222", " 127.0.0.1:6222 "} {
		if _, err := routeURL(r); err != nil {
			t.Errorf("route %q: %v", r, err)
		}
	}
}

// Three servers clustered: JetStream is ready on each once they elected a
// leader, a stream with three replicas has one on each, and it goes on
// when one of the servers stops (a majority is left).
func TestClusterOfThreeKeepsAStreamWhenOneStops(t *testing.T) {
	servers, err := StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}()
	urls := ""
	for i, s := range servers {
		if i > 0 {
			urls += ","
		}
		urls += s.ClientURL()
	}
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	info := st.CachedInfo()
	if info.Cluster == nil || info.Cluster.Name != "wsready-test" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream cluster info %+v, want a leader and two replicas in wsready-test", info.Cluster)
	}
	if _, err := js.Publish(ctx, "t", []byte("1")); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	var ack *jetstream.PubAck
	poll.UntilEvery(50*time.Second, 100*time.Millisecond, func() bool { // within the 60 s ctx: the cluster elects a leader
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		ack, err = js.Publish(pctx, "t", []byte("2"))
		pcancel()
		return err == nil
	})
	if err != nil || ack.Sequence != 2 {
		t.Fatalf("publish after the leader stopped: %+v, %v; want seq 2", ack, err)
	}
}
