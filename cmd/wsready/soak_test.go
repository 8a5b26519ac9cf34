//go:build !js

package main

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/internal/soak"
)

// The chaos soak (make soak; a 3-minute run in make test): make
// cluster's three NATS servers and three nodes, a fleet of native clients
// over several source addresses resuming a few topics, a publisher per
// topic acknowledging every publish, and a nemesis applying a seeded
// schedule of real faults. Every observation goes to a JSON-lines history
// that internal/soak's checker reads afterwards. Run alone with
// WSREADY_SOAK=1; a failing run prints its seed, and -soak.seed replays
// its schedule.
var (
	soakSeed    = flag.Uint64("soak.seed", 0, "the nemesis's seed; 0 draws one from the clock (printed)")
	soakMinutes = flag.Float64("soak.minutes", 30, "the run's length in minutes, including a 30 s warmup and a 30 s quiet end")
	soakClients = flag.Int("soak.clients", 1000, "native clients")
	soakTopics  = flag.Int("soak.topics", 3, "topics, one publisher each")
	soakBreak   = flag.String("soak.break", "", `"resume": the clients run with resume turned off, a broken build the checker must catch`)
	soakReport  = flag.String("soak.report", "", "write the report (markdown) to this file (a relative path is the package directory's, cmd/wsready: the Makefile passes absolute ones)")
	soakPagesN  = flag.Int("soak.pages", 3, "Chromium pages at stage 8 (e2e/soakpages): 3, or 0 for none; none, with a note in the report, where Chromium is missing")
	soakHistory = flag.String("soak.history", "", "keep the history (JSON lines) at this path; default a temporary file")
)

// soakSources is how many loopback source addresses the clients are
// spread over (127.0.0.2..), so ephemeral ports never run out across
// thousands of reconnects.
const soakSources = 8

// Publishing pace and the request pace of the clients that ask.
const (
	soakPublishEvery = 250 * time.Millisecond
	soakRequestEvery = 3 * time.Second
	soakRequesters   = 10 // every tenth client sends requests
	soakSampleEvery  = 5 * time.Second
)

// lineHook, when set, sees every output line of every process the tests
// launch (nodes_test.go's note): the soak's crash detector.
var lineHook atomic.Pointer[func(p *proc, line string)]

