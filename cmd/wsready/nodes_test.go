//go:build !js

package main

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/internal/stages"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// wsreadyBin builds the command once per test run.
func wsreadyBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "wsready-bin")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "wsready")
		args := []string{"build", "-o", binPath}
		if os.Getenv("WSREADY_BIN_RACE") == "1" { // the soak's -race variant
			args = append(args, "-race")
		}
		var out []byte
		if out, binErr = exec.Command("go", append(args, ".")...).CombinedOutput(); binErr != nil {
			binErr = &buildError{out: string(out), err: binErr}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "build: " + e.err.Error() + "\n" + e.out }

// freeAddr is a loopback address nothing listens on now and that no
// earlier call in this test binary handed out: a port is free again once
// its listener closes, and the kernel may give the same one to the next
// call before the first process has bound it (seen in CI: two NATS
// servers of one cluster given the same client port, the second exiting
// at once).
func freeAddr(t *testing.T) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("100 free loopback addresses in a row had been handed out before")
	return ""
}

// handedOut is every address freeAddr has returned (a few hundred per run).
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// proc is one wsready process the test started.
type proc struct {
	what   string
	marker string
	cmd    *exec.Cmd
	ready  chan bool // true once the marker was printed, false if it exited first
	done   chan error

	mu    sync.Mutex
	lines []string // the last procTail lines it printed (on the stream read)
}

// launch runs wsready with args; wait then waits for a line holding marker
// on its stderr (or stdout). The process is killed when the test ends.
func launch(t *testing.T, marker string, stderr bool, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(wsreadyBin(t), args...)
	var out io.Reader
	var err error
	if stderr {
		out, err = cmd.StderrPipe()
	} else {
		out, err = cmd.StdoutPipe()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{what: strings.Join(args, " "), marker: marker, cmd: cmd, ready: make(chan bool, 1), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			p.note(sc.Text())
			if !ok && strings.Contains(sc.Text(), marker) {
				ok = true
				p.ready <- true
			}
		}
		if !ok {
			p.ready <- false
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("the last lines of wsready %s:\n%s", p.what, strings.Join(p.tail(), "\n"))
		}
	})
	return p
}

// procTail is how many of its last output lines a proc keeps, shown when
// the test fails.
const procTail = 40

func (p *proc) note(line string) {
	if h := lineHook.Load(); h != nil {
		(*h)(p, line)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lines) == procTail {
		p.lines = p.lines[1:]
	}
	p.lines = append(p.lines, line)
}

func (p *proc) tail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// wait waits up to within for the process's marker line.
func (p *proc) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case ok := <-p.ready:
		if !ok {
			t.Fatalf("wsready %s exited before printing %q", p.what, p.marker)
		}
	case <-time.After(within):
		t.Fatalf("wsready %s did not print %q within %v", p.what, p.marker, within)
	}
}

// stop sends sig and waits for the process to exit.
func (p *proc) stop(t *testing.T, sig syscall.Signal, within time.Duration) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		p.done <- nil // for the cleanup
	case <-time.After(within):
		t.Fatalf("wsready %s still running %v after %v", p.what, within, sig)
	}
}

// node is one wsready serve process.
type node struct {
	*proc
	addr string
}

// startNode runs wsready serve on addr with args and waits until it serves.
func startNode(t *testing.T, addr string, args ...string) *node {
	t.Helper()
	n := &node{proc: launch(t, "msg=serving", true, append([]string{"serve", "-addr", addr, "-ping", "1s"}, args...)...), addr: addr}
	n.wait(t, 40*time.Second) // -nats waits up to 30 s for JetStream
	return n
}

func (n *node) url() string { return "ws://" + n.addr + "/ws" }

// natsServer is one wsready nats process, one server of a NATS cluster.
type natsServer struct {
	*proc
	name, url string
}

// startNATSCluster runs n wsready nats processes clustered on loopback,
// each storing in a directory of its own under dir and given the routes
// to all, and waits until each says its JetStream is ready (which needs a
// majority of them up: all are started before the first wait), then
// until the cluster places a stream on all n.
func startNATSCluster(t *testing.T, dir string, n int) []*natsServer {
	t.Helper()
	clients, routes := make([]string, n), make([]string, n)
	for i := range n {
		clients[i], routes[i] = freeAddr(t), freeAddr(t)
	}
	out := make([]*natsServer, n)
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		out[i] = &natsServer{name: name, url: "nats://" + clients[i], proc: launch(t, "JetStream cluster wsready-test ready", false,
			"nats", "-addr", clients[i], "-data", filepath.Join(dir, name), "-name", name,
			"-cluster", "wsready-test", "-cluster-addr", routes[i], "-routes", strings.Join(routes, ","))}
	}
	for _, s := range out {
		s.wait(t, 70*time.Second) // wsready nats says it within its 60 s wait
	}
	urls := make([]string, n)
	for i, s := range out {
		urls[i] = s.url
	}
	waitPlacement(t, urls, n)
	return out
}

// subscriber is a stage 7 native client that records one topic's seqs
// and their data.
type subscriber struct {
	c    *native.Client
	mu   sync.Mutex
	seqs []int64
	data []string // data[i] arrived with seqs[i]
	lost []client.ContinuityLost
}

func (s *subscriber) snapshot() ([]int64, []client.ContinuityLost) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.seqs...), append([]client.ContinuityLost(nil), s.lost...)
}

