//go:build !js

package native_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

func Example() {
	srv, err := server.New(&server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	if _, err := demo.New(srv, nil, nil); err != nil { // the demo's methods: echo and time
		panic(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil) // every fix on, the library's defaults
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	res, err := c.Request(ctx, "echo", []byte(`{"hello":"world"}`))
	fmt.Println(string(res), err, c.State().Epoch)
	// Output: {"hello":"world"} <nil> 1
}

// A session that reached a terminal state (here the server ended it with
// 1000) stays down until the app starts a fresh one with Reconnect.
func ExampleClient_Reconnect() {
	srv, err := server.New(&server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	c.WaitReady(ctx)
	dm, err := demo.New(srv, nil, nil)
	if err != nil {
		panic(err)
	}
	dm.Set("endSession", true) // the demo's End session switch
	c.WaitState(ctx, func(s native.State) bool { return s.Ended != native.NotEnded })
	var ended *native.EndedError
	if err := c.WaitReady(ctx); errors.As(err, &ended) {
		fmt.Println("ended:", ended.Ended, ended.Code)
	}
	c.Reconnect()
	fmt.Println(c.WaitReady(ctx), c.State().Epoch)
	// Output:
	// ended: ended 1000
	// <nil> 2
}

// A reconnect window of one's own instead of the library's unbounded one,
// and what WaitReady says when the server cannot be reached.
func ExampleClient_WaitReady() {
	c, err := native.Dial(context.Background(), "ws://127.0.0.1:1/ws", &native.Options{Config: &native.Config{Window: time.Minute}})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = c.WaitReady(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded), c.State().LastError.Class)
	// Output: true network
}

// startDemo runs the real server on loopback for an example; stop ends it.
func startDemo(o server.Options) (url string, stop func()) {
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(&o)
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv.Handler())
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", func() { srv.Close(); hs.Close() }
}

// Options a Dial refuses are its error at once, an *OptionError naming the
// option; a server that cannot be reached is not (WaitReady says that).
func ExampleDial() {
	_, err := native.Dial(context.Background(), "ws://127.0.0.1:1/ws", &native.Options{CloseTimeout: -time.Second})
	var oe *native.OptionError
	fmt.Println(errors.Is(err, native.ErrInvalidOptions), errors.As(err, &oe) && oe.Option == "CloseTimeout")

	c, err := native.Dial(context.Background(), "ws://127.0.0.1:1/ws", &native.Options{
		Config:       &native.Config{Policy: native.FullJitter{Base: 500 * time.Millisecond, Cap: 10 * time.Second}},
		URLs:         []string{"ws://127.0.0.1:2/ws"}, // tried in turn on every reconnect
		CloseTimeout: time.Second,
		OnState:      func(s native.State) {}, // on the client's goroutine: return quickly
	})
	fmt.Println(err)
	c.Close()
	// Output:
	// true true
	// <nil>
}

// A request the server refuses settles with a *native.ServerError that
// carries its code.
func ExampleClient_Request() {
	url, stop := startDemo(server.Options{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	_, err = c.Request(ctx, "no-such-method", nil)
	var se *native.ServerError
	fmt.Println(errors.As(err, &se), se.Code)
	// Output: true unknown_method
}

// One client publishes to a topic; another subscribes with since 0 and
// gets what was published before it came (the server's history), then
// what follows, across reconnects.
func ExampleClient_Subscribe() {
	url, stop := startDemo(server.Options{Publish: true})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer pub.Close()
	if err := pub.WaitReady(ctx); err != nil {
		panic(err)
	}
	seq, err := pub.Publish(ctx, "chat", []byte(`{"text":"hello"}`))
	fmt.Println("published", seq, err)

	sub, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer sub.Close()
	got := make(chan native.Update, 16)
	since := int64(0)
	unsubscribe, err := sub.Subscribe(ctx, "chat", &since, func(u native.Update) { got <- u })
	if err != nil {
		panic(err)
	}
	defer unsubscribe()
	u := <-got
	fmt.Println(u.Topic, u.Seq, string(u.Data))

	_, err = sub.Subscribe(ctx, "no spaces", nil, nil)
	fmt.Println(err != nil)
	// Output:
	// published 1 <nil>
	// chat 1 {"text":"hello"}
	// true
}

// A publish the server refuses (publishing is off unless the server's
// Options turn it on) settles with its code.
func ExampleClient_Publish() {
	url, stop := startDemo(server.Options{}) // Publish: false
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	_, err = c.Publish(ctx, "chat", []byte(`{"text":"hello"}`))
	var se *native.ServerError
	fmt.Println(errors.As(err, &se), se.Code)
	// Output: true forbidden
}

// WaitState waits for any condition on the state; here the session's first
// epoch, which READY implies.
func ExampleClient_WaitState() {
	url, stop := startDemo(server.Options{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	err = c.WaitState(ctx, func(s native.State) bool { return s.Epoch >= 1 })
	fmt.Println(err, c.State().Epoch)
	// Output: <nil> 1
}

// Topics lists each topic's accounting, the service topic ("feed") first.
func ExampleClient_Topics() {
	url, stop := startDemo(server.Options{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// A client subscribes to nothing until asked; READY then includes the
	// subscription's acknowledgement.
	if _, err := c.Subscribe(ctx, "feed", nil, func(native.Update) {}); err != nil {
		panic(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	for _, t := range c.Topics() {
		fmt.Println(t.Topic, t.Subscribed)
	}
	// Output: feed true
}

// Close ends the client: its socket closes with 1000 and every later call
// fails with ErrClosed.
func ExampleClient_Close() {
	url, stop := startDemo(server.Options{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		panic(err)
	}
	fmt.Println(c.Close())
	_, err = c.Request(ctx, "echo", nil)
	fmt.Println(errors.Is(err, native.ErrClosed), c.State().Ended)
	// Output:
	// <nil>
	// true stopped
}
