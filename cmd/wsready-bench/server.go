//go:build !js

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// serverStats is what a server child (and the centrifuge peer) answers at
// /bench/stats. RSS and CPU time the harness reads from /proc itself, from
// outside, the same way for every server.
type serverStats struct {
	Goroutines int `json:"goroutines"`
	// PeakGoroutines is the most goroutines seen since the previous
	// request (looked at every millisecond by goroutineWatch).
	PeakGoroutines int   `json:"peakGoroutines"`
	HeapInuse      int64 `json:"heapInuse,omitempty"` // with ?mem=1 only: ReadMemStats stops the world
}

// goroutineWatch keeps the goroutine count's high-water mark: a burst of
// short-lived goroutines (one per connection per feed tick) lasts a few
// milliseconds and falls between the harness's samples. It looks every
// millisecond, which costs the server about a thousand timer wake-ups a
// second, the same in every server.
type goroutineWatch struct{ peak atomic.Int64 }

func (g *goroutineWatch) run(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.see(int64(runtime.NumGoroutine()))
		}
	}
}

func (g *goroutineWatch) see(n int64) {
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// take returns the high-water mark and starts a new one from now.
func (g *goroutineWatch) take() int {
	now := int64(runtime.NumGoroutine())
	p := g.peak.Swap(now)
	return int(max(p, now))
}

func (g *goroutineWatch) serveStats(w http.ResponseWriter, r *http.Request) {
	s := serverStats{Goroutines: runtime.NumGoroutine(), PeakGoroutines: g.take()}
	if r.URL.Query().Get("mem") == "1" {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.HeapInuse = int64(ms.HeapInuse)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}

// silentFeed is the wsready feed interval with -updates=false: the feed
// topic exists (subscribes are served) but its first update would come a
// day later, long after any phase of the benchmark.
const silentFeed = 24 * time.Hour

// runServer is a server child: -kind wsready (package server with its
// defaults, but its handshake ceilings raised so the measurement is of the
// server, not of its admission policy) or lean (the baseline, lean.go). It
// prints "listening ADDR" first on stdout.
func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	kind := fs.String("kind", "wsready", "wsready or lean")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
	ping := fs.Duration("ping", time.Second, "server ping interval")
	updates := fs.Bool("updates", true, "feed updates every 250 ms (false: the feed topic exists but stays silent)")
	cpuprof := fs.String("cpuprofile", "", "write a CPU profile of the server's life to this file (empty: none)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return &usageError{err}
	}
	if *ping <= 0 {
		return usagef("server: -ping must be positive, not %v", *ping)
	}
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			return fmt.Errorf("failed to create the CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("failed to start the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// ctx also ends when this returns early, so the goroutines below end.
	ctx, cancel := context.WithCancel(sig)
	var watch goroutineWatch
	watched := make(chan struct{})
	go func() { defer close(watched); watch.run(ctx) }()
	defer func() { cancel(); <-watched }()
	var h http.Handler
	switch *kind {
	case "wsready":
		feed := 250 * time.Millisecond
		if !*updates {
			feed = silentFeed
		}
		srv, err := server.New(&server.Options{
			PingInterval: *ping,
			MaxConns:     30000, MaxConnsPerIP: 30000, AdmitRate: 1e6, AdmitBurst: 1e6, TenantRate: 1e6, TenantBurst: 1e6,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		defer srv.Close()
		// The feed the bench's clients subscribe to.
		if _, err := demo.New(srv, nil, &demo.Options{FeedInterval: feed}); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		h = srv.Handler()
	case "lean":
		l := newLeanServer(*ping, *updates)
		done := make(chan struct{})
		go func() { defer close(done); l.run(ctx) }()
		defer func() { cancel(); <-done }()
		h = l
	default:
		return usagef("server: -kind must be wsready or lean, not %q", *kind)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/bench/stats", watch.serveStats)
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		_ = pprof.Lookup("heap").WriteTo(w, 0)
	})
	// The goroutines' stacks (?debug=1 groups them by stack, 2 lists each),
	// for counting what a connection keeps alive (docs/bench.md).
	mux.HandleFunc("/debug/pprof/goroutine", func(w http.ResponseWriter, r *http.Request) {
		debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
		_ = pprof.Lookup("goroutine").WriteTo(w, debug)
	})
	// A CPU profile of a window (?seconds=N, default 30), for where an
	// idle or a connecting server's CPU goes (docs/bench.md).
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.Handle("/", h)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("failed to listen: %w", err)
	}
	fmt.Println("listening", ln.Addr().String())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	<-ctx.Done()
	return hs.Close()
}
