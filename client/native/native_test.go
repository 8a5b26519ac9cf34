//go:build !js

package native

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/internal/testutil"
	"github.com/wsready/wsready/protocol"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The real server with short intervals so every switch can be exercised in
// a couple of seconds, on an in-memory network: call it inside
// synctest.Test, where those seconds are the bubble's fake time.
func startServer(t *testing.T) *memServer {
	t.Helper()
	srv, hc := testutil.StartMemServer(t, server.Options{PingInterval: 100 * time.Millisecond}, demo.Options{
		FeedInterval: 50 * time.Millisecond, SlowReplyDelay: time.Second, FlapAfter: 100 * time.Millisecond,
		RestartDowntime: 500 * time.Millisecond,
	})
	return &memServer{Server: srv, hc: hc}
}

// advance moves a synctest bubble's fake clock on by d: every goroutine of
// the bubble runs until it waits, then the clock jumps, so a story of
// seconds takes no real time. Only for use inside synctest.Test (outside,
// it would wait d of real time).
func advance(d time.Duration) { time.Sleep(d) } // the bubble's fake time, not real time

// memServer is a server on the in-memory network and the HTTP client that
// reaches it.
type memServer struct {
	*testutil.Server
	hc *http.Client
}

// dial is Dial to the in-memory server.
func (s *memServer) dial(o *Options) (*Client, error) {
	if o == nil {
		o = &Options{}
	}
	o.DialOptions = &websocket.DialOptions{HTTPClient: s.hc}
	return Dial(context.Background(), s.URL, o)
}

type probe struct {
	*Client
	updates atomic.Int64
}

func dialStage(t *testing.T, srv *memServer, stage int) *probe {
	t.Helper()
	cfg, err := stages.Config(stage, rand.New(rand.NewPCG(1, uint64(stage))).Float64)
	if err != nil {
		t.Fatal(err)
	}
	cfg.FirstPingTimeout = 300 * time.Millisecond
	cfg.RequestTimeout = 400 * time.Millisecond
	cfg.SubscribeTimeout = 200 * time.Millisecond
	cfg.NaiveDelay = 100 * time.Millisecond
	cfg.Policy = client.FullJitter{Base: 100 * time.Millisecond, Cap: 2 * time.Second}
	cfg.Cooldown = 500 * time.Millisecond
	cfg.ConnectTimeout = time.Second
	cfg.Topic = protocol.DefaultTopic // the demo's client: READY means the feed is subscribed
	p := &probe{}
	c, err := srv.dial(&Options{Config: &cfg, OnUpdate: func(client.Update) { p.updates.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	p.Client = c
	t.Cleanup(func() { c.Close() })
	waitReady(t, p, 3*time.Second)
	return p
}

func waitReady(t *testing.T, p *probe, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := p.WaitReady(ctx); err != nil {
		t.Fatalf("not READY within %v: %+v", d, p.State())
	}
	return time.Since(start)
}

// leftReady reports how long until the client leaves READY, or false.
func leftReady(p *probe, within time.Duration) (time.Duration, bool) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err := p.WaitState(ctx, func(s client.State) bool { return !s.Ready })
	return time.Since(start), err == nil
}

func updatesWithin(p *probe, d time.Duration) bool {
	n := p.updates.Load()
	return eventually(d, func() bool { return p.updates.Load() > n }) == nil
}

// These tests run the real server and the real client on an in-memory
// network inside synctest.Test: every wait is the bubble's fake time, so
// seconds of freezes, flapping and restarts take milliseconds and the
// figures are exact.

func TestNativeRequestRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := dialStage(t, startServer(t), 5)
		res, err := p.Request(context.Background(), "echo", []byte(`{"x":1}`))
		if err != nil || string(res) != `{"x":1}` {
			t.Fatalf("echo: %s %v", res, err)
		}
		_, err = p.Request(context.Background(), "nope", nil)
		var se *client.ServerError
		if !errors.As(err, &se) {
			t.Fatalf("unknown method: %v", err)
		}
		if !updatesWithin(p, time.Second) {
			t.Fatal("no feed updates")
		}
	})
}

