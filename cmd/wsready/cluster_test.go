//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
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
	_, failed := pub.progress()
	n.stop(t, syscall.SIGTERM, 10*time.Second)
	// Publishes come while the node is away: refused, retried.
	if !eventually(10*time.Second, func() bool { _, f := pub.progress(); return f > failed }) {
		t.Fatal("no publish was refused while the node was away")
	}
	startNode(t, addr, args...)
	if !delivering(subs, pub, 30*time.Second) {
		t.Fatal("the clients did not come back to the restarted node within 30s")
	}
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

// The first cluster test: the real NATS server embedded in this test process,
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
	if !delivering(subs, pub, 30*time.Second) { // the feed runs a while before the drain
		t.Fatal("the clients did not deliver what was published within 30s")
	}
	resp, err := http.Post("http://"+nodes[1].addr+"/api/drain", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("drain: %s", resp.Status)
	}
	if !eventually(15*time.Second, func() bool { // the drain's window (2 s) runs in the node's process
		var st struct {
			Open int `json:"open"`
		}
		return getJSON("http://"+nodes[1].addr+"/api/stats?connections=false", &st) == nil && st.Open == 0
	}) {
		t.Fatal("the drained node still holds connections 15s on")
	}
	nodes[2].stop(t, syscall.SIGKILL, 5*time.Second)
	if !delivering(subs, pub, 60*time.Second) { // the clients move over to the other nodes
		t.Fatal("the clients did not move over from the killed node within 60s")
	}
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

