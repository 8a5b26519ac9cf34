//go:build !js

package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/server"
)

// wsready nats refuses a command line it cannot honour as a usage error
// (exit 2), before anything listens: cluster flags without -cluster, a
// cluster without routes, a route that is not host:port.
func TestNATSRefusesInvalidFlags(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{}, // no -data
		{"-data", dir, "extra"},
		{"-data", dir, "-routes", "127.0.0.1:6222"},
		{"-data", dir, "-cluster-addr", "127.0.0.1:6222"},
		{"-data", dir, "-cluster", "c"},
		{"-data", dir, "-cluster", "c", "-routes", " , "},
		{"-data", dir, "-cluster", "c", "-routes", "127.0.0.1"},
		{"-data", dir, "-cluster", "c", "-routes", "http://127.0.0.1:6222"},
		{"-data", dir, "-cluster", "c", "-cluster-addr", "nope", "-routes", "127.0.0.1:6222"},
		{"-data", dir, "-cluster", "two words", "-routes", "127.0.0.1:6222"},
		{"-data", dir, "-addr", "127.0.0.1:99999"},
		{"-no-such-flag"},
	} {
		err := runNATS(args, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("nats %v: %v, want a usage error", args, err)
		}
	}
}

// serve's NATS flags: -nats-replicas is 1 to 5 and needs -nats; -nats
// must name a server.
func TestServeRefusesInvalidNATSFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nats", "nats://127.0.0.1:4222", "-nats-replicas", "0"},
		{"-nats", "nats://127.0.0.1:4222", "-nats-replicas", "6"},
		{"-nats-replicas", "3"},
		{"-data", t.TempDir(), "-nats-replicas", "1"},
		{"-nats", " , "},
	} {
		err := serve(args)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("serve %v: %v, want a usage error", args, err)
		}
	}
}

// serve -nats-replicas 3 on a NATS server that is not clustered: JetStream
// keeps one copy there, and serve says so instead of starting.
func TestServeRefusesMoreReplicasThanTheNATSServersKeep(t *testing.T) {
	ns, err := natsembed.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	err = serve([]string{"-addr", freeAddr(t), "-nats", ns.ClientURL() + ", " + ns.ClientURL(), "-nats-replicas", "3"})
	if !errors.Is(err, server.ErrReplicas) || !strings.Contains(err.Error(), "3 replicas are more than a NATS server outside a cluster keeps (1)") {
		t.Fatalf("serve -nats-replicas 3 on a server of its own: %v", err)
	}
}
