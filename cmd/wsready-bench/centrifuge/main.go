// Command centrifuge is make bench's third server: the centrifuge library
// (github.com/centrifugal/centrifuge), the peer a Go team would pick instead
// of wsready, doing the work the other two servers do: one channel ("feed"),
// an update published from inside the server every -feed (250 ms), the
// library's own server ping every -ping (1 s in the main scenario), the
// WebSocket transport with its JSON protocol, anonymous connections (no
// token). It lives in a module of its own so the library module
// github.com/wsready/wsready never depends on centrifuge.
//
// It prints "listening ADDR" as its first line on stdout and serves
// /connection/websocket and /bench/stats (the goroutine count, its
// high-water mark since the previous request and, with ?mem=1, the heap,
// as the harness's own server children do) and, with -static DIR, DIR's
// files at / (the browser bench's page and centrifuge-js: centrifuge
// accepts a WebSocket only from a page of its own host and port by
// default). SIGINT or SIGTERM stops it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/centrifugal/centrifuge"
)

// channel is the one channel clients may subscribe to.
const channel = "feed"

func main() {
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "centrifuge peer:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("centrifuge", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
	ping := fs.Duration("ping", time.Second, "server ping interval (centrifuge's app-level ping)")
	pong := fs.Duration("pong", 800*time.Millisecond, "how long after a ping the client's pong must have come; centrifuge requires it below -ping")
	feed := fs.Duration("feed", 250*time.Millisecond, "time between two updates published to the channel")
	updates := fs.Bool("updates", true, "publish updates (false: the channel exists for subscribers but stays silent)")
	static := fs.String("static", "", "a directory whose files are served at / (default none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ping <= 0 || *pong <= 0 || *pong >= *ping || *feed <= 0 {
		return fmt.Errorf("-ping, -pong and -feed must be positive and -pong below -ping (got %v, %v, %v)", *ping, *pong, *feed)
	}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// ctx also ends when run returns early, so the goroutines below end.
	ctx, cancel := context.WithCancel(sig)
	var watch goroutineWatch
	watched := make(chan struct{})
	go func() { defer close(watched); watch.run(ctx) }()
	defer func() { cancel(); <-watched }()

	node, err := centrifuge.New(centrifuge.Config{LogLevel: centrifuge.LogLevelNone})
	if err != nil {
		return fmt.Errorf("failed to create the node: %w", err)
	}
	// Anonymous connections: no token, as the other servers run with
	// authentication off.
	node.OnConnecting(func(context.Context, centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{}}, nil
	})
	node.OnConnect(func(c *centrifuge.Client) {
		c.OnSubscribe(func(e centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			if e.Channel != channel {
				cb(centrifuge.SubscribeReply{}, centrifuge.ErrorUnknownChannel)
				return
			}
			cb(centrifuge.SubscribeReply{}, nil)
		})
	})
	if err := node.Run(); err != nil {
		return fmt.Errorf("failed to run the node: %w", err)
	}

	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{
		PingPongConfig: centrifuge.PingPongConfig{PingInterval: *ping, PongTimeout: *pong},
	}))
	mux.HandleFunc("/bench/stats", watch.serveStats)
	if *static != "" {
		mux.Handle("/", http.FileServer(http.Dir(*static)))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("failed to listen: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	fmt.Println("listening", ln.Addr().String())

	done := make(chan struct{})
	if *updates {
		go func() {
			defer close(done)
			publish(ctx, node, *feed)
		}()
	} else {
		close(done)
	}
	<-ctx.Done()
	<-done
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = node.Shutdown(sctx)
	return hs.Close()
}

// publish sends one update every interval to the channel, with the payload
// the other servers' feed carries ({"ts":..., "value":...}), until ctx ends.
func publish(ctx context.Context, node *centrifuge.Node, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for seq := int64(1); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			data := []byte(`{"ts":` + strconv.FormatInt(now.UnixMilli(), 10) + `,"value":` + strconv.FormatInt(50+(seq*37)%50, 10) + `}`)
			// A failed publish (none is expected from the memory broker)
			// shows as missing updates in the clients' counts.
			_, _ = node.Publish(channel, data)
		}
	}
}

// stats is what /bench/stats answers (the harness's own server children
// answer the same); the harness reads RSS and CPU time from /proc itself.
type stats struct {
	Goroutines int `json:"goroutines"`
	// PeakGoroutines is the most goroutines seen since the previous
	// request (looked at every millisecond by goroutineWatch).
	PeakGoroutines int   `json:"peakGoroutines"`
	HeapInuse      int64 `json:"heapInuse,omitempty"` // with ?mem=1 only: ReadMemStats stops the world
}

// goroutineWatch keeps the goroutine count's high-water mark, looking
// every millisecond (about a thousand timer wake-ups a second, as in the
// harness's own server children): a burst of short-lived goroutines falls
// between the harness's samples.
type goroutineWatch struct{ peak atomic.Int64 }

func (g *goroutineWatch) run(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n := int64(runtime.NumGoroutine())
			for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
			}
		}
	}
}

// take returns the high-water mark and starts a new one from now.
func (g *goroutineWatch) take() int {
	now := int64(runtime.NumGoroutine())
	return int(max(g.peak.Swap(now), now))
}

func (g *goroutineWatch) serveStats(w http.ResponseWriter, r *http.Request) {
	s := stats{Goroutines: runtime.NumGoroutine(), PeakGoroutines: g.take()}
	if r.URL.Query().Get("mem") == "1" {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.HeapInuse = int64(ms.HeapInuse)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}