func TestSoak(t *testing.T) {
	if os.Getenv("WSREADY_SOAK") != "1" {
		t.Skip("the chaos soak runs with WSREADY_SOAK=1 (make soak; make test runs 3 minutes of it)")
	}
	seed := *soakSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	length := time.Duration(*soakMinutes * float64(time.Minute))
	t.Logf("soak seed %d, %v, %d clients, %d topics (replay: make soak SEED=%d MINUTES=%g)", seed, length, *soakClients, *soakTopics, seed, *soakMinutes)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: replay with make soak SEED=%d MINUTES=%g", seed, seed, *soakMinutes)
		}
	}()
	if *soakPagesN != 0 && *soakPagesN != 3 {
		t.Fatalf("-soak.pages %d: 3 or 0 (soakpages runs two tabs sharing a connection and one over HTTP)", *soakPagesN)
	}
	pagesN, pagesNote := *soakPagesN, ""
	if pagesN == 0 {
		pagesNote = "-soak.pages=0"
	} else if _, err := chromiumPath(); err != nil {
		pagesN, pagesNote = 0, err.Error()
		t.Logf("no Chromium pages in this soak: %v", err)
	}
	plan := soak.Plan{Seed: seed, Length: length, Warmup: 30 * time.Second, Quiet: 30 * time.Second,
		Nodes: 3, NATS: 3, Topics: *soakTopics, Pages: pagesN, MinGap: 10 * time.Second, MaxGap: 30 * time.Second}
	schedule, err := soak.Schedule(plan)
	if err != nil {
		t.Fatal(err)
	}
	if *soakClients < 1 || *soakClients > 5000 {
		t.Fatalf("-soak.clients %d: 1 to 5000", *soakClients)
	}
	if *soakBreak != "" && *soakBreak != "resume" {
		t.Fatalf(`-soak.break %q: only "resume"`, *soakBreak)
	}

	histPath := *soakHistory
	if histPath == "" {
		histPath = filepath.Join(t.TempDir(), "history.jsonl")
	}
	start := time.Now()
	h, err := soak.Create(histPath, start)
	if err != nil {
		t.Fatal(err)
	}
	r := &soakRun{t: t, h: h, start: start, seed: seed, asked: map[string]bool{}}
	hook := func(p *proc, line string) { r.watch(p, line) }
	lineHook.Store(&hook)
	defer lineHook.Store(nil)

	// The cluster: three NATS servers, three nodes, topics on three replicas.
	r.nats = startNATSCluster(t, t.TempDir(), 3)
	urls := make([]string, len(r.nats))
	for i, s := range r.nats {
		urls[i] = s.url
	}
	// One ticket key for every node, as docs/auth.md asks of a cluster: with
	// a random key per process, a page's ticket is refused (4003, the
	// session ends) by the node that issued it once that node restarts.
	keyFile := filepath.Join(t.TempDir(), "ticket.key")
	if err := os.WriteFile(keyFile, []byte(crand.Text()+crand.Text()), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"-auth-key-file", keyFile, "-nats", strings.Join(urls, ","), "-nats-replicas", "3", "-demo", "-publish", "-auth", "optional",
		"-max-conns-per-ip", "5000", "-tenant-rate", "5000", "-tenant-burst", "5000", "-admit-burst", "1000",
		"-drain-window", "3s", "-restart-downtime", "2s"}
	for i := range 3 {
		args := append(append([]string{}, common...), "-node", "node"+strconv.Itoa(i+1), "-feed-leader="+strconv.FormatBool(i == 0))
		r.nodes = append(r.nodes, startNode(t, freeAddr(t), args...))
	}
	nodeURLs := func(first int) []string {
		out := make([]string, 3)
		for k := range out {
			out[k] = r.nodes[(first+k)%3].url()
		}
		return out
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	// Publishers first: a topic exists once its first publish is stored.
	topics := make([]string, *soakTopics)
	pubs := make([]*soakPublisher, len(topics))
	for i := range topics {
		topics[i] = "soak" + strconv.Itoa(i+1)
		pubs[i] = r.startPublisher(ctx, &wg, topics[i], nodeURLs(i))
	}
	for _, p := range pubs {
		if !eventually(30*time.Second, func() bool { return p.acked.Load() > 0 }) {
			t.Fatalf("publisher of %s: nothing acknowledged within 30 s", p.topic)
		}
	}

	// The fleet.
	transports := make([]*http.Client, soakSources)
	for i := range transports {
		d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}}
		transports[i] = &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: -1}}
	}
	r.notReady.Store(int64(*soakClients))
	clients := make([]*native.Client, *soakClients)
	for i := range clients {
		clients[i] = r.startClient(ctx, &wg, i, topics[i%len(topics)], nodeURLs(i), transports[i%len(transports)])
	}
	if !eventually(60*time.Second, func() bool { return r.notReady.Load() == 0 }) {
		t.Fatalf("%d of %d clients not READY within 60 s of the start", r.notReady.Load(), len(clients))
	}
	t.Logf("%d clients READY after %v", len(clients), time.Since(start).Round(time.Millisecond))
	if pagesN > 0 {
		// Two tabs on node2, the third page through a proxy refusing
		// upgrades in front of node3 (node1 leads the feed).
		r.pages, err = startSoakPages(t, t.TempDir(), "http://"+r.nodes[1].addr, "http://"+r.nodes[2].addr, start)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d Chromium pages READY after %v", pagesN, time.Since(start).Round(time.Millisecond))
	}

	// Observers: the fleet's READY count on change, the processes'
	// resources every soakSampleEvery.
	obsCtx, stopObs := context.WithCancel(ctx)
	defer stopObs()
	var obs sync.WaitGroup
	obs.Add(2)
	go func() { defer obs.Done(); r.fleetLoop(obsCtx) }()
	go func() { defer obs.Done(); r.sampleLoop(obsCtx) }()

	// The nemesis.
	canReset := ssWorks()
	canBlackhole := blackholeWorks()
	t.Cleanup(removeBlackholes)
	var heals sync.WaitGroup
	for _, f := range schedule {
		if !sleepCtx(ctx, time.Until(start.Add(f.At))) {
			break
		}
		r.apply(ctx, &heals, f, pubs, canReset, canBlackhole)
	}
	heals.Wait()
	lastHeal := time.Now()
	sleepCtx(ctx, time.Until(start.Add(length-plan.Quiet/2)))
	if !eventually(max(time.Until(start.Add(length)), 15*time.Second), func() bool { return r.notReady.Load() == 0 }) {
		t.Logf("%d clients not READY %v after the last heal", r.notReady.Load(), time.Since(lastHeal).Round(time.Second))
	}

	// The end: each publisher's last publish acknowledged, then every
	// client given everything (or told it is lost), for at most 60 s.
	lastSeq := map[string]int64{}
	for _, p := range pubs {
		lastSeq[p.topic] = p.finish(ctx)
	}
	caught := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i := range clients {
			topic := topics[i%len(topics)]
			if r.cursor[i] < lastSeq[topic] {
				return false
			}
		}
		return true
	}
	eventually(60*time.Second, caught)
	// The observers stop before the clients close (their closing is not
	// the fleet leaving READY).
	stopObs()
	obs.Wait()
	if r.pages != nil {
		if err := r.pages.do("final"); err != nil {
			t.Error(err)
		}
		if err := r.pages.quit(); err != nil {
			t.Error(err)
		}
	}
	for i, c := range clients {
		ready := int64(0)
		if c.State().Ready {
			ready = 1
		}
		h.Add(soak.Event{Kind: soak.KindFinal, Who: "c" + strconv.Itoa(i), N: ready})
	}
	cancel()
	for _, c := range clients {
		c.Close()
	}
	wg.Wait()
	lineHook.Store(nil)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if r.pages != nil {
		if err := appendFile(histPath, r.pages.path); err != nil {
			t.Fatal(err)
		}
	}

	res, err := soak.CheckFile(histPath, soak.DefaultBounds())
	if err != nil {
		t.Fatal(err)
	}
	rep := soak.Report(soak.ReportInput{Seed: seed, Length: length, Clients: len(clients), Topics: len(topics), Pages: pagesN, PagesNote: pagesNote,
		Schedule: schedule, Result: res, Took: time.Since(start), Race: os.Getenv("WSREADY_BIN_RACE") == "1", Broken: *soakBreak})
	if *soakReport != "" {
		if err := os.WriteFile(*soakReport, []byte(rep), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("report:\n%s", rep)
	if !res.OK() {
		t.Fatalf("seed %d: %d rules broken; the first: %v", seed, len(res.Count), res.First())
	}
}

// soakRun is one soak's shared state.
type soakRun struct {
	t     *testing.T
	h     *soak.Writer
	start time.Time
	seed  uint64

	mu     sync.Mutex
	nodes  []*node
	nats   []*natsServer
	asked  map[string]bool // processes the nemesis stopped on purpose (by what)
	gen    map[string]int  // each process's incarnation
	cursor map[int]int64   // each client's last seq
	pages  *soakPages      // the Chromium pages, or nil

	notReady atomic.Int64
	reqID    atomic.Int64
}

// watch reads one output line of a process: a panic, a fatal error or a
// race report is a crash in the history (only the first words: no peer
// text reaches the report).
func (r *soakRun) watch(p *proc, line string) {
	for _, bad := range []string{"panic:", "fatal error:", "WARNING: DATA RACE"} {
		if strings.HasPrefix(line, bad) {
			r.h.Add(soak.Event{Kind: soak.KindCrash, Who: r.name(p), Err: bad})
		}
	}
}

// name is how the history calls a process.
func (r *soakRun) name(p *proc) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, n := range r.nodes {
		if n.proc == p {
			return "node" + strconv.Itoa(i+1)
		}
	}
	for i, s := range r.nats {
		if s.proc == p {
			return "nats" + strconv.Itoa(i+1)
		}
	}
	return "process"
}

