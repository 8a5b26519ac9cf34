//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// The HTTP transport's memory is bounded: wsready serve with its defaults
// takes three floods of 1,000 concurrent POST /ws/send, each a 1 MiB body
// of 16 near-64 KiB frames (one session in the first round, ten new ones
// in each of the next two), and its resident memory stays within 100 MB
// of what it was idle. What the bounds refuse is 429 with Retry-After;
// the rest is taken (204).
func TestServeHTTPTransportMemoryIsBoundedUnderAPOSTFlood(t *testing.T) {
	const (
		posts    = 1000
		rounds   = 3
		headroom = 100 << 20 // bytes of RSS over idle
	)
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("reads VmRSS from /proc")
	}
	addr := freeAddr(t)
	n := &node{proc: launch(t, "msg=serving", true, "serve", "-addr", addr), addr: addr}
	n.wait(t, 40*time.Second)
	pid := n.cmd.Process.Pid
	base := "http://" + addr + "/ws"
	// Start-up settles: the idle figure is one two looks 100 ms apart agree on.
	idle := vmRSS(t, pid)
	poll.UntilEvery(5*time.Second, 100*time.Millisecond, func() bool {
		was := idle
		idle = vmRSS(t, pid)
		return idle == was
	})

	body := floodBody(t)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, MaxConnsPerHost: 0}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()

	var peak atomic.Int64
	peak.Store(idle)
	for round := range rounds {
		sessions := 1
		if round > 0 {
			sessions = 10
		}
		ids := make([]string, sessions)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var streams sync.WaitGroup
		for i := range ids {
			ids[i] = newHTTPSession(t, hc, base)
			streams.Add(1)
			go func() { // the session's stream, drained (its pongs and errors)
				defer streams.Done()
				drainStream(ctx, base, ids[i])
			}()
		}
		// Sample RSS while the flood runs; past the bound, stop the flood:
		// the test has failed, and an unbounded server must not take the
		// machine with it.
		over := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				rss := vmRSSNoFail(pid)
				if rss > peak.Load() {
					peak.Store(rss)
				}
				if rss > idle+headroom {
					close(over)
					cancel()
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		var ok, busy, busyNoRetry, other atomic.Int64
		var otherWhat sync.Map
		var wg sync.WaitGroup
		for i := range posts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/send?session="+ids[i%sessions], bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					other.Add(1)
					otherWhat.Store("error", err.Error())
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusNoContent:
					ok.Add(1)
				case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
					busy.Add(1)
				case resp.StatusCode == http.StatusTooManyRequests:
					busyNoRetry.Add(1)
				default:
					other.Add(1)
					otherWhat.Store(resp.StatusCode, resp.Status)
				}
			}()
		}
		wg.Wait()
		cancel()
		<-sampled
		streams.Wait()
		select {
		case <-over:
			t.Fatalf("round %d: RSS %d MB, idle %d MB: more than %d MB over idle (flood stopped)", round, peak.Load()>>20, idle>>20, headroom>>20)
		default:
		}
		t.Logf("round %d (%d sessions): %d taken, %d refused with 429 and Retry-After; peak RSS %d MB, idle %d MB",
			round, sessions, ok.Load(), busy.Load(), peak.Load()>>20, idle>>20)
		if busyNoRetry.Load() > 0 || other.Load() > 0 {
			var what []string
			otherWhat.Range(func(k, v any) bool { what = append(what, v.(string)); return true })
			t.Fatalf("round %d: %d 429s without Retry-After, %d other answers (%s)", round, busyNoRetry.Load(), other.Load(), strings.Join(what, "; "))
		}
		if ok.Load() == 0 || busy.Load() == 0 || ok.Load()+busy.Load() != posts {
			t.Fatalf("round %d: %d taken and %d refused of %d", round, ok.Load(), busy.Load(), posts)
		}
	}
	if p := peak.Load(); p > idle+headroom {
		t.Fatalf("peak RSS %d MB, idle %d MB", p>>20, idle>>20)
	}
}

// floodBody is a 1 MiB send body: a JSON array of 16 probe frames, each
// padded with JSON whitespace to just under 64 KiB.
func floodBody(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 16 {
		if i > 0 {
			b.WriteByte(',')
		}
		f := `{"type":"probe","id":` + strconv.Itoa(i+1)
		b.WriteString(f)
		b.WriteString(strings.Repeat(" ", protocol.MaxFrameBytes-len(f)-64))
		b.WriteByte('}')
	}
	b.WriteByte(']')
	if b.Len() > 16*protocol.MaxFrameBytes || b.Len() < 15*protocol.MaxFrameBytes {
		t.Fatalf("body of %d bytes", b.Len())
	}
	return b.Bytes()
}

// newHTTPSession makes an HTTP-transport session and returns its id.
func newHTTPSession(t *testing.T, hc *http.Client, base string) string {
	t.Helper()
	resp, err := hc.Post(base+"/session", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Session string `json:"session"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK || a.Session == "" {
		t.Fatalf("session: %s, %v", resp.Status, err)
	}
	return a.Session
}

// drainStream reads the session's stream until ctx ends.
func drainStream(ctx context.Context, base, id string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse?session="+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
}

// vmRSS is the process's resident set (VmRSS in /proc/PID/status), in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := readVmRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func vmRSSNoFail(pid int) int64 {
	n, _ := readVmRSS(pid)
	return n
}

func readVmRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}
