//go:build !js

package main

import (
	"bufio"
	"context"
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
		var out []byte
		if out, binErr = exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); binErr != nil {
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

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// node is one wsready serve process.
type node struct {
	addr string
	cmd  *exec.Cmd
	done chan error
}

// startNode runs wsready serve on addr with args and waits until it serves.
func startNode(t *testing.T, addr string, args ...string) *node {
	t.Helper()
	cmd := exec.Command(wsreadyBin(t), append([]string{"serve", "-addr", addr}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{addr: addr, cmd: cmd, done: make(chan error, 1)}
	serving := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), "msg=serving") {
				ok = true
				serving <- true
			}
		}
		if !ok {
			serving <- false
		}
		n.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-n.done })
	select {
	case ok := <-serving:
		if !ok {
			t.Fatalf("wsready serve %v exited before serving", args)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("wsready serve %v did not serve within 20s", args)
	}
	return n
}

func (n *node) url() string { return "ws://" + n.addr + "/ws" }

// stop sends sig and waits for the process to exit.
func (n *node) stop(t *testing.T, sig syscall.Signal, within time.Duration) {
	t.Helper()
	n.cmd.Process.Signal(sig)
	select {
	case <-n.done:
		n.done <- nil // for the cleanup
	case <-time.After(within):
		t.Fatalf("node %s still running %v after %v", n.addr, within, sig)
	}
}

// subscriber is a stage 7 native client that records one topic's seqs.
type subscriber struct {
	c    *native.Client
	mu   sync.Mutex
	seqs []int64
	lost []client.ContinuityLost
}

func (s *subscriber) snapshot() ([]int64, []client.ContinuityLost) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.seqs...), append([]client.ContinuityLost(nil), s.lost...)
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
	cfg := client.MustStage(7)
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
		s.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	s.c = c
	return s
}

// publisher publishes to topic every interval until stop, retrying on
// errors; it records the highest seq acknowledged.
type publisher struct {
	c     *native.Client
	stopc chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	acked int64
	fails int
}

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
		for n := 0; ; n++ {
			select {
			case <-p.stopc:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			seq, err := c.Publish(ctx, topic, []byte(`{"n":`+strconv.Itoa(n)+`}`))
			cancel()
			p.mu.Lock()
			if err != nil {
				p.fails++
			} else {
				p.acked = max(p.acked, seq)
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// finish stops publishing and publishes once more until it is acknowledged,
// returning that seq: the topic's last.
func (p *publisher) finish(t *testing.T, topic string) int64 {
	t.Helper()
	close(p.stopc)
	p.wg.Wait()
	for i := 0; i < 50; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		seq, err := p.c.Publish(ctx, topic, []byte(`{"last":true}`))
		cancel()
		if err == nil {
			return seq
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the last publish was never acknowledged")
	return 0
}

// eventually polls cond every 20 ms until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
