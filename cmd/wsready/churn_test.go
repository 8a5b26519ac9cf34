//go:build !js

package main

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/protocol"
)

// The subscribe churn probe: the real wsready serve (built without -race,
// as every test here builds it), on its embedded JetStream (-data) and on
// an external one (wsready nats), driven by one WebSocket sending
// subscribe then unsubscribe for 10 topics as fast as it can, beside a
// stream of short connections doing the same three times each. Each
// process's RSS (/proc/PID/status) must stay within 20 MB of its idle
// figure, and the server's goroutines (go_goroutines on /metrics) within
// churnGoroutines of idle. Before the fix, 4 s of the loop took serve -data
// from 27 to 364 MB and 21,696 goroutines (a JetStream consumer per
// subscribe, each left for JetStream's 30 s inactivity limit), and an
// external NATS server from 21 to 146 MB. CI runs 15 s of it per backend;
// WSREADY_LONG=1 runs 60 s.
const (
	churnRSS        = 20 << 20 // bytes over idle
	churnGoroutines = 300      // over idle: the short connections' own, a few at a time
	churnTopics     = 10
)

func churnFor() time.Duration {
	if os.Getenv("WSREADY_LONG") != "" {
		return 60 * time.Second
	}
	return 15 * time.Second
}

func TestSubscribeChurnKeepsMemoryBounded(t *testing.T) {
	t.Run("data", func(t *testing.T) {
		addr := freeAddr(t)
		n := startNode(t, addr, "-data", t.TempDir())
		runChurn(t, n, nil)
	})
	t.Run("nats", func(t *testing.T) {
		natsAddr := freeAddr(t)
		ns := launch(t, "nats: JetStream at", false, "nats", "-addr", natsAddr, "-data", filepath.Join(t.TempDir(), "nats"))
		ns.wait(t, 30*time.Second)
		n := startNode(t, freeAddr(t), "-nats", "nats://"+natsAddr)
		runChurn(t, n, ns)
	})
}

// churnCounts is what the server answered.
type churnCounts struct {
	mu                                  sync.Mutex
	subscribed, limited, other, refused int
	codes                               map[string]int // error codes other than rate_limited
}

func (c *churnCounts) note(m protocol.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case m.Type == protocol.TypeSubscribed:
		c.subscribed++
	case m.Type == protocol.TypeError && m.Error != nil && m.Error.Code == protocol.ErrRateLimited:
		c.limited++
	case m.Type == protocol.TypeError:
		c.other++
		if c.codes == nil {
			c.codes = map[string]int{}
		}
		if m.Error != nil {
			c.codes[m.Error.Code]++
		}
	}
}

func runChurn(t *testing.T, n *node, ns *proc) {
	idle := procRSS(t, n.proc)
	idleG := goroutines(t, n.addr)
	var idleNATS int64
	if ns != nil {
		idleNATS = procRSS(t, ns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), churnFor())
	defer cancel()
	var long, short churnCounts
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); churnOne(ctx, n.url(), &long) }()
	go func() { defer wg.Done(); churnShort(ctx, n.url(), &short) }()

	var most, mostNATS int64
	mostG := 0
	for tick := time.NewTicker(250 * time.Millisecond); ctx.Err() == nil; {
		select {
		case <-ctx.Done():
		case <-tick.C:
			most = max(most, procRSS(t, n.proc))
			mostG = max(mostG, goroutines(t, n.addr))
			if ns != nil {
				mostNATS = max(mostNATS, procRSS(t, ns))
			}
		}
	}
	wg.Wait()
	t.Logf("serve: RSS idle %d KB, at most %d KB; goroutines idle %d, at most %d", idle>>10, most>>10, idleG, mostG)
	if ns != nil {
		t.Logf("nats: RSS idle %d KB, at most %d KB", idleNATS>>10, mostNATS>>10)
	}
	t.Logf("one connection: %d subscribed, %d rate_limited, %d other errors %v; short connections: %d subscribed, %d rate_limited, %d other errors %v, %d refused handshakes",
		long.subscribed, long.limited, long.other, long.codes, short.subscribed, short.limited, short.other, short.codes, short.refused)
	if most-idle > churnRSS {
		t.Errorf("serve's RSS went from %d to %d KB under subscribe churn: more than %d MB over idle", idle>>10, most>>10, churnRSS>>20)
	}
	if mostG-idleG > churnGoroutines {
		t.Errorf("serve's goroutines went from %d to %d under subscribe churn", idleG, mostG)
	}
	if ns != nil && mostNATS-idleNATS > churnRSS {
		t.Errorf("the NATS server's RSS went from %d to %d KB under subscribe churn: more than %d MB over idle", idleNATS>>10, mostNATS>>10, churnRSS>>20)
	}
	if long.limited == 0 || long.subscribed == 0 {
		t.Errorf("one connection's churn: %d subscribed, %d rate_limited; want both (the per-connection limit)", long.subscribed, long.limited)
	}
	if short.subscribed == 0 || long.other+short.other > 0 {
		t.Errorf("short connections: %d subscribed; errors other than rate_limited: %v and %v (unavailable: the history backend overwhelmed)",
			short.subscribed, long.codes, short.codes)
	}
}

