//go:build !js

// The README's Go client snippet ("In a Go program"): the lines between the
// snippet markers are copied into the README, and readme_test.go (go test
// ./, in make test) fails when the copy and these lines differ. go vet
// ./... compiles it, and the same test runs it against ../server.

// snippet:begin client
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/wsready/wsready/client/native"
)

func main() {
	url := "ws://localhost:8080/realtime" // the server below; wsready serve's is /ws
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// Dial returns at once: the client connects, and reconnects, in the background.
	c, err := native.Dial(ctx, url, nil) // nil: every fix, the library's defaults
	if err != nil {
		log.Fatal(err) // a URL or an option it refuses
	}
	defer c.Close()
	unsubscribe, err := c.Subscribe(ctx, "clock", nil, func(u native.Update) {
		fmt.Printf("clock #%d %s\n", u.Seq, u.Data) // on the client's goroutine: return quickly
	})
	if err != nil {
		log.Fatal(err)
	}
	defer unsubscribe()

	// READY: the socket is open, the pings arrive and the server acknowledged "clock".
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.WaitReady(wait); err != nil {
		log.Fatal(err) // not READY in time (the error says why), or the server ended the session
	}
	fmt.Println("READY:", c.State().Ready)

	res, err := c.Request(ctx, "echo", []byte(`{"hello":"world"}`))
	switch {
	case errors.Is(err, native.ErrNotReady): // never sent: always safe to send again
	case errors.Is(err, native.ErrRequestTimeout), errors.Is(err, native.ErrConnectionClosed):
		// sent, and the outcome is unknown: send again only if the request is idempotent
	}
	fmt.Println("echo", string(res), err)
	<-ctx.Done() // the clock's updates until Ctrl-C
}

// snippet:end client
