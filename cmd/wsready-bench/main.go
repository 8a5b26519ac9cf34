//go:build !js

// Command bench measures the wsready server against a lean baseline
// (lean.go) on this machine, in the same run, and the simulator against the
// published Python model: make bench writes docs/bench.md and
// docs/bench.json.
//
//	go run ./bench run [-conns 10000] [-connect 19000] [-steady 10s] [-out docs]
//
// Each server runs in a process of its own (so its RSS is its own), and the
// clients in other processes (at most 9,000 connections each: the machine
// allows 20,000 descriptors per process), from several loopback source
// addresses.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/server"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench run|server|clients [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runBench(os.Args[2:])
	case "server":
		err = runServer(os.Args[2:])
	case "clients":
		err = runClients(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// procStats is what a server child reports at /bench/stats.
type procStats struct {
	Goroutines int   `json:"goroutines"`
	CPUNs      int64 `json:"cpuNs"` // user + system since start
	RSS        int64 `json:"rss"`   // resident bytes
	HeapInuse  int64 `json:"heapInuse"`
}

func selfStats() procStats {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := ru.Utime.Nano() + ru.Stime.Nano()
	var rss int64
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			rss = pages * int64(os.Getpagesize())
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return procStats{Goroutines: runtime.NumGoroutine(), CPUNs: cpu, RSS: rss, HeapInuse: int64(ms.HeapInuse)}
}

// runServer is a server child: -kind wsready (the product, its handshake
// limits raised so the measurement is of the server, not of its admission
// policy) or lean (the baseline).
func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	kind := fs.String("kind", "wsready", "wsready or lean")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	cpuprof := fs.String("cpuprofile", "", "write a CPU profile of the server's life to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var h http.Handler
	switch *kind {
	case "wsready":
		srv := server.New(&server.Options{
			MaxConns: 30000, MaxConnsPerIP: 30000, AdmitRate: 1e6, AdmitBurst: 1e6, TenantRate: 1e6, TenantBurst: 1e6,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		defer srv.Close()
		h = srv.Handler()
	case "lean":
		h = newLeanServer(ctx)
	default:
		return fmt.Errorf("server: -kind must be wsready or lean")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/bench/stats", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(selfStats())
	})
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		pprof.Lookup("heap").WriteTo(w, 0)
	})
	mux.Handle("/", h)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr().String())
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	<-ctx.Done()
	hs.Close()
	return nil
}

// clientStats is what a clients child reports at /stats.
type clientStats struct {
	Dialed     int64 `json:"dialed"`
	Subscribed int64 `json:"subscribed"`
	Failed     int64 `json:"failed"`
	Frames     int64 `json:"frames"`
}

// runClients is a clients child: n connections that subscribe to the feed
// and count what they receive, dialled conc at a time, from the source
// addresses given in turn.
func runClients(args []string) error {
	fs := flag.NewFlagSet("clients", flag.ContinueOnError)
	url := fs.String("url", "", "ws:// URL")
	n := fs.Int("n", 1000, "connections")
	conc := fs.Int("conc", 100, "dials in flight at once")
	src := fs.String("src", "127.0.0.1", "comma-separated source addresses")
	subscribe := fs.Bool("subscribe", true, "subscribe to the feed (false: connect only, and count pings)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *n > 9000 || *conc < 1 {
		return fmt.Errorf("clients: -n must be 1..9000 (descriptors) and -conc positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var st struct{ dialed, subscribed, failed, frames atomic.Int64 }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(clientStats{Dialed: st.dialed.Load(), Subscribed: st.subscribed.Load(), Failed: st.failed.Load(), Frames: st.frames.Load()})
	}))
	fmt.Println("stats", ln.Addr().String())
	srcs := strings.Split(*src, ",")
	clientsFor := make([]*http.Client, len(srcs))
	for i, s := range srcs {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(strings.TrimSpace(s))}, Timeout: 30 * time.Second}
		clientsFor[i] = &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	sem := make(chan struct{}, *conc)
	var wg sync.WaitGroup
	for i := 0; i < *n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			ws, _, err := websocket.Dial(dctx, *url, &websocket.DialOptions{HTTPClient: clientsFor[i%len(clientsFor)]})
			cancel()
			<-sem
			if err != nil {
				st.failed.Add(1)
				return
			}
			defer ws.CloseNow()
			st.dialed.Add(1)
			if !*subscribe {
				st.subscribed.Add(1) // connected: all this client asks
			} else if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","topic":"feed"}`)); err != nil {
				st.failed.Add(1)
				return
			}
			for {
				_, b, err := ws.Read(ctx)
				if err != nil {
					return
				}
				st.frames.Add(1)
				if *subscribe && strings.Contains(string(b), `"subscribed"`) {
					st.subscribed.Add(1)
				}
			}
		}(i)
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}
