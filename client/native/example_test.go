//go:build !js

package native_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/server"
)

func Example() {
	srv := server.New(&server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewServer(srv.Handler())
	defer func() { srv.Close(); hs.Close() }()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, url, nil) // stage 5: every fix on
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