// churnOne subscribes and unsubscribes churnTopics topics over one
// WebSocket as fast as it can until ctx ends (at most a million rounds:
// about 3,000 a second here).
func churnOne(ctx context.Context, url string, counts *churnCounts) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	read := make(chan struct{})
	go func() { defer close(read); churnRead(ctx, ws, counts, -1) }()
	for round := 0; round < 1_000_000 && ctx.Err() == nil; round++ {
		if churnRound(ctx, ws) != nil {
			break
		}
	}
	ws.CloseNow()
	<-read
}

// churnShort opens connection after connection, each doing three rounds
// and reading their answers, until ctx ends; a refused handshake (the
// server's per-address rate) is waited out.
func churnShort(ctx context.Context, url string, counts *churnCounts) {
	for ctx.Err() == nil {
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			continue
		}
		ok := true
		for range 3 {
			if churnRound(ctx, ws) != nil {
				ok = false
				break
			}
		}
		if ok && !churnRead(ctx, ws, counts, 3*2*churnTopics) {
			counts.mu.Lock()
			counts.refused++
			counts.mu.Unlock()
			time.Sleep(50 * time.Millisecond) // real time: a refusal's retry-after, on the server's clock, is about this
		}
		ws.CloseNow()
	}
}

func churnRound(ctx context.Context, ws *websocket.Conn) error {
	for _, typ := range []protocol.Type{protocol.TypeSubscribe, protocol.TypeUnsubscribe} {
		for i := range churnTopics {
			b := protocol.Encode(protocol.Message{Type: typ, Topic: "churn" + strconv.Itoa(i)})
			if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// churnRead counts the answers on ws until n have come (subscribed,
// unsubscribed or an error; -1: until it ends); false if it ended first.
func churnRead(ctx context.Context, ws *websocket.Conn, counts *churnCounts, n int) bool {
	ws.SetReadLimit(1 << 20)
	for got := 0; n < 0 || got < n; {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return false
		}
		m, err := protocol.Decode(b)
		if err != nil {
			continue
		}
		switch m.Type {
		case protocol.TypeSubscribed, protocol.TypeUnsubscribed, protocol.TypeError:
			counts.note(m)
			got++
		}
	}
	return true
}

// procRSS is p's resident set, in bytes (vmRSS, httpmem_test.go).
func procRSS(t *testing.T, p *proc) int64 {
	t.Helper()
	return vmRSS(t, p.cmd.Process.Pid)
}

// goroutines is go_goroutines from the node's /metrics.
func goroutines(t *testing.T, addr string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("go_goroutines %q: %v", v, err)
			}
			return int(n)
		}
	}
	t.Fatal(errors.New("no go_goroutines on /metrics"))
	return 0
}
