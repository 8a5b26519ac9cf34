//go:build !js

// Package natsembed runs the real NATS server (github.com/nats-io/nats-server)
// inside this process, with JetStream on a data directory: wsready serve
// -data uses it without a listener, wsready nats and the tests with one,
// alone or as one server of a cluster (Config.Cluster).
package natsembed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ErrConfig is a Config Run refuses (errors.Is): a command turns it into
// a usage error.
var ErrConfig = errors.New("invalid NATS server configuration")

func configErr(format string, a ...any) error {
	return fmt.Errorf("natsembed: %w: %s", ErrConfig, fmt.Sprintf(format, a...))
}

// Config is one embedded NATS server.
type Config struct {
	// Dir is the JetStream store directory (required). Each server of a
	// cluster needs its own.
	Dir string
	// Listen is the client address, "host:port" (port 0: any free one), or
	// "" for no listener at all (only in-process connections).
	Listen string
	// Name is the server's name, which JetStream requires to be unique in
	// a cluster; default "wsready".
	Name string
	// Cluster is the cluster's name, the same on every server of it; ""
	// runs a server of its own (ClusterListen and Routes must then be
	// empty). JetStream runs clustered: streams may have replicas on
	// several servers, and it needs a majority of the servers to elect
	// its leaders.
	Cluster string
	// ClusterListen is the address the other servers' routes connect to,
	// "host:port" (port 0: any free one); required with Cluster.
	ClusterListen string
	// Routes are the other servers' cluster addresses, "host:port" or
	// nats-route://host:port (nats:// is taken too); required with
	// Cluster (JetStream refuses to cluster without them). A route to this
	// server itself is allowed and ignored, so every server of a cluster
	// can be given the same list.
	Routes []string
	// Log makes the NATS server log to stderr (its notices, warnings and
	// errors); off by default.
	Log bool
}

// Start runs a NATS server of its own with JetStream storing in dir.
// listen is "host:port" (port 0: any free one), or "" for no listener at
// all (only in-process connections). It is ready when Start returns;
// Shutdown stops it.
func Start(dir, listen string) (*server.Server, error) {
	return Run(Config{Dir: dir, Listen: listen})
}

// Run starts the server c describes and returns once it accepts
// connections (clients and routes). A clustered server's JetStream is
// usable only once a majority of the cluster is up: WaitJetStream waits
// for that.
func Run(c Config) (*server.Server, error) {
	if c.Dir == "" {
		return nil, configErr("a data directory is required")
	}
	name := c.Name
	if name == "" {
		name = "wsready"
	}
	if strings.ContainsAny(name, " \t\r\n") {
		return nil, configErr("bad server name %q: no spaces", name)
	}
	o := &server.Options{JetStream: true, StoreDir: c.Dir, NoLog: !c.Log, NoSigs: true, ServerName: name}
	if c.Log {
		o.Logtime = true
	}
	if c.Listen == "" {
		o.DontListen = true
	} else {
		host, port, err := splitAddr("listen", c.Listen)
		if err != nil {
			return nil, err
		}
		o.Host, o.Port = host, port
	}
	switch {
	case c.Cluster == "" && (c.ClusterListen != "" || len(c.Routes) > 0):
		return nil, configErr("a cluster address and routes need a cluster name")
	case c.Cluster != "":
		if strings.ContainsAny(c.Cluster, " \t\r\n") {
			return nil, configErr("bad cluster name %q: no spaces", c.Cluster)
		}
		if c.ClusterListen == "" {
			return nil, configErr("a clustered server needs a cluster address")
		}
		if len(c.Routes) == 0 {
			return nil, configErr("a clustered server needs routes to the other servers")
		}
		host, port, err := splitAddr("cluster", c.ClusterListen)
		if err != nil {
			return nil, err
		}
		o.Cluster = server.ClusterOpts{Name: c.Cluster, Host: host, Port: port}
		for _, r := range c.Routes {
			u, err := routeURL(r)
			if err != nil {
				return nil, err
			}
			o.Routes = append(o.Routes, u)
		}
	}
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("natsembed: failed to configure the NATS server: %w", err)
	}
	if c.Log {
		s.ConfigureLogger()
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		var missing []string
		if c.Listen != "" && s.Addr() == nil {
			missing = append(missing, "no client listener on "+c.Listen)
		}
		if c.Cluster != "" && s.ClusterAddr() == nil {
			missing = append(missing, "no route listener on "+c.ClusterListen)
		}
		s.Shutdown()
		return nil, fmt.Errorf("natsembed: the NATS server did not get ready within 10s (%s; an address in use?)", strings.Join(missing, ", "))
	}
	return s, nil
}