// startClient dials one client of the fleet, subscribes it to topic from
// the start and records what it is handed.
func (r *soakRun) startClient(ctx context.Context, wg *sync.WaitGroup, i int, topic string, urls []string, hc *http.Client) *native.Client {
	who := "c" + strconv.Itoa(i)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(r.seed, uint64(i)))
	cfg := &client.Config{
		Rand:             func() float64 { mu.Lock(); defer mu.Unlock(); return rng.Float64() },
		Policy:           client.FullJitter{Base: 250 * time.Millisecond, Cap: 3 * time.Second},
		SubscribeTimeout: 2 * time.Second,
		ConnectTimeout:   3 * time.Second,
	}
	if *soakBreak == "resume" {
		cfg.Disable.Resume = true
	}
	ready := false
	c, err := native.Dial(ctx, urls[0], &native.Options{Config: cfg, URLs: urls[1:],
		DialOptions: &websocket.DialOptions{HTTPClient: hc},
		OnState: func(s client.State) {
			if s.Ready != ready {
				ready = s.Ready
				if ready {
					r.notReady.Add(-1)
				} else {
					r.notReady.Add(1)
				}
			}
		},
		OnContinuityLost: func(l client.ContinuityLost) {
			e := soak.Event{Kind: soak.KindLost, Who: who, Topic: l.Topic, Seq: l.From, To: l.To}
			if l.Reset {
				e.Err = "reset"
			}
			r.h.Add(e)
		},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	since := int64(0)
	r.h.Add(soak.Event{Kind: soak.KindSub, Who: who, Topic: topic, Seq: since})
	if _, err := c.Subscribe(ctx, topic, &since, func(u client.Update) {
		r.h.Add(soak.Event{Kind: soak.KindUpdate, Who: who, Topic: u.Topic, Seq: u.Seq, Data: string(u.Data)})
		r.mu.Lock()
		if r.cursor == nil {
			r.cursor = map[int]int64{}
		}
		r.cursor[i] = max(r.cursor[i], u.Seq)
		r.mu.Unlock()
	}); err != nil {
		r.t.Fatal(err)
	}
	if i%soakRequesters == 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.requestLoop(ctx, c, who, i)
		}()
	}
	return c
}

