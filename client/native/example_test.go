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

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/server"
)

func Example() {
	srv, err := server.New(&server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
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
	server.NewDemo(srv, nil).Set("endSession", true) // the demo's End session switch
	c.WaitState(ctx, func(s client.State) bool { return s.Ended != client.NotEnded })
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

// A demo stage instead of the library's defaults, and what WaitReady says
// when the server cannot be reached.
func ExampleClient_WaitReady() {
	c, err := native.Dial(context.Background(), "ws://127.0.0.1:1/ws", &native.Options{Config: client.MustStage(5)})
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
