//go:build !js

package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/fetch"
	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/internal/testutil"
)

// A node with -data keeps its topics in an embedded JetStream: SIGTERM it,
// start it again on the same directory, and stage 7 clients resume with
// no gap and no duplicate, in the same streams (no continuity lost).
func TestJetStreamDataSurvivesAProcessRestart(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	args := []string{"-data", dir, "-publish", "-drain-window", "500ms", "-feed", "100ms"}
	n := startNode(t, addr, args...)
	pub := startPublisher(t, n.url(), "ticks", 20*time.Millisecond)
	const clients = 20
	subs := make([]*subscriber, clients)
	since := int64(0)
	for i := range subs {
		subs[i] = subscribe(t, uint64(i), []string{n.url()}, "ticks", &since)
	}
	if !eventually(10*time.Second, func() bool {
		for _, s := range subs {
			if !s.c.State().Ready || s.last() < 20 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("clients not READY and receiving within 10s")
	}
	feedBefore := subs[0].c.Stats().LastSeq
	n.stop(t, syscall.SIGTERM, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // published while the node is away: refused, retried
	startNode(t, addr, args...)
	time.Sleep(2 * time.Second)
	last := pub.finish(t, "ticks")
	if !eventually(30*time.Second, func() bool {
		for _, s := range subs {
			if s.last() != last {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("not every client reached seq %d: client 0 at %d, %+v", last, subs[0].last(), subs[0].c.State())
	}
	for i, s := range subs {
		seqs, lost := s.snapshot()
		st := s.c.Stats()
		if d := testutil.ExactRun(seqs, 1, last); d != "" {
			t.Errorf("client %d: %s", i, d)
		}
		if len(lost) != 0 || st.MissedUpdates != 0 || st.SeqGaps != 0 {
			t.Errorf("client %d: lost %+v, missed %d, gaps %d", i, lost, st.MissedUpdates, st.SeqGaps)
		}
		if st.LastSeq <= feedBefore {
			t.Errorf("client %d: the feed did not go on after the restart (%d, was %d)", i, st.LastSeq, feedBefore)
		}
		if st.Opens < 2 {
			t.Errorf("client %d never reconnected", i)
		}
	}
	t.Logf("%d updates published (%d publish attempts failed while the node was away); client 0 replayed %d, dropped %d duplicates",
		last, pub.fails, subs[0].c.Stats().Replayed, subs[0].c.Stats().DuplicatesDropped)
}

// Issue 12's cluster: the real NATS server embedded in this test process,
// three wsready nodes on it, 300 stage 7 clients spread over them with URL
// lists, a publisher on node 1 at 50/s. Node 2 is drained, then node 3 is
// killed: every client ends READY on a live node having delivered every
// update exactly once.
func TestClusterSurvivesADrainAndAKill(t *testing.T) {
	ns, err := natsembed.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	common := []string{"-nats", ns.ClientURL(), "-demo", "-publish", "-drain-window", "2s",
		"-max-conns-per-ip", "2000", "-tenant-rate", "2000", "-tenant-burst", "2000", "-admit-burst", "500"}
	nodes := []*node{
		startNode(t, freeAddr(t), append(common, "-node", "node1")...),
		startNode(t, freeAddr(t), append(common, "-node", "node2", "-feed-leader=false")...),
		startNode(t, freeAddr(t), append(common, "-node", "node3", "-feed-leader=false")...),
	}
	pub := startPublisher(t, nodes[0].url(), "ticks", 20*time.Millisecond)
	const clients = 300
	subs := make([]*subscriber, clients)
	since := int64(0)
	for i := range subs {
		urls := make([]string, 3)
		for k := range urls {
			urls[k] = nodes[(i+k)%3].url()
		}
		subs[i] = subscribe(t, uint64(i), urls, "ticks", &since)
	}
	allReady := func() bool {
		for _, s := range subs {
			if !s.c.State().Ready {
				return false
			}
		}
		return true
	}
	if !eventually(30*time.Second, allReady) {
		t.Fatal("300 clients not READY within 30s")
	}
	time.Sleep(time.Second)
	resp, err := http.Post("http://"+nodes[1].addr+"/api/drain", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("drain: %s", resp.Status)
	}
	time.Sleep(3 * time.Second)
	nodes[2].stop(t, syscall.SIGKILL, 5*time.Second)
	time.Sleep(2 * time.Second)
	last := pub.finish(t, "ticks")
	if !eventually(60*time.Second, func() bool {
		for _, s := range subs {
			if !s.c.State().Ready || s.last() != last {
				return false
			}
		}
		return true
	}) {
		behind := 0
		for _, s := range subs {
			if s.last() != last {
				behind++
			}
		}
		t.Fatalf("%d of %d clients have not delivered seq %d", behind, clients, last)
	}
	moved := 0
	for i, s := range subs {
		seqs, lost := s.snapshot()
		st := s.c.Stats()
		if d := testutil.ExactRun(seqs, 1, last); d != "" {
			t.Errorf("client %d: %s", i, d)
		}
		if len(lost) != 0 || st.MissedUpdates != 0 {
			t.Errorf("client %d: lost %+v, missed %d", i, lost, st.MissedUpdates)
		}
		if st.Opens > 1 {
			moved++
		}
	}
	// The 200 that started on nodes 2 and 3 had to move (some more than
	// once: a drained node closes late arrivals too).
	if moved < 2*clients/3 {
		t.Errorf("only %d clients reconnected; the 200 on nodes 2 and 3 must have", moved)
	}
	// Where they ended: nobody on the killed node (it is gone), so each is
	// on node 1 or node 2; count them from the nodes' own stats.
	open := 0
	for _, n := range nodes[:2] {
		var st struct {
			Open int `json:"open"`
		}
		if err := getJSON("http://"+n.addr+"/api/stats?connections=false", &st); err != nil {
			t.Fatal(err)
		}
		open += st.Open
	}
	if open < clients+1 { // the publisher too
		t.Errorf("live nodes hold %d connections, want at least %d", open, clients+1)
	}
	t.Logf("%d updates, each delivered once to each of %d clients (%d of them moved); %d failed publish attempts", last, clients, moved, pub.fails)
}

// getJSON reads a node's JSON within 5 s.
func getJSON(url string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return fetch.JSON(ctx, nil, url, v)
}