func TestNativeFreeze(t *testing.T) {
	for _, stage := range []int{0, 5} {
		t.Run(stageName(stage), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := startServer(t)
				p := dialStage(t, srv, stage)
				srv.Set("freeze", true)
				d, left := leftReady(p, 1500*time.Millisecond)
				switch stage {
				case 0:
					if left {
						t.Fatal("stage 0 noticed a freeze: it has no heartbeat")
					}
				case 5:
					if !left || d > time.Second {
						t.Fatalf("stage 5 left READY after %v (%v); want within 3 intervals of 100ms-ish plus slack", d, left)
					}
				}
				srv.Set("freeze", false)
				waitReady(t, p, 5*time.Second)
				if stage == 5 {
					// Old sockets finish closing; exactly one stays.
					if eventually(8*time.Second, func() bool { return srv.Stats().Open == 1 }) != nil {
						t.Fatalf("server connections after freeze: %d", srv.Stats().Open)
					}
				}
			})
		})
	}
}

func TestNativeServiceDown(t *testing.T) {
	for _, stage := range []int{0, 5} {
		t.Run(stageName(stage), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := startServer(t)
				p := dialStage(t, srv, stage)
				srv.Set("serviceDown", true)
				d, left := leftReady(p, time.Second)
				if stage == 0 && left {
					t.Fatal("stage 0 noticed the service outage")
				}
				if stage == 5 {
					if !left || d > 500*time.Millisecond {
						t.Fatalf("stage 5 left READY after %v (%v)", d, left)
					}
					st := p.State()
					if st.Transport != client.Up || st.Protocol != client.Up {
						t.Fatalf("a service outage touched lower layers: %+v", st)
					}
				}
				srv.Set("serviceDown", false)
				got := updatesWithin(p, 1500*time.Millisecond)
				if stage == 0 && got {
					t.Fatal("stage 0 got data after recovery without resubscribing")
				}
				if stage == 5 && !got {
					t.Fatal("stage 5 got no data after recovery")
				}
				if stage == 5 && srv.Stats().Handshakes != 1 {
					t.Fatalf("the service outage cost a reconnect: %d handshakes", srv.Stats().Handshakes)
				}
			})
		})
	}
}

func TestNativeSlowReplies(t *testing.T) {
	for _, stage := range []int{0, 5} {
		t.Run(stageName(stage), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := startServer(t)
				p := dialStage(t, srv, stage)
				srv.Set("slowReplies", true)
				ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
				defer cancel()
				_, err := p.Request(ctx, "time", nil)
				if stage == 0 && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("stage 0: %v; want the request still pending when the caller gave up", err)
				}
				if stage == 5 {
					if !errors.Is(err, client.ErrRequestTimeout) {
						t.Fatalf("stage 5: %v", err)
					}
					if !p.State().Ready {
						t.Fatal("a slow reply cost readiness")
					}
				}
			})
		})
	}
}

func TestNativeFlappingAttempts(t *testing.T) {
	attempts := map[int]uint64{}
	for _, stage := range []int{0, 5} {
		synctest.Test(t, func(t *testing.T) {
			srv := startServer(t)
			p := dialStage(t, srv, stage)
			srv.Set("flapping", true)
			srv.Demo.ResetCounters()
			advance(3 * time.Second) // 3 s of flapping
			attempts[stage] = srv.Stats().HandshakesWindow
			srv.Set("flapping", false)
			p.Close()
		})
	}
	t.Logf("handshakes in 3s of flapping: stage 0 %d, stage 5 %d", attempts[0], attempts[5])
	if attempts[5] >= attempts[0] || attempts[0] < 8 {
		t.Fatalf("stage 5 should make fewer attempts than stage 0: %v", attempts)
	}
}