// A cluster without a single point of failure: three wsready
// nats processes clustered (JetStream clustered, streams with three
// replicas), three wsready serve nodes each given all three NATS URLs, a
// publisher at 50/s on node 1 and 300 stage 7 clients with URL lists over
// the three nodes. Then the NATS server leading the topic's stream and
// node 3 are SIGKILLed at once: every client ends READY on a live node,
// having delivered 1..N exactly once, and every publish that was
// acknowledged is among them with the data it was sent with (JetStream
// acknowledges a publish once a majority of the replicas stored it). It
// logs the time to recover: from the kills to the first acknowledged
// publish sent after them, to the last client READY, and to every client
// having delivered that publish.
func TestClusterSurvivesANATSServerAndANodeKilled(t *testing.T) {
	servers := startNATSCluster(t, t.TempDir(), 3)
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.url
	}
	common := []string{"-nats", strings.Join(urls, ","), "-nats-replicas", "3", "-demo", "-publish", "-auth", "optional",
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
	// Publishing at its pace before the kills: 50 acknowledged after the
	// clients were READY.
	before := len(pub.acknowledged())
	if !eventually(30*time.Second, func() bool { return len(pub.acknowledged()) >= before+50 }) {
		t.Fatalf("the publisher had %d publishes acknowledged within 30s, want %d", len(pub.acknowledged()), before+50)
	}

	// The streams are replicated on all three servers; the victim is the
	// one leading the busiest topic's stream (ticks: its publishes then
	// wait for a new leader), found without knowing how topics map to
	// streams.
	victim, streams := streamLeader(t, urls)
	if streams < 2 {
		t.Fatalf("found %d replicated streams (a topic's and the marks bucket's), want at least 2", streams)
	}
	var dead *natsServer
	for _, s := range servers {
		if s.name == victim {
			dead = s
		}
	}
	if dead == nil {
		t.Fatalf("the leader %q is none of the NATS servers started", victim)
	}

	// Presence before the kills: alice on node1 and bob on node2 (tickets
	// naming them; the 300 are anonymous) in a room with presence. Its
	// stream is made now, so what is checked after the kills is presence,
	// not a new stream's placement while the cluster recovers (a subscribe
	// to a new topic in the seconds after the kills waited over 10 s).
	alice := presenceUser(t, nodes[0], "alice")
	bob := presenceUser(t, nodes[1], "bob")
	both := func(c *native.Client, users ...string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := c.Presence(ctx, "room")
		if err != nil || r.Total != len(users) || len(r.Users) != len(users) {
			return false
		}
		for i, u := range users {
			if r.Users[i].User != u {
				return false
			}
		}
		return true
	}
	if !eventually(10*time.Second, func() bool {
		return both(alice.c, "alice", "bob") && both(bob.c, "alice", "bob") && alice.saw("join", "bob")
	}) {
		t.Fatalf("before the kills, node1 and node2 do not both list alice and bob, or alice did not hear bob join: %v", alice.events())
	}

	killed := time.Now()
	dead.cmd.Process.Signal(syscall.SIGKILL)
	nodes[2].cmd.Process.Signal(syscall.SIGKILL)
	dead.stop(t, syscall.SIGKILL, 5*time.Second)
	nodes[2].stop(t, syscall.SIGKILL, 5*time.Second)

	// The recovery, polled every 20 ms for at most 60 s.
	var firstAck *ack
	var readyAt, deliveredAt time.Time
	eventually(60*time.Second, func() bool {
		if firstAck == nil {
			for _, a := range pub.acknowledged() {
				if a.sent.After(killed) {
					firstAck = &a
					break
				}
			}
		}
		if readyAt.IsZero() && allReady() {
			readyAt = time.Now()
		}
		if firstAck != nil && deliveredAt.IsZero() {
			all := true
			for _, s := range subs {
				if s.last() < firstAck.seq {
					all = false
					break
				}
			}
			if all {
				deliveredAt = time.Now()
			}
		}
		return !readyAt.IsZero() && !deliveredAt.IsZero()
	})
	if firstAck == nil {
		t.Fatal("no publish sent after the kills was acknowledged within 60s")
	}
	if readyAt.IsZero() || deliveredAt.IsZero() {
		t.Fatalf("within 60s of the kills: every client READY %v, every client delivered seq %d %v (%s)", !readyAt.IsZero(), firstAck.seq, !deliveredAt.IsZero(),
			behind(subs, firstAck.seq))
	}
	// Publishing on with one NATS server and one node fewer: 100 more.
	if !eventually(30*time.Second, func() bool { a, _ := pub.progress(); return a >= firstAck.seq+100 }) {
		t.Fatal("100 publishes were not acknowledged within 30s with one NATS server and one node fewer")
	}
	last := pub.finish(t, "ticks")
	if !eventually(60*time.Second, func() bool {
		for _, s := range subs {
			if !s.c.State().Ready || s.last() != last {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("not every client delivered seq %d: %s", last, behind(subs, last))
	}

	acks := pub.acknowledged()
	bySeq := map[int64]string{}
	for _, a := range acks {
		if prev, dup := bySeq[a.seq]; dup {
			t.Errorf("seq %d acknowledged twice (%s, then %s): an acknowledged publish was lost and its seq handed out again", a.seq, prev, a.data)
		}
		bySeq[a.seq] = a.data
		if a.seq < 1 || a.seq > last {
			t.Errorf("acknowledged seq %d is outside 1..%d", a.seq, last)
		}
	}
	moved := 0
	for i, s := range subs {
		seqs, lost := s.snapshot()
		st := s.c.Stats()
		if d := testutil.ExactRun(seqs, 1, last); d != "" {
			t.Errorf("client %d: %s", i, d)
			continue
		}
		if len(lost) != 0 || st.MissedUpdates != 0 {
			t.Errorf("client %d: lost %+v, missed %d", i, lost, st.MissedUpdates)
		}
		bad := 0
		for seq, data := range bySeq {
			if got, _ := s.dataAt(seq); got != data {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("client %d: %d acknowledged publishes delivered with other data (or not at all)", i, bad)
		}
		if st.Opens > 1 {
			moved++
		}
	}
	// The 100 that started on node 3 had to move.
	if moved < clients/3 {
		t.Errorf("only %d clients reconnected; the 100 on node 3 must have", moved)
	}
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

	// Every update is one publish, stored once: acknowledged, or one that
	// failed (in flight when the leader died: JetStream had it, the answer
	// was lost or came after the publisher gave up).
	failed := map[string]bool{}
	for _, d := range pub.unacknowledged() {
		failed[d] = true
	}
	acked := map[string]bool{}
	for _, d := range bySeq {
		acked[d] = true
	}
	seen := map[string]bool{}
	storedAnyway := 0
	for i, d := range subs[0].delivered() {
		switch {
		case seen[d]:
			t.Errorf("update %d: the publish %s stored twice", i+1, d)
		case failed[d]:
			storedAnyway++
		case !acked[d]:
			t.Errorf("update %d: %s was never published", i+1, d)
		}
		seen[d] = true
	}

	// Presence and Disconnect across the surviving nodes: both still list
	// alice and bob; carol joins on node2 and alice (node1) hears it;
	// Revoke (the demo's switch: Server.Revoke) asked of node1 closes
	// bob's connection on node2 with 4003, and alice hears him leave.
	if !eventually(10*time.Second, func() bool { return both(alice.c, "alice", "bob") && both(bob.c, "alice", "bob") }) {
		t.Fatal("after the kills, node1 and node2 do not both list alice and bob in the room")
	}
	carol := presenceUser(t, nodes[1], "carol")
	if !eventually(10*time.Second, func() bool { return alice.saw("join", "carol") && both(alice.c, "alice", "bob", "carol") }) {
		t.Fatalf("after the kills, alice on node1 never heard carol join on node2: %v", alice.events())
	}
	if err := postSwitch(nodes[0], `{"revoke":"bob"}`); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return bob.c.State().Ended == client.Forbidden }) {
		t.Fatalf("bob, revoked on node1, still connected to node2: %+v", bob.c.State())
	}
	if !eventually(10*time.Second, func() bool { return alice.saw("leave", "bob") && both(carol.c, "alice", "carol") }) {
		t.Fatalf("alice never heard bob leave, or node2 still lists him: %v", alice.events())
	}
	if !alice.c.State().Ready || !carol.c.State().Ready {
		t.Fatalf("alice or carol lost READY when bob was revoked: %+v %+v", alice.c.State(), carol.c.State())
	}
	t.Log("after the kills: node1 and node2 listed alice and bob; alice (node1) heard carol join on node2; bob revoked through node1 was closed 4003 on node2 and alice heard him leave")

	// The longest time between two acknowledgements, around the kills.
	var stall time.Duration
	for i := 1; i < len(acks); i++ {
		stall = max(stall, acks[i].answer.Sub(acks[i-1].answer))
	}
	t.Logf("killed NATS server %s (leading the topic's stream) and node3: first acknowledged publish sent after the kills %v later (seq %d), every client READY after %v, every client delivered it after %v; longest gap between acknowledgements %v",
		victim, firstAck.answer.Sub(killed).Round(time.Millisecond), firstAck.seq, readyAt.Sub(killed).Round(time.Millisecond),
		deliveredAt.Sub(killed).Round(time.Millisecond), stall.Round(time.Millisecond))
	t.Logf("%d updates, each delivered once to each of %d clients (%d of them moved); %d acknowledged publishes all delivered with their data; %d publishes failed, %d of them stored all the same",
		last, clients, moved, len(acks), pub.fails, storedAnyway)
}

// jetStreamAt connects to the NATS cluster at urls for JetStream API
// calls; the caller closes the connection.
func jetStreamAt(t *testing.T, urls []string) (jetstream.JetStream, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return js, nc
}

// waitPlacement waits until the NATS cluster at urls places a stream on
// all n servers, by making one with n replicas (deleted after): each
// server saying its JetStream is ready is not yet that (the metadata
// leader may not have every peer's stats), and a node started with
// -nats-replicas n in between is refused "no suitable peers".
func waitPlacement(t *testing.T, urls []string, n int) {
	t.Helper()
	js, nc := jetStreamAt(t, urls)
	defer nc.Close()
	var last error
	if !eventually(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, last = js.CreateStream(ctx, jetstream.StreamConfig{Name: "placement-probe", Subjects: []string{"placement.probe"}, Replicas: n, Storage: jetstream.MemoryStorage})
		if last != nil {
			return false
		}
		last = js.DeleteStream(ctx, "placement-probe")
		return last == nil
	}) {
		t.Fatalf("the NATS cluster does not place a stream on %d servers within 30s: %v", n, last)
	}
}

// streamLeader connects to the NATS cluster at urls and returns the server
// leading the stream with the most updates (a wsready topic's, not a
// key-value bucket's), having checked that every stream there has three
// replicas; and how many streams it saw.
func streamLeader(t *testing.T, urls []string) (string, int) {
	t.Helper()
	js, nc := jetStreamAt(t, urls)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := js.ListStreams(ctx)
	leader, most, n := "", uint64(0), 0
	for info := range l.Info() {
		n++
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Errorf("stream %s: %d replicas configured, cluster %+v; want 3", info.Config.Name, info.Config.Replicas, info.Cluster)
		}
		if !strings.HasPrefix(info.Config.Name, "KV_") && info.State.LastSeq > most && info.Cluster != nil {
			leader, most = info.Cluster.Leader, info.State.LastSeq
		}
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	if leader == "" {
		t.Fatal("no topic stream with a leader")
	}
	return leader, n
}

// behind says which clients have not delivered seq: how many, by the node
// each started on (client i on node i%3) and whether it moved since, and
// where they are.
func behind(subs []*subscriber, seq int64) string {
	type key struct {
		node  int
		moved bool
	}
	n := map[key]int{}
	at := map[int64]int{}
	count := 0
	for i, s := range subs {
		if l := s.last(); l < seq {
			count++
			n[key{i % 3, s.c.Stats().Opens > 1}]++
			at[l]++
		}
	}
	return fmt.Sprintf("%d of %d behind; by start node and moved %v; by last seq delivered %v", count, len(subs), n, at)
}

// presenceClient is a client with a user (a ticket from the node's demo
// token endpoint naming it) in the room topic with presence, recording
// the join and leave events it hears.
type presenceClient struct {
	c  *native.Client
	mu sync.Mutex
	ev []client.PresenceEvent
}

func presenceUser(t *testing.T, n *node, user string) *presenceClient {
	t.Helper()
	p := &presenceClient{}
	token := func(ctx context.Context, force bool) (string, error) {
		var v struct{ Token string }
		req, err := http.NewRequestWithContext(ctx, "POST", "http://"+n.addr+"/api/token", strings.NewReader(`{"clientId":"`+user+`"}`))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("failed to get a ticket: HTTP %d", resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return "", fmt.Errorf("failed to read the ticket: %w", err)
		}
		return v.Token, nil
	}
	c, err := native.Dial(context.Background(), n.url(), &native.Options{Config: stage7(7), Token: token,
		OnPresence: func(e client.PresenceEvent) { p.mu.Lock(); p.ev = append(p.ev, e); p.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.SubscribeWith(ctx, "room", client.SubscribeOptions{Presence: true}, nil); err != nil {
		t.Fatalf("%s failed to join the room: %v", user, err)
	}
	// Subscribe returns once the subscribe is on its way (a topic joined
	// while READY does not hold READY): wait for the server's answer.
	subscribed := func() bool {
		for _, ts := range c.Topics() {
			if ts.Topic == "room" && ts.Subscribed {
				return true
			}
		}
		return false
	}
	if !eventually(10*time.Second, subscribed) {
		t.Fatalf("%s's subscribe to the room was not answered within 10s", user)
	}
	p.c = c
	return p
}

func (p *presenceClient) saw(event, user string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.ev {
		if e.Topic == "room" && e.Event == event && e.User == user {
			return true
		}
	}
	return false
}

func (p *presenceClient) events() []client.PresenceEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]client.PresenceEvent(nil), p.ev...)
}

// postSwitch posts body to the node's demo switches.
func postSwitch(n *node, body string) error {
	resp, err := http.Post("http://"+n.addr+"/api/faults", "application/json", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("failed to post the switch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed to post the switch: HTTP %d", resp.StatusCode)
	}
	return nil
}
