//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/internal/fetch"
)

// child is a process this harness started.
type child struct {
	cmd  *exec.Cmd
	addr string        // what it printed first: its listen or stats address
	done chan struct{} // closed when it has exited
}

// childStart bounds how long a child may take to print its address.
const childStart = 20 * time.Second

// startChild runs exe with args and waits for its first stdout line, whose
// last word is its address.
func startChild(exe string, args ...string) (*child, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", exe, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", exe, err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out) // drain until it exits
		_ = cmd.Wait()
		close(c.done)
	}()
	select {
	case l, ok := <-line:
		f := strings.Fields(l)
		if !ok || len(f) == 0 {
			c.kill()
			return nil, fmt.Errorf("failed to start %s %v: it printed no address", exe, args)
		}
		c.addr = f[len(f)-1]
		return c, nil
	case <-time.After(childStart):
		c.kill()
		return nil, fmt.Errorf("failed to start %s %v: no address within %v", exe, args, childStart)
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// stop interrupts the child and waits for it, killing it after 15 s.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		c.kill()
	}
}

// statsClient reads the children's stats endpoints: short timeouts, kept
// connections (a new connection per sample would cost the server more).
var statsClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

func getJSON(url string, v any) error {
	return fetch.JSON(context.Background(), statsClient, url, v) // statsClient's Timeout bounds it
}

// readRSS is a process's resident set in bytes: VmRSS in /proc/PID/status.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("failed to read the RSS of %d: %w", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				break
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("failed to read the RSS of %d: no VmRSS line in kB", pid)
}

// userHZ is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on Linux
// whatever the kernel's tick (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// readCPU is the CPU time (user + system) a process has used, from
// /proc/PID/stat: the figure getrusage gives, to 10 ms.
func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("failed to read the CPU time of %d: %w", pid, err)
	}
	return parseStat(pid, b)
}

// parseStat reads utime + stime from a /proc/PID/stat line.
func parseStat(pid int, b []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("failed to read the CPU time of %d: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("failed to read the CPU time of %d: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("failed to read the CPU time of %d: %w", pid, err)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// Series summarises samples taken at a steady pace through a window.
type Series struct {
	Mean float64 `json:"mean"`
	Peak float64 `json:"peak"`
	Min  float64 `json:"min"`
	End  float64 `json:"end"` // the last sample
	N    int     `json:"n"`   // samples
}

func summarise(xs []float64) Series {
	if len(xs) == 0 {
		return Series{}
	}
	s := Series{Peak: xs[0], Min: xs[0], End: xs[len(xs)-1], N: len(xs)}
	var sum float64
	for _, x := range xs {
		sum += x
		s.Peak = max(s.Peak, x)
		s.Min = min(s.Min, x)
	}
	s.Mean = sum / float64(len(xs))
	return s
}

// Window is what sampling a server through a window found.
type Window struct {
	Seconds    float64 `json:"seconds"`
	RSS        Series  `json:"rssBytes"`   // every sample period, from /proc
	Goroutines Series  `json:"goroutines"` // every goroutine period, from the server
	// GoroutinesPeak is the server's own high-water mark through the
	// window (it looks every millisecond: a burst of short-lived
	// goroutines can fall between two samples from outside); the sampled
	// peak where the server keeps none.
	GoroutinesPeak float64 `json:"goroutinesPeak"`
	CPUSeconds     float64 `json:"cpuSeconds"` // user + system through the window
}

// sampler reads one server process.
type sampler struct {
	pid int
	// goroutines reads the server's goroutine count now and its most since
	// the previous read (the count itself where it keeps no high-water
	// mark); nil: not sampled.
	goroutines func() (now, peak int, err error)
}

func (s sampler) cpu() (time.Duration, error) { return readCPU(s.pid) }

// window samples the server's RSS every rssEvery and its goroutines every
// gEvery (a multiple of rssEvery) for d, and its CPU time at both ends.
// A sample that fails ends the window with the error.
func (s sampler) window(d, rssEvery, gEvery time.Duration) (Window, error) {
	c0, err := s.cpu()
	if err != nil {
		return Window{}, err
	}
	start := time.Now()
	maxSamples := int(d/rssEvery) + 2 // the loop's bound beside its deadline
	var rss, gs []float64
	hwm := math.NaN()
	t := time.NewTicker(rssEvery)
	defer t.Stop()
	every := max(1, int(gEvery/rssEvery))
	for i := 0; i < maxSamples; i++ {
		r, err := readRSS(s.pid)
		if err != nil {
			return Window{}, err
		}
		rss = append(rss, float64(r))
		if s.goroutines != nil && i%every == 0 {
			g, peak, err := s.goroutines()
			if err != nil {
				return Window{}, err
			}
			gs = append(gs, float64(g))
			// The first read's peak covers the time before the window.
			if i == 0 {
				peak = g
			}
			if math.IsNaN(hwm) || float64(peak) > hwm {
				hwm = float64(peak)
			}
		}
		if time.Since(start) >= d {
			break
		}
		<-t.C
	}
	c1, err := s.cpu()
	if err != nil {
		return Window{}, err
	}
	w := Window{Seconds: time.Since(start).Seconds(), RSS: summarise(rss), Goroutines: summarise(gs), CPUSeconds: (c1 - c0).Seconds()}
	if !math.IsNaN(hwm) {
		w.GoroutinesPeak = hwm
	}
	return w, nil
}

// benchGoroutines reads the goroutine count and the high-water mark from
// a /bench/stats endpoint.
func benchGoroutines(base string) func() (int, int, error) {
	return func() (int, int, error) {
		var s serverStats
		err := getJSON(base+"/bench/stats", &s)
		return s.Goroutines, s.PeakGoroutines, err
	}
}

// metricsGoroutines reads go_goroutines from a Prometheus /metrics page
// (wsready serve's).
func metricsGoroutines(base string) func() (int, int, error) {
	return func() (int, int, error) {
		resp, err := statsClient.Get(base + "/metrics")
		if err != nil {
			return 0, 0, fmt.Errorf("failed to get the metrics: %w", err)
		}
		defer resp.Body.Close()
		n, err := parseGoGoroutines(resp.Body)
		return n, n, err
	}
}

func parseGoGoroutines(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("failed to read go_goroutines: %w", err)
			}
			return int(f), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("failed to read the metrics: %w", err)
	}
	return 0, errors.New("failed to read the metrics: no go_goroutines")
}

