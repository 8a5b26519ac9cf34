//go:build !js

package native

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// In-band refresh end to end, on loopback against the real server: 2 s
// tickets over 6 s keep one connection (one handshake, no reconnect
// decision, READY throughout) while the hook is asked for a fresh ticket
// before each expiry and the server takes it on the live socket.
func TestNativeInBandRefreshKeepsOneConnection(t *testing.T) {
	t.Parallel()
	srv, base, url := authServer(t, server.Options{TicketLife: 2 * time.Second})
	var fetched atomic.Int64
	rec := &recorder{}
	var lostReady atomic.Int64
	var ready atomic.Bool
	c, err := Dial(context.Background(), url, &Options{Token: tokenHook(http.DefaultClient, base, "refresher", &fetched), OnRecord: rec.record,
		OnState: func(s client.State) {
			if s.Ready {
				ready.Store(true)
			} else if ready.Load() {
				lostReady.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // real time: three ticket lifetimes on a real socket
	st := c.Stats()
	rec.mu.Lock()
	n := len(rec.records)
	rec.mu.Unlock()
	if hs := srv.Stats().Handshakes; hs != 1 || n != 0 || st.TokenRefreshes != 0 || lostReady.Load() != 0 || !c.State().Ready {
		t.Fatalf("6 s of 2 s tickets: %d handshakes, %d reconnect records, %d forced refreshes after a 4001, READY lost %d times; want 1, 0, 0, 0",
			hs, n, st.TokenRefreshes, lostReady.Load())
	}
	// Refreshed at 75-90% of each 2 s life: at least 3 fresh tickets
	// besides the first in 6 s (1.8 s apart at most).
	if f := fetched.Load(); f < 4 {
		t.Fatalf("the hook fetched %d tickets in 6 s, want the first and 3 refreshes", f)
	}
	if a := srv.Stats().Auth; a.Accepted != 1 {
		t.Fatalf("auth stats %+v: one connection's token accepted", a)
	}
}

// In-band refresh over the native HTTP transport: with every upgrade
// refused the client runs over HTTP, and its refresh frames are POSTed
// like any other, so 2 s tickets keep one session for 6 s.
func TestNativeInBandRefreshOverHTTP(t *testing.T) {
	t.Parallel()
	srv, base, url := authServer(t, server.Options{TicketLife: 2 * time.Second}, demo.Options{NoFeed: true})
	srv.Set("blockWebSocket", true)
	var fetched atomic.Int64
	cfg := client.Config{Transports: []client.Transport{client.TransportWebSocket, client.TransportHTTP}}
	var lostReady atomic.Int64
	var ready atomic.Bool
	c, err := Dial(context.Background(), url, &Options{Config: &cfg, Token: tokenHook(http.DefaultClient, base, "refresher-http", &fetched),
		OnState: func(s client.State) {
			if s.Ready {
				ready.Store(true)
			} else if ready.Load() {
				lostReady.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The ticket fetched before the WebSocket attempts may be near its
	// end when the fallback's session opens (the attempts' backoff is
	// drawn): that session may end in a 4001 and a forced fresh ticket.
	// The steady state starts at the first refresh taken in band.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.WaitState(ctx, func(s State) bool { return s.Ready && s.Via == client.TransportHTTP }); err != nil {
		t.Fatal(err)
	}
	if !poll.Until(5*time.Second, func() bool { return c.Stats().Refreshes >= 1 }) {
		t.Fatalf("no in-band refresh over HTTP in 5 s: stats %+v", c.Stats())
	}
	lostReady.Store(0)
	before, refreshed := srv.Stats().Auth.Accepted, c.Stats().Refreshes
	time.Sleep(6 * time.Second) // real time: three ticket lifetimes on a real session
	st := c.Stats()
	a := srv.Stats().Auth
	if lostReady.Load() != 0 || !c.State().Ready || c.State().Via != client.TransportHTTP || st.Refreshes-refreshed < 3 || a.Accepted != before {
		t.Fatalf("6 s of 2 s tickets over HTTP: READY lost %d times, state %+v, %d refreshes, %d sessions accepted (server: %+v); want 0 lost, READY over HTTP, at least 3 refreshes, none",
			lostReady.Load(), c.State(), st.Refreshes-refreshed, a.Accepted-before, a)
	}
}