// requestLoop sends a request every soakRequestEvery; each must settle by
// the client's own deadline (5 s), not by the runner's (30 s).
func (r *soakRun) requestLoop(ctx context.Context, c *native.Client, who string, i int) {
	tick := time.NewTicker(soakRequestEvery + time.Duration(i%97)*time.Millisecond)
	defer tick.Stop()
	for n := 0; n < 100_000; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		id := r.reqID.Add(1)
		r.h.Add(soak.Event{Kind: soak.KindReq, Who: who, ID: id})
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := c.RequestWith(rctx, "time", nil, native.RequestOptions{Timeout: 5 * time.Second})
		late := rctx.Err() != nil
		cancel()
		e := soak.Event{Kind: soak.KindSettle, Who: who, ID: id}
		switch {
		case late:
			e.Err = "late"
		case errors.Is(err, native.ErrClosed) || ctx.Err() != nil && err != nil:
			e.Err = "closed"
		case err != nil:
			e.Err = "failed"
		}
		r.h.Add(e)
	}
}

// soakPublisher publishes to one topic at its pace, never resending a
// failed publish with the same data.
type soakPublisher struct {
	r     *soakRun
	c     *native.Client
	topic string
	n     atomic.Int64 // data counter
	acked atomic.Int64 // acknowledged so far
	burst chan int
	stop  chan struct{}
	done  chan struct{}
}