// fleet is the client processes of one phase.
type fleet []*child

// startFleet starts client processes for n connections to url, at most
// 9,000 each; process i dials from 127.0.(1+i).(2+srcBase) and the next
// three addresses, so phases that give different srcBase never share a
// source address (and its ephemeral ports).
func startFleet(self, url, proto string, n, srcBase int, subscribe bool) (fleet, error) {
	return startFleetWith(self, n, srcBase, "-url", url, "-proto", proto, "-subscribe="+strconv.FormatBool(subscribe))
}

// startFleetWith is startFleet for any clients child flags (args): it
// adds -n, -conc and -src per process.
func startFleetWith(self string, n, srcBase int, args ...string) (fleet, error) {
	var f fleet
	for left, i := n, 0; left > 0; i++ {
		k := min(left, maxClientsPerProcess)
		var srcs []string
		for j := range 4 {
			srcs = append(srcs, fmt.Sprintf("127.0.%d.%d", 1+i, 2+srcBase+j))
		}
		c, err := startChild(self, append(append([]string{"clients"}, args...), "-n", strconv.Itoa(k), "-conc", "200",
			"-src", strings.Join(srcs, ","))...)
		if err != nil {
			f.stop()
			return nil, err
		}
		f = append(f, c)
		left -= k
	}
	return f, nil
}

func (f fleet) stats() (clientStats, error) {
	var sum clientStats
	for _, c := range f {
		var s clientStats
		if err := getJSON("http://"+c.addr+"/stats", &s); err != nil {
			return sum, err
		}
		sum.add(s)
	}
	return sum, nil
}

func (f fleet) stop() {
	var wg sync.WaitGroup
	for _, c := range f {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop() }()
	}
	wg.Wait()
}

// waitReady polls until n connections are subscribed (or, with subscribe
// off, connected) and returns the time taken; a failed dial, a refusal or a
// dropped connection ends it at once.
func (f fleet) waitReady(n int, subscribe bool, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		s, err := f.stats()
		if err != nil {
			return 0, err
		}
		got := s.Connected
		if subscribe {
			got = s.Subscribed
		}
		if got >= int64(n) {
			return time.Since(start), nil
		}
		if s.Failed > 0 || s.Dropped > 0 {
			return 0, fmt.Errorf("%d connections failed and %d dropped (%d of %d ready)", s.Failed, s.Dropped, got, n)
		}
		if time.Since(start) > within {
			return 0, fmt.Errorf("only %d of %d ready after %v", got, n, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort is a loopback port nothing listens on now (for wsready serve,
// which takes its address from -addr).
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("failed to find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startServe runs the built wsready binary's serve command on a free
// loopback port and waits for /healthz.
func startServe(bin string, args ...string) (*child, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"serve", "-addr", addr}, args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start wsready serve: %w", err)
	}
	c := &child{cmd: cmd, addr: addr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), childStart)
	defer cancel()
	for ctx.Err() == nil {
		select {
		case <-c.done:
			return nil, fmt.Errorf("failed to start wsready serve %v: it exited", args)
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := statsClient.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
	}
	c.kill()
	return nil, fmt.Errorf("failed to start wsready serve %v: no /healthz within %v", args, childStart)
}
