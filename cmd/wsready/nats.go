//go:build !js

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/wsready/wsready/internal/natsembed"
)

// runNATS runs the real NATS server with JetStream, embedded in this
// binary, for several wsready nodes to share (make cluster): nothing to
// download.
func runNATS(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("nats", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4222", "listen address for NATS clients (loopback by default)")
	dir := fs.String("data", "", "JetStream storage directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("nats: unexpected argument %q", fs.Arg(0))
	}
	if *dir == "" {
		return fmt.Errorf("nats: -data DIR is required (JetStream stores the topics there)")
	}
	ns, err := natsembed.Start(*dir, *addr)
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	fmt.Fprintf(out, "nats: JetStream at %s, storing in %s\n", ns.ClientURL(), *dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