// splitAddr parses "host:port" for the server: port 0 is the server's
// "any free port" (-1).
func splitAddr(what, addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, configErr("bad %s address %q: %v", what, addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, configErr("bad port in %s address %q", what, addr)
	}
	if p == 0 {
		p = -1
	}
	return host, p, nil
}

// routeURL parses a route: "host:port", or a nats-route:// or nats:// URL
// with a host and a port and nothing else.
func routeURL(r string) (*url.URL, error) {
	r = strings.TrimSpace(r)
	if !strings.Contains(r, "://") {
		r = "nats-route://" + r
	}
	u, err := url.Parse(r)
	if err != nil {
		return nil, configErr("bad route %q: %v", r, err)
	}
	if u.Scheme != "nats-route" && u.Scheme != "nats" {
		return nil, configErr("bad route %q: the scheme must be nats-route or nats", r)
	}
	if u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, configErr("bad route %q: want host:port", r)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return nil, configErr("bad port in route %q", r)
	}
	return u, nil
}

// WaitJetStream waits, within ctx, until s's JetStream is usable: at once
// for a server of its own, and for a clustered one once its cluster
// elected a metadata leader and s caught up with it (which needs a
// majority of the servers up). It polls every 50 ms.
func WaitJetStream(ctx context.Context, s *server.Server) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	clustered := s.ClusterAddr() != nil // a cluster listener: Run was given a Cluster
	for !s.JetStreamEnabled() || (clustered && !s.JetStreamIsClustered()) || !s.JetStreamIsCurrent() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("natsembed: JetStream not ready (a cluster needs a majority of its servers up): %w", ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// Connect opens an in-process connection to s.
func Connect(s *server.Server) (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(s), nats.Name("wsready"), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
}

// StartCluster runs n servers clustered on loopback, each storing under
// dir/<name> (names n1, n2, ...), every one given routes to all, and
// waits up to 30 s until each one's JetStream is ready and the cluster
// can place a stream on all n (WaitPeers); for tests. The
// ports are found free just before (a race another process could win:
// the start then fails).
func StartCluster(dir string, n int) ([]*server.Server, error) {
	addrs := make([]string, 2*n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("natsembed: failed to find a free port: %w", err)
		}
		addrs[i] = ln.Addr().String()
		ln.Close()
	}
	routes := addrs[n:]
	out := make([]*server.Server, 0, n)
	stop := func() {
		for _, s := range out {
			s.Shutdown()
		}
	}
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		s, err := Run(Config{Dir: filepath.Join(dir, name), Listen: addrs[i], Name: name, Cluster: "wsready-test",
			ClusterListen: routes[i], Routes: routes})
		if err != nil {
			stop()
			return nil, err
		}
		out = append(out, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range out {
		if err := WaitJetStream(ctx, s); err != nil {
			stop()
			return nil, err
		}
	}
	if err := WaitPeers(ctx, out); err != nil {
		stop()
		return nil, err
	}
	return out, nil
}

// WaitPeers waits, within ctx, until the metadata leader among servers
// counts every one of them as a peer that can take a stream's replica
// (online, JetStream up, its stats received): a JetStream ready on each
// server is not yet that, and a stream asked for len(servers) replicas
// in between is refused ("no suitable peers for placement"). It polls
// every 50 ms.
func WaitPeers(ctx context.Context, servers []*server.Server) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, s := range servers {
			if len(s.JetStreamClusterPeers()) >= len(servers) { // nil unless s leads
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("natsembed: the JetStream metadata leader does not count all %d servers as peers: %w", len(servers), ctx.Err())
		case <-tick.C:
		}
	}
}