func (r *soakRun) startPublisher(ctx context.Context, wg *sync.WaitGroup, topic string, urls []string) *soakPublisher {
	c, err := native.Dial(ctx, urls[0], &native.Options{URLs: urls[1:], Config: &client.Config{
		Rand:   rand.New(rand.NewPCG(r.seed, 999)).Float64,
		Policy: client.FullJitter{Base: 100 * time.Millisecond, Cap: time.Second}}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	p := &soakPublisher{r: r, c: c, topic: topic, burst: make(chan int, 1), stop: make(chan struct{}), done: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(p.done)
		tick := time.NewTicker(soakPublishEvery)
		defer tick.Stop()
		for k := 0; k < 1_000_000; k++ {
			select {
			case <-ctx.Done():
				return
			case <-p.stop:
				return
			case n := <-p.burst:
				for range n {
					p.publish(ctx)
				}
			case <-tick.C:
				p.publish(ctx)
			}
		}
	}()
	return p
}

// publish sends one publish and records its answer.
func (p *soakPublisher) publish(ctx context.Context) (int64, bool) {
	data := `{"p":"` + p.topic + `","n":` + strconv.FormatInt(p.n.Add(1), 10) + `}`
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	seq, err := p.c.Publish(pctx, p.topic, []byte(data))
	cancel()
	if err != nil {
		p.r.h.Add(soak.Event{Kind: soak.KindPubFail, Who: "p-" + p.topic, Topic: p.topic, Data: data})
		return 0, false
	}
	p.acked.Add(1)
	p.r.h.Add(soak.Event{Kind: soak.KindAck, Who: "p-" + p.topic, Topic: p.topic, Seq: seq, Data: data})
	return seq, true
}

// finish stops the pace and publishes until one is acknowledged (at most
// 50 tries): the topic's last seq.
func (p *soakPublisher) finish(ctx context.Context) int64 {
	close(p.stop)
	<-p.done
	for range 50 {
		if seq, ok := p.publish(ctx); ok {
			return seq
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			break
		}
	}
	p.r.t.Errorf("the last publish of %s was never acknowledged", p.topic)
	return 0
}

// fleetLoop writes the count of clients not READY whenever it changes
// (polled every 50 ms).
func (r *soakRun) fleetLoop(ctx context.Context) {
	last := int64(-1)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if n := r.notReady.Load(); n != last {
			last = n
			r.h.Add(soak.Event{Kind: soak.KindFleet, N: n})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sampleLoop records each process's RSS (and a node's goroutines, from
// its /metrics) every soakSampleEvery, this process's too; a process gone
// without the nemesis asking is a crash.
func (r *soakRun) sampleLoop(ctx context.Context) {
	tick := time.NewTicker(soakSampleEvery)
	defer tick.Stop()
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		r.mu.Lock()
		type target struct {
			name string
			pid  int
			url  string
		}
		var ts []target
		for i, n := range r.nodes {
			ts = append(ts, target{"node" + strconv.Itoa(i+1), n.cmd.Process.Pid, "http://" + n.addr + "/metrics"})
		}
		for i, s := range r.nats {
			ts = append(ts, target{"nats" + strconv.Itoa(i+1), s.cmd.Process.Pid, ""})
		}
		asked := map[string]bool{}
		for k, v := range r.asked {
			asked[k] = v
		}
		gen := map[string]int{}
		for k, v := range r.gen {
			gen[k] = v
		}
		r.mu.Unlock()
		for _, tg := range ts {
			if asked[tg.name] {
				continue
			}
			rss, alive := rssOf(tg.pid)
			if !alive {
				if r.goneUnasked(tg.name, gen[tg.name]) {
					r.h.Add(soak.Event{Kind: soak.KindCrash, Who: tg.name, Err: "exited unasked"})
				}
				continue
			}
			var gor int64
			if tg.url != "" {
				gor = metricValue(hc, tg.url, "go_goroutines")
			}
			r.h.Add(soak.Event{Kind: soak.KindSample, Who: tg.name + "#" + strconv.Itoa(gen[tg.name]), RSS: rss, Gor: gor})
		}
		rss, _ := rssOf(os.Getpid())
		r.h.Add(soak.Event{Kind: soak.KindSample, Who: "clients", RSS: rss, Gor: int64(runtime.NumGoroutine())})
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// goneUnasked says whether process who, found gone, went without the
// nemesis asking: not asked now, and not restarted since the sampler's
// snapshot of incarnation gen. The snapshot is seconds old by the time a
// process is looked at (a node's /metrics may take its 2 s timeout each),
// and a kill the nemesis made meanwhile is not a crash.
func (r *soakRun) goneUnasked(who string, gen int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.asked[who] && r.gen[who] == gen
}

// apply runs one fault of the schedule; its heal runs on a goroutine of
// heals.
func (r *soakRun) apply(ctx context.Context, heals *sync.WaitGroup, f soak.Fault, pubs []*soakPublisher, canReset, canBlackhole error) {
	t := r.t
	switch f.Kind {
	case soak.PageFreeze:
		who := "page" + strconv.Itoa(f.Target)
		if r.pages == nil {
			r.h.Add(soak.Event{Kind: soak.KindSkip, Who: who, Fault: f.Kind, Err: "no Chromium pages"})
			return
		}
		r.h.Add(soak.Event{Kind: soak.KindFault, Who: who, Fault: f.Kind})
		if err := r.pages.do("freeze " + strconv.Itoa(f.Target)); err != nil {
			t.Errorf("%s: %v", who, err)
			return
		}
		heals.Add(1)
		go func() {
			defer heals.Done()
			sleepCtx(ctx, f.Hold)
			if err := r.pages.do("thaw " + strconv.Itoa(f.Target)); err != nil {
				t.Errorf("%s: %v", who, err)
			}
			r.h.Add(soak.Event{Kind: soak.KindHeal, Who: who, Fault: f.Kind})
		}()
		return
	case soak.Blackhole:
		who := "node" + strconv.Itoa(f.Target+1)
		if canBlackhole != nil {
			r.h.Add(soak.Event{Kind: soak.KindSkip, Who: who, Fault: f.Kind, Err: canBlackhole.Error()})
			return
		}
		r.mu.Lock()
		port := r.nodes[f.Target].addr[strings.LastIndexByte(r.nodes[f.Target].addr, ':')+1:]
		r.mu.Unlock()
		r.h.Add(soak.Event{Kind: soak.KindFault, Who: who, Fault: f.Kind})
		if err := blackhole("-I", port); err != nil {
			t.Errorf("blackhole %s: %v", who, err)
			return
		}
		heals.Add(1)
		go func() {
			defer heals.Done()
			sleepCtx(ctx, f.Hold)
			if err := blackhole("-D", port); err != nil {
				t.Errorf("blackhole %s lifted: %v", who, err)
			}
			r.h.Add(soak.Event{Kind: soak.KindHeal, Who: who, Fault: f.Kind})
		}()
		return
	case soak.Burst:
		p := pubs[f.Target%len(pubs)]
		r.h.Add(soak.Event{Kind: soak.KindFault, Who: "p-" + p.topic, Fault: f.Kind})
		select {
		case p.burst <- soak.BurstSize:
		default: // a burst is still running
		}
		return
	case soak.ResetNode:
		who := "node" + strconv.Itoa(f.Target+1)
		if canReset != nil {
			r.h.Add(soak.Event{Kind: soak.KindSkip, Who: who, Fault: f.Kind, Err: canReset.Error()})
			return
		}
		r.mu.Lock()
		port := r.nodes[f.Target].addr[strings.LastIndexByte(r.nodes[f.Target].addr, ':')+1:]
		r.mu.Unlock()
		r.h.Add(soak.Event{Kind: soak.KindFault, Who: who, Fault: f.Kind})
		// Both ends of every connection to the node's port.
		exec.Command("ss", "-K", "-t", "-n", "state", "established", "( dport = :"+port+" or sport = :"+port+" )").Run()
		return
	case soak.KillNode, soak.DrainNode:
		who := "node" + strconv.Itoa(f.Target+1)
		r.mu.Lock()
		n := r.nodes[f.Target]
		r.asked[who] = true
		r.mu.Unlock()
		r.h.Add(soak.Event{Kind: soak.KindFault, Who: who, Fault: f.Kind})
		sig := syscall.SIGKILL
		if f.Kind == soak.DrainNode {
			sig = syscall.SIGTERM
		}
		n.stop(t, sig, 30*time.Second)
		heals.Add(1)
		go func() {
			defer heals.Done()
			sleepCtx(ctx, f.Hold)
			args := strings.Fields(n.what)
			nn := &node{proc: launch(t, "msg=serving", true, args...), addr: n.addr}
			nn.wait(t, 40*time.Second)
			r.mu.Lock()
			r.nodes[f.Target] = nn
			r.mu.Unlock()
			r.restarted(who, f.Kind)
		}()
		return
	case soak.KillNATS:
		who := "nats" + strconv.Itoa(f.Target+1)
		r.mu.Lock()
		s := r.nats[f.Target]
		r.asked[who] = true
		r.mu.Unlock()
		r.h.Add(soak.Event{Kind: soak.KindFault, Who: who, Fault: f.Kind})
		s.stop(t, syscall.SIGKILL, 30*time.Second)
		heals.Add(1)
		go func() {
			defer heals.Done()
			sleepCtx(ctx, f.Hold)
			ns := &natsServer{name: s.name, url: s.url, proc: launch(t, s.marker, false, strings.Fields(s.what)...)}
			ns.wait(t, 70*time.Second)
			r.mu.Lock()
			r.nats[f.Target] = ns
			r.mu.Unlock()
			r.restarted(who, f.Kind)
		}()
		return
	}
	// A demo switch on one node.
	who := "node" + strconv.Itoa(f.Target+1)
	r.mu.Lock()
	n := r.nodes[f.Target]
	r.mu.Unlock()
	r.h.Add(soak.Event{Kind: soak.KindFault, Who: who, Fault: f.Kind})
	if err := postSwitch(n, `{"`+f.Kind+`":true}`); err != nil {
		t.Errorf("%s on %s: %v", f.Kind, who, err)
		return
	}
	if f.Kind == soak.Restart {
		return
	}
	heals.Add(1)
	go func() {
		defer heals.Done()
		sleepCtx(ctx, f.Hold)
		if err := postSwitch(n, `{"`+f.Kind+`":false}`); err != nil {
			t.Errorf("%s off on %s: %v", f.Kind, who, err)
		}
		r.h.Add(soak.Event{Kind: soak.KindHeal, Who: who, Fault: f.Kind})
	}()
}

// restarted records that the nemesis brought process who back after
// kind: its next samples are a new incarnation, and it may be sampled
// (and found gone) again.
func (r *soakRun) restarted(who, kind string) {
	r.mu.Lock()
	delete(r.asked, who)
	if r.gen == nil {
		r.gen = map[string]int{}
	}
	r.gen[who]++
	r.mu.Unlock()
	r.h.Add(soak.Event{Kind: soak.KindHeal, Who: who, Fault: kind})
}

// ssWorks says whether ss -K can reset connections here (root and a
// kernel with SOCK_DESTROY); the error says why not.
func ssWorks() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		return err
	}
	defer s.Close()
	if out, err := exec.Command("ss", "-K", "-t", "-n", "state", "established", "( dport = :"+port+" )").CombinedOutput(); err != nil {
		return fmt.Errorf("ss -K: %v: %s", err, strings.TrimSpace(string(out)))
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.New("ss -K destroyed nothing (no SOCK_DESTROY in this kernel?)")
	}
	return nil
}

// blackholeTag marks the soak's iptables rules, so a run removes what a
// crashed one left.
const blackholeTag = "wsready-soak-blackhole"

// blackhole inserts (op -I) or deletes (-D) the rules that drop every
// packet to and from a loopback port: a node that stays up but whose
// connections carry nothing, both ways (a dead NAT, a cut cable). Only
// loopback (-i lo) and only that port: nothing else on the host is
// touched.
func blackhole(op, port string) error {
	for _, dir := range []string{"--dport", "--sport"} {
		out, err := exec.Command("iptables", "-w", "5", op, "INPUT", "-i", "lo", "-p", "tcp", dir, port,
			"-m", "comment", "--comment", blackholeTag, "-j", "DROP").CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables %s: %v: %s", op, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// removeBlackholes deletes every rule blackhole made (of this run or a
// crashed one).
func removeBlackholes() {
	out, err := exec.Command("iptables", "-w", "5", "-S", "INPUT").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, blackholeTag) || !strings.HasPrefix(line, "-A INPUT ") {
			continue
		}
		args := strings.Fields(strings.Replace(line, "-A INPUT ", "-D INPUT ", 1))
		for i, a := range args { // -S quotes the comment: "wsready-soak-blackhole"
			args[i] = strings.Trim(a, `"`)
		}
		exec.Command("iptables", append([]string{"-w", "5"}, args...)...).Run()
	}
}

// blackholeWorks says whether this process may add iptables rules (root
// with iptables); the error says why not. It clears a crashed run's rules.
func blackholeWorks() error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return errors.New("iptables is not installed")
	}
	removeBlackholes()
	if out, err := exec.Command("iptables", "-w", "5", "-S", "INPUT").CombinedOutput(); err != nil {
		return fmt.Errorf("iptables -S: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// rssOf is a process's resident set in bytes, and whether it is alive.
func rssOf(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	alive := true
	var rss int64
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "State:" && (f[1] == "Z" || f[1] == "X"):
			alive = false
		case len(f) >= 2 && f[0] == "VmRSS:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			rss = kb << 10
		}
	}
	return rss, alive
}

// metricValue reads one unlabelled gauge from a Prometheus text page; 0
// when it cannot.
func metricValue(hc *http.Client, url, name string) int64 {
	resp, err := hc.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(f)
			}
		}
	}
	return 0
}

