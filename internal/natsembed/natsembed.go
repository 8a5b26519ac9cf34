//go:build !js

// Package natsembed runs the real NATS server (github.com/nats-io/nats-server)
// inside this process, with JetStream on a data directory: wsready serve
// -data uses it without a listener, wsready nats and the tests with one.
package natsembed

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Start runs a NATS server with JetStream storing in dir. listen is
// "host:port" (port 0: any free one), or "" for no listener at all (only
// in-process connections). It is ready when Start returns; Shutdown stops it.
func Start(dir, listen string) (*server.Server, error) {
	if dir == "" {
		return nil, errors.New("natsembed: a data directory is required")
	}
	o := &server.Options{JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true, ServerName: "wsready"}
	if listen == "" {
		o.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("natsembed: bad listen address %q: %w", listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("natsembed: bad port in %q", listen)
		}
		if p == 0 {
			p = -1 // the server's "any free port"
		}
		o.Host, o.Port = host, p
	}
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("natsembed: the NATS server did not get ready within 10s")
	}
	return s, nil
}

// Connect opens an in-process connection to s.
func Connect(s *server.Server) (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(s), nats.Name("wsready"), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
}
