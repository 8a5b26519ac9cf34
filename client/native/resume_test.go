//go:build !js

package native

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/internal/testutil"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// seqRecorder keeps every update one topic delivered, for exact checks.
type seqRecorder struct {
	mu   sync.Mutex
	seqs []int64
	lost []client.ContinuityLost
}

func (r *seqRecorder) update(u client.Update) {
	r.mu.Lock()
	r.seqs = append(r.seqs, u.Seq)
	r.mu.Unlock()
}

func (r *seqRecorder) continuity(l client.ContinuityLost) {
	r.mu.Lock()
	r.lost = append(r.lost, l)
	r.mu.Unlock()
}

func (r *seqRecorder) snapshot() ([]int64, []client.ContinuityLost) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.seqs...), append([]client.ContinuityLost(nil), r.lost...)
}

// eventually polls cond every 10 ms until it holds or d passes
// (poll.Until). Inside synctest.Test its waits are the bubble's fake
// time, and when one returns everything due before has run (the clock
// moves only when every goroutine of the bubble waits); outside, the tests
// on loopback poll the real server's counters, which have no
// notification.
func eventually(d time.Duration, cond func() bool) error {
	if !poll.Until(d, cond) {
		return context.DeadlineExceeded
	}
	return nil
}

func topicServer(t *testing.T, o server.Options, d ...demo.Options) (*testutil.Server, string) {
	t.Helper()
	srv := testutil.StartServer(t, o, d...)
	return srv, srv.URL
}

// memTopicServer is the real server on an in-memory network, for a test
// inside synctest.Test (fake time).
func memTopicServer(t *testing.T, o server.Options, d ...demo.Options) *memServer {
	t.Helper()
	srv, hc := testutil.StartMemServer(t, o, d...)
	return &memServer{Server: srv, hc: hc}
}

func fastStage7(seed uint64) *client.Config {
	cfg := stages.Must(7)
	cfg.Rand = rand.New(rand.NewPCG(seed, 7)).Float64
	cfg.FirstPingTimeout = 300 * time.Millisecond
	cfg.SubscribeTimeout = 300 * time.Millisecond
	cfg.RequestTimeout = time.Second
	cfg.ConnectTimeout = time.Second
	cfg.Policy = client.FullJitter{Base: 20 * time.Millisecond, Cap: 150 * time.Millisecond}
	cfg.CapGrowth = []client.CapStep{}
	cfg.Cooldown = 150 * time.Millisecond
	return cfg
}

// Resume's first proof: native stage 7 clients through 100 reconnects
// each (Restart, Flapping and Freeze in turns) while the backend publishes
// 50 updates a second: every client delivers exactly 1..N.
func TestResumeThrough100ReconnectsLosesAndRepeatsNothing(t *testing.T) {
	synctest.Test(t, testResumeThrough100Reconnects)
}