// sleepCtx sleeps d unless ctx ends first (false then).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// The blackhole drops both ways and is lifted without a trace.
func TestSoakBlackholeDropsAndLifts(t *testing.T) {
	if os.Getenv("WSREADY_SOAK") != "1" {
		t.Skip("with the soak (WSREADY_SOAK=1): it changes the host's iptables rules on loopback")
	}
	if err := blackholeWorks(); err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); b := make([]byte, 1); c.Read(b); c.Write(b) }()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	echo := func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 500*time.Millisecond)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Write([]byte{7}); err != nil {
			return err
		}
		_, err = c.Read(make([]byte, 1))
		return err
	}
	if err := echo(); err != nil {
		t.Fatalf("before the blackhole: %v", err)
	}
	// An established connection goes dark too.
	open, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := blackhole("-I", port); err != nil {
		t.Fatal(err)
	}
	defer removeBlackholes()
	if err := echo(); err == nil {
		t.Fatal("a new connection got through the blackhole")
	}
	open.SetDeadline(time.Now().Add(500 * time.Millisecond))
	open.Write([]byte{1})
	if _, err := open.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an open connection through the blackhole: %v, want silence", err)
	}
	if err := blackhole("-D", port); err != nil {
		t.Fatal(err)
	}
	if err := echo(); err != nil {
		t.Fatalf("after the blackhole was lifted: %v", err)
	}
	out, _ := exec.Command("iptables", "-S", "INPUT").Output()
	if strings.Contains(string(out), blackholeTag) {
		t.Fatalf("rules left behind:\n%s", out)
	}
}

// A process the sampler finds gone is a crash only if the nemesis neither
// stopped it nor brought it back since the sampler's snapshot: a kill
// between the snapshot and the look (a seed once reported "nats2: exited
// unasked" 2.6 s after the nemesis killed it) is not one.
func TestGoneUnaskedAfterTheSnapshot(t *testing.T) {
	r := &soakRun{asked: map[string]bool{}, gen: map[string]int{}}
	snap := r.gen["nats2"]
	if !r.goneUnasked("nats2", snap) {
		t.Fatal("a process gone with no kill asked was not a crash")
	}
	r.asked["nats2"] = true // the nemesis kills it after the snapshot
	if r.goneUnasked("nats2", snap) {
		t.Fatal("a process the nemesis killed after the snapshot counted as a crash")
	}
	delete(r.asked, "nats2") // and brings it back before the look (restarted)
	r.gen["nats2"]++
	if r.goneUnasked("nats2", snap) {
		t.Fatal("a process the nemesis restarted after the snapshot counted as a crash")
	}
	if !r.goneUnasked("nats2", r.gen["nats2"]) {
		t.Fatal("the new incarnation gone unasked was not a crash")
	}
}
