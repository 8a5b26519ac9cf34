//go:build !js

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/wsready/wsready/internal/natsembed"
)

// natsReadyWait bounds how long wsready nats waits for its cluster's
// JetStream before it says it is still waiting (it goes on serving).
const natsReadyWait = 60 * time.Second

// runNATS runs the real NATS server with JetStream, embedded in this
// binary, for several wsready nodes to share (make cluster): nothing to
// download. With -cluster it is one server of a NATS cluster (make
// cluster runs three), so no single NATS server is a point of failure.
func runNATS(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("nats", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4222", "listen address for NATS clients (loopback by default)")
	dir := fs.String("data", "", "JetStream storage directory (required; each server of a cluster needs its own)")
	name := fs.String("name", "", "this server's name, unique in its cluster; default wsready, or with -cluster wsready-<cluster address>")
	cluster := fs.String("cluster", "", "the cluster's name (the same on every server of it): run as one server of a NATS cluster, JetStream clustered; needs -routes")
	clusterAddr := fs.String("cluster-addr", "127.0.0.1:6222", "with -cluster: listen address for the other servers' routes (loopback by default)")
	routes := fs.String("routes", "", "with -cluster: comma-separated cluster addresses of the servers of the cluster (host:port or nats-route://host:port; this server's own may be in the list)")
	verbose := fs.Bool("v", false, "the NATS server's own log on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("nats: unexpected argument %q", fs.Arg(0))
	}
	if *dir == "" {
		return usagef("nats: -data DIR is required (JetStream stores the topics there)")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c := natsembed.Config{Dir: *dir, Listen: *addr, Name: *name, Log: *verbose}
	if *cluster == "" {
		for _, f := range []string{"cluster-addr", "routes"} {
			if set[f] {
				return usagef("nats: -%s needs -cluster NAME", f)
			}
		}
	} else {
		c.Cluster, c.ClusterListen, c.Routes = *cluster, *clusterAddr, split(*routes)
		if len(c.Routes) == 0 {
			return usagef("nats: -cluster needs -routes (the cluster addresses of the other servers)")
		}
		if c.Name == "" {
			c.Name = "wsready-" + strings.NewReplacer(":", "-", "[", "", "]", "").Replace(*clusterAddr)
		}
	}
	if c.Name == "" {
		c.Name = "wsready"
	}
	ns, err := natsembed.Run(c)
	if errors.Is(err, natsembed.ErrConfig) {
		return &usageError{fmt.Errorf("nats: %w", err)}
	}
	if err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	defer ns.Shutdown()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.Cluster == "" {
		fmt.Fprintf(out, "nats: JetStream at %s, storing in %s\n", ns.ClientURL(), *dir)
	} else {
		fmt.Fprintf(out, "nats: server %s of cluster %s at %s (routes on %s), storing in %s; waiting for a majority of the cluster\n",
			c.Name, c.Cluster, ns.ClientURL(), ns.ClusterAddr(), *dir)
		wctx, cancel := context.WithTimeout(ctx, natsReadyWait)
		err := natsembed.WaitJetStream(wctx, ns)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil // stopped while waiting
		case err != nil:
			fmt.Fprintf(out, "nats: %v; serving on, JetStream comes up once a majority of the cluster is\n", err)
		default:
			fmt.Fprintf(out, "nats: JetStream cluster %s ready\n", c.Cluster)
		}
	}
	<-ctx.Done()
	return nil
}