func testResumeThrough100Reconnects(t *testing.T) {
	srv := memTopicServer(t, server.Options{PingInterval: 100 * time.Millisecond, NoSlots: true},
		demo.Options{FlapAfter: 100 * time.Millisecond, RestartDowntime: 150 * time.Millisecond, NoFeed: true})
	ctx := context.Background()
	if _, err := srv.Publish(ctx, "ticks", []byte(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}
	const clients = 4
	recs := make([]*seqRecorder, clients)
	cls := make([]*Client, clients)
	for i := range clients {
		recs[i] = &seqRecorder{}
		cfg := fastStage7(uint64(i))
		cfg.Topic = "ticks" // the service topic: READY means subscribed to it
		c, err := srv.dial(&Options{Config: cfg, OnContinuityLost: recs[i].continuity})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Subscribe(ctx, "ticks", nil, recs[i].update); err != nil {
			t.Fatal(err)
		}
		cls[i] = c
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := c.WaitReady(wctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	// The publisher: 50 a second until told to stop.
	stop := make(chan struct{})
	var last int64
	var pubErr error
	var pubWG sync.WaitGroup
	pubWG.Add(1)
	go func() {
		defer pubWG.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			seq, err := srv.Publish(ctx, "ticks", []byte(`{"n":`+strconv.Itoa(n)+`}`))
			if err != nil {
				pubErr = err
				return
			}
			last = seq
		}
	}()
	minOpens := func() int {
		m := 1 << 30
		for _, c := range cls {
			m = min(m, c.Stats().Opens)
		}
		return m
	}
	deadline := time.Now().Add(90 * time.Second)
	turns := 0
	// Each turn's waits are the bubble's fake time.
	for minOpens() < 101 && time.Now().Before(deadline) {
		switch turns % 3 {
		case 0:
			srv.Set("restart", true)
			advance(500 * time.Millisecond)
		case 1:
			srv.Set("flapping", true)
			advance(1500 * time.Millisecond)
			srv.Set("flapping", false)
		case 2:
			srv.Set("freeze", true)
			advance(500 * time.Millisecond)
			srv.Set("freeze", false)
		}
		advance(300 * time.Millisecond)
		turns++
	}
	close(stop)
	pubWG.Wait()
	if pubErr != nil {
		t.Fatal(pubErr)
	}
	if n := minOpens(); n < 101 {
		t.Fatalf("only %d opens (100 reconnects) per client in %d turns", n, turns)
	}
	// Everyone catches up: READY, and the last seq delivered.
	for i, c := range cls {
		err := eventually(10*time.Second, func() bool {
			seqs, _ := recs[i].snapshot()
			return len(seqs) > 0 && seqs[len(seqs)-1] == last
		})
		if err != nil {
			seqs, _ := recs[i].snapshot()
			t.Fatalf("client %d: last seq %d of %d not delivered (%d updates, state %+v)", i, last, last, len(seqs), c.State())
		}
	}
	for i, c := range cls {
		seqs, lost := recs[i].snapshot()
		st := c.Stats()
		if d := testutil.ExactRun(seqs, seqs[0], last); d != "" || seqs[0] > 2 {
			t.Errorf("client %d: %s (first %d)", i, d, seqs[0])
		}
		if len(lost) != 0 || st.SeqGaps != 0 || st.MissedUpdates != 0 {
			t.Errorf("client %d: continuity lost %v, gaps %d, missed %d", i, lost, st.SeqGaps, st.MissedUpdates)
		}
		t.Logf("client %d: %d opens, %d updates (1..%d), %d replayed, %d duplicates dropped", i, st.Opens, len(seqs), last, st.Replayed, st.DuplicatesDropped)
		if st.Replayed == 0 {
			t.Errorf("client %d: nothing was replayed across %d reconnects", i, st.Opens-1)
		}
	}
	t.Logf("%d turns of Restart, Flapping and Freeze; %d updates published", turns, last)
}

// A client that comes back after the server's retention has moved past its
// cursor hears of exactly the range it lost, once, and goes on from the
// first update the server still has. Its cursors come back through
// LoadCursors, as a restarted process's would.
func TestAGapPastRetentionIsOneContinuityLostWithItsRange(t *testing.T) {
	synctest.Test(t, testAGapPastRetention)
}

func testAGapPastRetention(t *testing.T) {
	srv := memTopicServer(t, server.Options{HistoryMsgs: 20}, demo.Options{NoFeed: true})
	ctx := context.Background()
	for range 10 {
		if _, err := srv.Publish(ctx, "news", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	var saved []client.Cursor
	var mu sync.Mutex
	store := func(c []client.Cursor) { mu.Lock(); saved = c; mu.Unlock() }
	first := &seqRecorder{}
	c, err := srv.dial(&Options{Config: fastStage7(1), StoreCursors: store})
	if err != nil {
		t.Fatal(err)
	}
	since := int64(3)
	if _, err := c.Subscribe(ctx, "news", &since, first.update); err != nil {
		t.Fatal(err)
	}
	if err := eventually(5*time.Second, func() bool { s, _ := first.snapshot(); return len(s) == 7 }); err != nil {
		t.Fatalf("replay from since 3: %v", err)
	}
	if s, _ := first.snapshot(); testutil.ExactRun(s, 4, 10) != "" {
		t.Fatalf("replay from since 3 delivered %v", s)
	}
	c.Close()
	// 50 more while it is away: the server keeps 41..60.
	for range 50 {
		if _, err := srv.Publish(ctx, "news", []byte(`2`)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	load := append([]client.Cursor(nil), saved...)
	mu.Unlock()
	rec := &seqRecorder{}
	c2, err := srv.dial(&Options{Config: fastStage7(2), LoadCursors: func() []client.Cursor { return load }, OnContinuityLost: rec.continuity})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Subscribe(ctx, "news", nil, rec.update); err != nil {
		t.Fatal(err)
	}
	if err := eventually(5*time.Second, func() bool { s, _ := rec.snapshot(); return len(s) == 20 }); err != nil {
		s, l := rec.snapshot()
		t.Fatalf("after the gap: %v, lost %v", s, l)
	}
	advance(200 * time.Millisecond) // nothing more may come
	seqs, lost := rec.snapshot()
	if d := testutil.ExactRun(seqs, 41, 60); d != "" {
		t.Fatal(d)
	}
	if len(lost) != 1 || lost[0] != (client.ContinuityLost{Topic: "news", From: 11, To: 40}) {
		t.Fatalf("continuity lost %+v, want exactly one for 11..40", lost)
	}
	if st := c2.Stats(); st.MissedUpdates != 30 || st.ContinuityLost != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Clients publish; subscribers on other connections get the update with
// the seq the publisher was told; a topic nobody published to yet exists
// when joined (its first update arrives); the server's own topic and a
// publish with publishing off are refused with their codes.
func TestPublishReachesSubscribersAndRefusalsHaveCodes(t *testing.T) {
	_, url := topicServer(t, server.Options{Publish: true}, demo.Options{FeedInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var topicErrs sync.Map
	sub, err := Dial(ctx, url, &Options{Config: fastStage7(3), OnTopicError: func(topic, code string) { topicErrs.Store(topic, code) }})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub, err := Dial(ctx, url, &Options{Config: fastStage7(4)})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	seq, err := pub.Publish(ctx, "chat", []byte(`{"text":"hello"}`))
	if err != nil || seq != 1 {
		t.Fatalf("first publish: seq %d, %v", seq, err)
	}
	rec := &seqRecorder{}
	since := int64(0)
	if _, err := sub.Subscribe(ctx, "chat", &since, rec.update); err != nil {
		t.Fatal(err)
	}
	early := &seqRecorder{}
	if _, err := sub.Subscribe(ctx, "nobody-here", nil, early.update); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Subscribe(ctx, "bad topic", nil, nil); err == nil {
		t.Fatal("an invalid topic name was accepted")
	}
	if err := sub.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	seq2, err := pub.Publish(ctx, "chat", []byte(`{"text":"again"}`))
	if err != nil || seq2 != 2 {
		t.Fatalf("second publish: seq %d, %v", seq2, err)
	}
	if err := eventually(5*time.Second, func() bool { s, _ := rec.snapshot(); return len(s) == 2 }); err != nil {
		s, _ := rec.snapshot()
		t.Fatalf("subscriber got %v", s)
	}
	if s, _ := rec.snapshot(); testutil.ExactRun(s, 1, 2) != "" {
		t.Fatalf("subscriber got %v", s)
	}
	var se *client.ServerError
	if _, err := pub.Publish(ctx, "feed", []byte(`1`)); !errors.As(err, &se) || se.Code != "forbidden" {
		t.Fatalf("publish to feed: %v, want forbidden", err)
	}
	// Subscribed before its first publish: that publish is not missed.
	if seq, err := pub.Publish(ctx, "nobody-here", []byte(`{"first":true}`)); err != nil || seq != 1 {
		t.Fatalf("first publish to a joined topic: seq %d, %v", seq, err)
	}
	if err := eventually(5*time.Second, func() bool { s, _ := early.snapshot(); return len(s) == 1 }); err != nil {
		s, _ := early.snapshot()
		t.Fatalf("the early subscriber got %v, want [1]", s)
	}
	if code, ok := topicErrs.Load("nobody-here"); ok {
		t.Fatalf("a topic nobody had published to was refused with %v", code)
	}

	_, closedURL := topicServer(t, server.Options{})
	c, err := Dial(ctx, closedURL, &Options{Config: fastStage7(5)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, "chat", []byte(`1`)); !errors.As(err, &se) || se.Code != "forbidden" {
		t.Fatalf("publish with publishing off: %v, want forbidden", err)
	}
}

// TestSubscribeRefusedReturnsTheCode: a subscribe the server refuses
// (Authorize says forbidden) ends Subscribe's wait with a *SubscribeError
// carrying the server's code and the func, and OnTopicError hears the
// same; a topic allowed on the same client is taken (nil); the refused
// topic keeps the client from READY (WaitReady fails naming it) until the
// app calls the func.
func TestSubscribeRefusedReturnsTheCode(t *testing.T) {
	_, url := topicServer(t, server.Options{Authorize: func(_ context.Context, _ server.Identity, a server.Action) error {
		if a.Kind == server.ActSubscribe && a.Topic == "secret" {
			return &server.Error{Code: "forbidden", Message: "not yours"}
		}
		return nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	heard := make(chan string, 8)
	c, err := Dial(ctx, url, &Options{Config: fastStage7(11), OnTopicError: func(topic, code string) { heard <- topic + " " + code }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, "open", nil, nil); err != nil {
		t.Fatalf("an allowed topic: %v", err)
	}
	stop, err := c.Subscribe(ctx, "secret", nil, nil)
	var se *SubscribeError
	if !errors.As(err, &se) || se.Topic != "secret" || se.Code != "forbidden" || se.Message != "not yours" {
		t.Fatalf("a refused topic: %v, want *SubscribeError secret forbidden", err)
	}
	if stop == nil {
		t.Fatal("a refused Subscribe returned no func to give the subscription up")
	}
	select {
	case h := <-heard:
		if h != "secret forbidden" {
			t.Fatalf("OnTopicError heard %q", h)
		}
	case <-ctx.Done():
		t.Fatal("OnTopicError never heard the refusal")
	}
	// The refusal holds READY until the app gives the topic up.
	if err := c.WaitReady(ctx); !errors.As(err, &se) || se.Topic != "secret" {
		t.Fatalf("WaitReady with a refused topic: %v, want its *SubscribeError", err)
	}
	stop()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady after giving the refused topic up: %v", err)
	}
}

// Through the real server: a topic the app's Authorize refuses with a code
// of its own holds READY, and WaitReady fails at once naming it (code and
// message) until the app gives it up; a transient answer
// (too_many_topics) holds READY too, and WaitReady's error at ctx's end
// names each topic the server has not taken, with its last answer.
func TestWaitReadyNamesTheTopicsItWaitsFor(t *testing.T) {
	_, url := topicServer(t, server.Options{MaxTopics: 1, Authorize: func(_ context.Context, _ server.Identity, a server.Action) error {
		if a.Kind == server.ActSubscribe && a.Topic == "room2" {
			return &server.Error{Code: "not_a_member", Message: "no"}
		}
		return nil
	}}, demo.Options{NoFeed: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &Options{Config: fastStage7(12)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var leave2 func()
	for _, topic := range []string{"room1", "room2"} {
		leave, err := c.Subscribe(ctx, topic, nil, nil)
		// Usually before the connection (Subscribe returns at once), but
		// on loopback the client may be connected already: then Subscribe
		// waits for the answer, and room2's is the refusal, with its func.
		if err != nil && (topic != "room2" || !errors.Is(err, ErrTopicRefused)) {
			t.Fatalf("%s: %v", topic, err)
		}
		if topic == "room2" {
			leave2 = leave
		}
	}
	// room2 refused by the app's own code: not READY, and WaitReady says
	// so at once, the State names it.
	err = c.WaitReady(ctx)
	var se *SubscribeError
	if !errors.Is(err, ErrTopicRefused) || !errors.As(err, &se) || se.Topic != "room2" || se.Code != "not_a_member" || se.Message != "no" || ctx.Err() != nil {
		t.Fatalf("with room2 refused by the app's own code: %v (%+v)", err, se)
	}
	if st := c.State(); st.Refusals != 1 || st.Refused != (client.TopicError{Topic: "room2", Code: "not_a_member", Message: "no"}) {
		t.Fatalf("state %+v: want room2 named", st)
	}
	leave2()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("after leaving room2: %v", err)
	}
	// room1 holds the server's one topic: room3 is too_many_topics.
	c2, err := Dial(ctx, url, &Options{Config: fastStage7(13)})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Subscribe(ctx, "room3", nil, nil); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer stop()
	err = c2.WaitReady(short)
	var nr *NotReadyError
	if !errors.As(err, &nr) || len(nr.Waiting) != 1 || nr.Waiting[0] != (TopicWait{Topic: "room3", Code: "too_many_topics"}) ||
		!strings.Contains(err.Error(), "the server has not taken room3 (too_many_topics)") {
		t.Fatalf("WaitReady: %v (%+v), want a NotReadyError naming room3 and too_many_topics", err, nr)
	}
}

// WaitReady may be called from a callback, which runs on the client's
// loop: with a ctx that has ended it returns at once. (Its error asked the
// loop for the topics once, and hung there.)
func TestWaitReadyFromACallbackReturns(t *testing.T) {
	_, url := topicServer(t, server.Options{}, demo.Options{NoFeed: true})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var cp atomic.Pointer[Client]
	got := make(chan error, 1)
	c, err := Dial(context.Background(), url, &Options{Config: fastStage7(14), OnState: func(s client.State) {
		if p := cp.Load(); p != nil && !s.Ready {
			select {
			case got <- p.WaitReady(ended):
			default:
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	cp.Store(c)
	c.Reconnect() // a state change, so OnState runs with cp set
	select {
	case err := <-got:
		var nr *NotReadyError
		if !errors.As(err, &nr) {
			t.Fatalf("WaitReady from OnState: %v, want a *NotReadyError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitReady from OnState did not return within 5 s: the loop is stuck (the client is left open)")
	}
	c.Close()
}