// dataAt is the data delivered with seq, if it was.
func (s *subscriber) dataAt(seq int64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.seqs {
		if q == seq {
			return s.data[i], true
		}
	}
	return "", false
}

// delivered is the data of every update delivered, in order.
func (s *subscriber) delivered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.data...)
}

func (s *subscriber) last() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seqs) == 0 {
		return 0
	}
	return s.seqs[len(s.seqs)-1]
}

func stage7(seed uint64) *client.Config {
	cfg := stages.Must(7)
	cfg.Rand = rand.New(rand.NewPCG(seed, 12)).Float64
	cfg.Policy = client.FullJitter{Base: 100 * time.Millisecond, Cap: 2 * time.Second}
	cfg.SubscribeTimeout = 500 * time.Millisecond
	cfg.ConnectTimeout = 3 * time.Second
	return cfg
}

// subscribe dials urls (the first, then the others in turn) and subscribes
// to topic from since.
func subscribe(t *testing.T, seed uint64, urls []string, topic string, since *int64) *subscriber {
	t.Helper()
	s := &subscriber{}
	c, err := native.Dial(context.Background(), urls[0], &native.Options{Config: stage7(seed), URLs: urls[1:],
		OnContinuityLost: func(l client.ContinuityLost) { s.mu.Lock(); s.lost = append(s.lost, l); s.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Subscribe(context.Background(), topic, since, func(u client.Update) {
		s.mu.Lock()
		s.seqs = append(s.seqs, u.Seq)
		s.data = append(s.data, string(u.Data))
		s.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	s.c = c
	return s
}

// publisher publishes to topic every interval until stop (at most
// maxPublishes times), never retrying a failed publish with the same data;
// it records each acknowledged publish.
type publisher struct {
	c      *native.Client
	stopc  chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	acked  int64 // the highest seq acknowledged
	acks   []ack
	fails  int
	failed []string // the data of each publish that failed (it may have been stored all the same)
}

// ack is one acknowledged publish: the seq the server answered, the data
// sent, when it was sent and when the answer came.
type ack struct {
	seq          int64
	data         string
	sent, answer time.Time
}

// maxPublishes bounds a publisher's loop (50/s for over 3 minutes).
const maxPublishes = 10000

func startPublisher(t *testing.T, url, topic string, every time.Duration) *publisher {
	t.Helper()
	c, err := native.Dial(context.Background(), url, &native.Options{Config: stage7(999)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	p := &publisher{c: c, stopc: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := 0; n < maxPublishes; n++ {
			select {
			case <-p.stopc:
				return
			case <-tick.C:
			}
			data := `{"n":` + strconv.Itoa(n) + `}`
			sent := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			seq, err := c.Publish(ctx, topic, []byte(data))
			cancel()
			p.mu.Lock()
			if err != nil {
				p.fails++
				if len(p.failed) < maxPublishes {
					p.failed = append(p.failed, data)
				}
			} else {
				p.acked = max(p.acked, seq)
				p.acks = append(p.acks, ack{seq: seq, data: data, sent: sent, answer: time.Now()})
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// progress is the highest seq acknowledged so far and how many publishes
// failed.
func (p *publisher) progress() (acked int64, fails int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked, p.fails
}

// delivering waits up to d for every subscriber to be READY and to have
// delivered the highest seq the publisher had acknowledged when it began
// (a publish acknowledged after it: one at least, so the publisher is
// live too).
func delivering(subs []*subscriber, pub *publisher, d time.Duration) bool {
	from, _ := pub.progress()
	return eventually(d, func() bool {
		a, _ := pub.progress()
		if a <= from {
			return false
		}
		for _, s := range subs {
			if !s.c.State().Ready || s.last() < a {
				return false
			}
		}
		return true
	})
}

// unacknowledged is the data of every publish that failed so far.
func (p *publisher) unacknowledged() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.failed...)
}

// acknowledged is every acknowledged publish so far.
func (p *publisher) acknowledged() []ack {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ack(nil), p.acks...)
}

// finish stops publishing and publishes once more until it is acknowledged,
// returning that seq: the topic's last.
func (p *publisher) finish(t *testing.T, topic string) int64 {
	t.Helper()
	close(p.stopc)
	p.wg.Wait()
	var last int64
	tries := 0
	// Retries a node in another process, 200 ms apart, 50 times at most
	// (each try waits up to 2 s for its answer).
	poll.UntilEvery(2*time.Minute, 200*time.Millisecond, func() bool {
		if tries == 50 {
			return true
		}
		data := `{"last":` + strconv.Itoa(tries) + `}` // each try its own: one that failed may be stored all the same
		tries++
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		seq, err := p.c.Publish(ctx, topic, []byte(data))
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.failed = append(p.failed, data)
			return false
		}
		p.acked = max(p.acked, seq)
		p.acks = append(p.acks, ack{seq: seq, data: data, sent: sent, answer: time.Now()})
		last = seq
		return true
	})
	if last == 0 {
		t.Fatal("the last publish was never acknowledged")
	}
	return last
}

// eventually polls cond every 20 ms until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	return poll.UntilEvery(d, 20*time.Millisecond, cond)
}

// freeAddr never hands out one address twice, though the kernel offers a
// closed listener's port again (without the check, 500 calls here gave
// 17 and 19 repeats in two tries).
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		a := freeAddr(t)
		if seen[a] {
			t.Fatalf("freeAddr handed out %s twice", a)
		}
		seen[a] = true
	}
}