func TestNativeRestart(t *testing.T) {
	for _, stage := range []int{0, 5} {
		t.Run(stageName(stage), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := startServer(t)
				p := dialStage(t, srv, stage)
				srv.Set("restart", true)
				if _, left := leftReady(p, time.Second); !left {
					t.Fatal("restart not noticed")
				}
				d := waitReady(t, p, 6*time.Second)
				t.Logf("READY %v after restart (500ms downtime)", d)
				// Stage 0 is READY on open, a moment before the server has
				// registered the connection.
				if eventually(2*time.Second, func() bool { return srv.Stats().Open == 1 }) != nil {
					t.Fatalf("open after restart: %d", srv.Stats().Open)
				}
			})
		})
	}
}

func TestNativeCloseEndsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := startServer(t)
		p := dialStage(t, srv, 5)
		srv.Set("freeze", true) // closing must not hang on a frozen peer
		start := time.Now()
		p.Close()
		if d := time.Since(start); d > 8*time.Second {
			t.Fatalf("Close took %v", d)
		}
		if _, err := p.Request(context.Background(), "time", nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("request after close: %v", err)
		}
		srv.Set("freeze", false)
	})
}

func stageName(n int) string { return "stage" + string(rune('0'+n)) }

// Close sends 1000 and waits for the handshake: the server sees a normal
// close every time, not an abandoned socket.
func TestNativeCloseSendsNormalClosure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := startServer(t)
		const runs = 10
		for range runs {
			c, err := srv.dial(nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := c.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
			c.Close()
		}
		eventually(3*time.Second, func() bool { return srv.Stats().PeerCloses.Normal >= runs })
		if st := srv.Stats(); st.PeerCloses.Normal != runs || st.PeerCloses.Other != 0 {
			t.Fatalf("server saw closes %+v, want %d with 1000", st.PeerCloses, runs)
		}
	})
}

// At stage 2 a freeze leaks sockets; Close closes every one of them, not
// only the current.
func TestNativeCloseClosesLeakedSockets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := startServer(t)
		p := dialStage(t, srv, 2)
		srv.Set("freeze", true)
		advance(1500 * time.Millisecond) // the watchdog replaces the frozen socket several times
		srv.Set("freeze", false)
		// The late closes of the replaced sockets arrive, each taken as the
		// current socket's: each starts another socket and the live ones leak.
		eventually(5*time.Second, func() bool {
			st := p.Stats()
			return st.Closes >= st.WatchdogFired && srv.Stats().Open == st.Opens-st.Closes && p.State().Ready
		})
		open := srv.Stats().Open
		if open < 2 {
			t.Fatalf("stage 2 did not leak (open %d); the test proves nothing", open)
		}
		normal := srv.Stats().PeerCloses.Normal
		p.Close()
		eventually(3*time.Second, func() bool { return srv.Stats().Open == 0 })
		if n := srv.Stats().Open; n != 0 {
			t.Fatalf("%d sockets left open after Close", n)
		}
		if got := srv.Stats().PeerCloses.Normal - normal; got < uint64(open) {
			t.Fatalf("%d of %d sockets closed with 1000; closes %+v, stats %+v", got, open, srv.Stats().PeerCloses, p.Stats())
		}
	})
}

// WaitReady against nothing listening says why: the last dial's error,
// wrapped with the deadline, and the state's failure class.
func TestNativeWaitReadySaysWhy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := Dial(context.Background(), "ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err = c.WaitReady(ctx)
	var nr *NotReadyError
	var op *net.OpError
	if !errors.As(err, &nr) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &op) {
		t.Fatalf("WaitReady: %v", err)
	}
	if f := c.State().LastError; f.Class != client.FailNetwork || f.Message() == "" {
		t.Fatalf("last error %+v", f)
	}
	t.Log(err)
}
