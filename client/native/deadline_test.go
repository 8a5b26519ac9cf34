//go:build !js

package native

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
)

// A request's context deadline is the action's deadline: the core holds
// the request to it. Queued while the server cannot be reached and the
// next dial is 3 s away, a request with a 2 s context fails at once with
// ErrNotReady (safe to retry elsewhere), not at 2 s with the context's
// error; one whose context leaves room for the dial still waits.
func TestARequestsContextDeadlineIsItsDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused at once
	cfg := &Config{Policy: client.Fixed{D: 3 * time.Second}, CapGrowth: []client.CapStep{}}
	c, err := Dial(context.Background(), "ws://"+addr+"/ws", &Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := c.WaitState(wctx, func(s State) bool { return s.Transport == client.Down && s.LastError.Class != "" }); err != nil {
		t.Fatalf("the first dial did not fail: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.RequestWith(ctx, "echo", []byte(`1`), RequestOptions{Queue: true})
	var re *RequestError
	if !errors.As(err, &re) || !errors.Is(err, ErrNotReady) {
		t.Fatalf("err %v, want a *RequestError with ErrNotReady", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("failed after %v, want at once: the next dial is after the deadline", took)
	}

	// Room for the dial (the server is still down): it waits out its
	// deadline, and says so in the core's terms.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel2()
	start = time.Now()
	_, err = c.RequestWith(ctx2, "echo", []byte(`1`), RequestOptions{Queue: true})
	if took := time.Since(start); took < 3*time.Second || !errors.Is(err, ErrNotReady) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after %v: %v", took, err)
	}
}
