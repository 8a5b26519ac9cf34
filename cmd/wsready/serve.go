//go:build !js

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
	"github.com/wsready/wsready/web"
)

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (loopback by default; use 0.0.0.0:8080 or :8080 to listen on every interface)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS and WSS with the PEM certificate (chain) in this file; needs -tls-key")
	tlsKey := fs.String("tls-key", "", "the PEM private key of -tls-cert (never logged)")
	demoMode := fs.Bool("demo", false, "demo mode: the failure switches (POST /api/faults, /api/reset) and remote addresses in /api/stats; never on a server others can reach")
	hosts := fs.String("hosts", "", "comma-separated extra host names the server answers for (the Host header); localhost, 127.0.0.1, ::1 and the -addr host always are; * for any")
	origins := fs.String("origins", "", "comma-separated extra origin patterns allowed to open a WebSocket or change state (same origin is always allowed)")
	ping := fs.Duration("ping", 25*time.Second, "server ping interval: production heartbeats by default (a ping costs every idle connection a wake-up); make run and the browser suite pass 1s")
	feed := fs.Duration("feed", 250*time.Millisecond, "time between feed updates")
	slow := fs.Duration("slow", 8*time.Second, "reply delay while Slow replies is on")
	downtime := fs.Duration("restart-downtime", 4*time.Second, "how long Restart refuses new connections")
	maxConns := fs.Int("max-conns", 10000, "most WebSocket connections at once; more are refused with 503 and Retry-After")
	maxPerIP := fs.Int("max-conns-per-ip", 256, "most WebSocket connections from one remote IP")
	maxPerTenant := fs.Int("max-conns-per-tenant", 0, "most connections of one tenant (a JWT's -jwt-tenant-claim, or an application's ticket) on this node; more are closed with 1013 and a retry-after; 0: no ceiling")
	tenantMsgRate := fs.Float64("tenant-msg-rate", 0, "subscribe, publish and request frames per second one tenant's connections may send on this node; beyond, answered rate_limited (the socket stays); 0: no ceiling")
	tenantMsgBurst := fs.Int("tenant-msg-burst", 0, "burst above -tenant-msg-rate (at least 1); default one second's worth")
	tenantHSRate := fs.Float64("tenant-handshake-rate", 0, "handshakes per second one tenant may make on this node (checked once its token names the tenant); beyond, closed with 1013 and a retry-after; needs -tenant-handshake-burst; 0: no ceiling")
	tenantHSBurst := fs.Int("tenant-handshake-burst", 0, "burst above -tenant-handshake-rate (at least 1; 1 spaces a tenant's handshakes evenly); required with a rate, no default")
	trustedProxies := fs.String("trusted-proxies", "", "comma-separated networks (CIDR, or single addresses) of the reverse proxies in front of this server: from them, X-Forwarded-For / Forwarded name the client whose address the per-address limits key by; default none (the TCP peer)")
	maxQueued := fs.Int("max-queued-bytes", 1<<20, "bytes queued for one connection before it is closed with 4429")
	writeTimeout := fs.Duration("write-timeout", 10*time.Second, "a write that makes no progress for this long drops the connection")
	msgTimeout := fs.Duration("message-timeout", 10*time.Second, "a message not finished this long after its first byte closes the connection")
	maxPending := fs.Int("max-pending-replies", 64, "delayed replies (Slow replies) one connection may have waiting; more are refused with too_many_pending")
	auth := fs.String("auth", "off", "tickets: off, optional (a client that sends one is checked; the demo) or required")
	authKeyFile := fs.String("auth-key-file", "", "file holding the ticket signing key (at least 32 bytes); default a random key per process")
	ticketLife := fs.Duration("ticket-life", 10*time.Minute, "how long a ticket from POST /api/token lives")
	issueTickets := fs.Bool("issue-tickets", false, "POST /api/token issues a ticket for any client id to anyone who asks (on with -demo); off by default: with -auth required your application issues the tickets")
	ticketRate := fs.Float64("ticket-rate", 5, "POST /api/token requests per second one remote address may make (429 with Retry-After beyond)")
	ticketBurst := fs.Int("ticket-burst", 20, "burst above -ticket-rate")
	rejThreshold := fs.Int("rejection-threshold", 20, "a client id whose valid tickets (revoked, expired) were refused more than this in 5 minutes is refused with 4003 at once")
	badThreshold := fs.Int("bad-ticket-threshold", 20, "a remote address that sent more tickets we did not sign than this in 5 minutes has its next ones refused at once (its valid tickets still get in)")
	jwtSecretFile := fs.String("jwt-hs256-secret-file", "", "take HS256 JWTs signed with the secret in this file (at least 32 bytes; surrounding whitespace is trimmed) as tokens; the secret is never logged")
	jwtPublicKey := fs.String("jwt-public-key", "", "take RS256 or ES256 JWTs signed for the PEM public key (RSA 2048+ or P-256) in this file as tokens")
	jwks := fs.String("jwks", "", "take RS256/ES256 JWTs whose kid names a key of this JWKS file as tokens; the file is read again when it changes (replace it with a rename)")
	jwtTenantClaim := fs.String("jwt-tenant-claim", "", "the JWT claim holding the tenant (required in every token when set); default none")
	jwtIssuer := fs.String("jwt-issuer", "", "a JWT's iss must be this; default not checked")
	jwtAudience := fs.String("jwt-audience", "", "a JWT's aud must hold this; default not checked")
	jwtLeeway := fs.Duration("jwt-leeway", 0, "clock skew allowed on a JWT's exp and nbf")
	admitRate := fs.Float64("admit-rate", 500, "handshakes per second the whole server admits; reconnect slots are spread at 90% of it")
	admitBurst := fs.Int("admit-burst", 100, "burst above -admit-rate")
	tenantRate := fs.Float64("tenant-rate", 20, "handshakes per second one remote IP may make")
	tenantBurst := fs.Int("tenant-burst", 40, "burst above -tenant-rate")
	probeKey := fs.String("probe-key", "", "a request with header X-Wsready-Probe: <key> draws from a reserved limiter (-probe-rate), so an operator's probe gets in during a storm; empty: none")
	probeRate := fs.Float64("probe-rate", 5, "handshakes per second for probes")
	slotsOn := fs.Bool("slots", true, "hand out reconnect slots (retry-after-ms=N) with refusals, Restart and drains")
	refuseWith := fs.String("refuse", "close", "how a refused handshake is answered: close (accept, close 1013 with retry-after-ms=N; browsers can read it) or http (503/429 with Retry-After)")
	sweepInterval := fs.Duration("sweep-interval", 10*time.Second, "liveness sweep: this often, a WebSocket ping to each connection not heard from since the last time")
	sweepGrace := fs.Duration("sweep-grace", 5*time.Second, "liveness sweep: a pinged connection that neither answers nor sends within one interval plus this is closed")
	drainWindow := fs.Duration("drain-window", 10*time.Second, "on SIGTERM (or the Drain switch) close connections in batches over this long, each with a reconnect slot")
	publish := fs.Bool("publish", false, "let clients publish to topics (creating them); off by default: it changes server state")
	feedLeader := fs.Bool("feed-leader", true, "this node produces the demo feed; with several nodes on one NATS, exactly one should")
	histMsgs := fs.Int("history-msgs", 1000, "updates kept per topic for replays (resume)")
	histBytes := fs.Int("history-bytes", 256<<10, "bytes of update data each node keeps per topic for replays")
	histAge := fs.Duration("history-age", 10*time.Minute, "updates older than this are not kept")
	maxTopics := fs.Int("max-topics", 256, "most topics; a publish that would create one more is refused with too_many_topics")
	maxSubs := fs.Int("max-subscriptions", 16, "most topics one connection may subscribe to")
	subRate := fs.Float64("subscribe-rate", 20, "subscribe frames per second one connection may send; beyond, answered rate_limited with retryAfterMs (the socket stays)")
	subBurst := fs.Int("subscribe-burst", 0, "burst above -subscribe-rate (at least 1); default 4 x -max-subscriptions (64), so a reconnect subscribes to all its topics at once")
	maxSendPOSTs := fs.Int("max-send-posts", 2, "HTTP transport: POST /ws/send requests one session may have in progress; one more is answered 429 with Retry-After")
	maxSendBytes := fs.Int("max-send-bytes", 8<<20, "HTTP transport: bytes of POST /ws/send bodies this node holds at once, all sessions; at least 1048576 (one full body); beyond, 429 with Retry-After")
	attachTimeout := fs.Duration("http-attach-timeout", 5*time.Second, "HTTP transport: how long a new session waits for its first stream before it is dropped and gives back its place under the connection limits")
	idemPerScope := fs.Int("max-idempotency-keys-per-scope", 256, "idempotency keys remembered per user (or anonymous session); past it that scope's least recently used answers go, never another's; at most 10000 (the node's)")
	dataDir := fs.String("data", "", "keep topics in JetStream, in a NATS server embedded in this process storing in this directory (history survives a restart); no NATS port is opened")
	natsURL := fs.String("nats", "", "keep topics in the JetStream of the NATS server(s) at this URL, shared with every node given the same; several comma-separated (the servers of a NATS cluster): the node reconnects to another when one dies")
	natsReplicas := fs.Int("nats-replicas", 1, "with -nats: how many servers of the NATS cluster keep each topic's stream and the high-water marks, 1 to 5; 3 on a cluster of three survives the death of any one (more than the cluster has is refused)")
	node := fs.String("node", "", "this node's name in /api/stats and on the page; default the listen address")
	fleet := fs.Bool("fleet", false, "serve the fleet page at /fleet/ (what this node's clients reported: share READY, time to READY p50/p99, attempts, transport mix; its data at /fleet/fleet.json); off by default")
	verbose := fs.Bool("v", false, "debug logs (per-connection events)")
	logFormat := fs.String("log-format", "text", "log lines as text (logfmt) or json, on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	for name, d := range map[string]time.Duration{"ping": *ping, "feed": *feed, "slow": *slow, "restart-downtime": *downtime,
		"write-timeout": *writeTimeout, "message-timeout": *msgTimeout, "sweep-interval": *sweepInterval,
		"sweep-grace": *sweepGrace, "drain-window": *drainWindow, "history-age": *histAge, "http-attach-timeout": *attachTimeout} {
		if d <= 0 {
			return usagef("serve: -%s must be positive, not %v", name, d)
		}
	}
	mode := server.AuthMode(*auth)
	if mode != server.AuthOff && mode != server.AuthOptional && mode != server.AuthRequired {
		return usagef("serve: -auth must be off, optional or required, not %q", *auth)
	}
	var key []byte
	if *authKeyFile != "" {
		b, err := os.ReadFile(*authKeyFile)
		if err != nil {
			return fmt.Errorf("serve: failed to read -auth-key-file: %w", err)
		}
		if key = []byte(strings.TrimSpace(string(b))); len(key) < 32 {
			return usagef("serve: the key in -auth-key-file must be at least 32 bytes")
		}
	}
	jwtOpts, jwtSource, err := jwtOptions(*jwtSecretFile, *jwtPublicKey, *jwks, *jwtTenantClaim, *jwtIssuer, *jwtAudience, *jwtLeeway)
	if err != nil {
		return err
	}
	if jwtOpts != nil && !flagSet(fs, "auth") {
		mode = server.AuthRequired // as Options.Auth's default with JWT
	}
	if *ticketLife <= 0 {
		return usagef("serve: -ticket-life must be positive")
	}
	for name, v := range map[string]float64{"admit-rate": *admitRate, "tenant-rate": *tenantRate, "probe-rate": *probeRate, "ticket-rate": *ticketRate,
		"subscribe-rate": *subRate} {
		if !(v > 0) || v > math.MaxFloat64 {
			return usagef("serve: -%s must be positive, not %v", name, v)
		}
	}
	if *maxPerTenant < 0 {
		return usagef("serve: -max-conns-per-tenant must be 0 (no ceiling) or more, not %d", *maxPerTenant)
	}
	if !(*tenantMsgRate >= 0) || *tenantMsgRate > math.MaxFloat64 {
		return usagef("serve: -tenant-msg-rate must be 0 (no ceiling) or a positive rate, not %v", *tenantMsgRate)
	}
	if flagSet(fs, "tenant-msg-burst") && (*tenantMsgBurst < 1 || *tenantMsgRate == 0) {
		return usagef("serve: -tenant-msg-burst must be at least 1, with a -tenant-msg-rate")
	}
	// Options has no default handshake burst (a bucket of 0 admits
	// nothing): with a rate, the burst is given, at least 1; without
	// one, it is refused.
	if !(*tenantHSRate >= 0) || *tenantHSRate > math.MaxFloat64 {
		return usagef("serve: -tenant-handshake-rate must be 0 (no ceiling) or a positive rate, not %v", *tenantHSRate)
	}
	if flagSet(fs, "tenant-handshake-burst") && (*tenantHSBurst < 1 || *tenantHSRate == 0) {
		return usagef("serve: -tenant-handshake-burst must be at least 1, with a -tenant-handshake-rate")
	}
	if *tenantHSRate > 0 && !flagSet(fs, "tenant-handshake-burst") {
		return usagef("serve: -tenant-handshake-rate needs a -tenant-handshake-burst of at least 1 (1 spaces a tenant's handshakes evenly)")
	}
	proxies, err := parsePrefixes(*trustedProxies)
	if err != nil {
		return usagef("serve: -trusted-proxies: %w", err)
	}
	if m := server.RefuseMode(*refuseWith); m != server.RefuseClose && m != server.RefuseHTTP {
		return usagef("serve: -refuse must be close or http, not %q", *refuseWith)
	}
	for name, n := range map[string]int{"admit-burst": *admitBurst, "tenant-burst": *tenantBurst, "rejection-threshold": *rejThreshold, "bad-ticket-threshold": *badThreshold, "ticket-burst": *ticketBurst, "max-conns": *maxConns, "max-conns-per-ip": *maxPerIP, "max-queued-bytes": *maxQueued, "max-pending-replies": *maxPending,
		"history-msgs": *histMsgs, "history-bytes": *histBytes, "max-topics": *maxTopics, "max-subscriptions": *maxSubs,
		"max-send-posts": *maxSendPOSTs, "max-send-bytes": *maxSendBytes, "max-idempotency-keys-per-scope": *idemPerScope} {
		if n < 1 {
			return usagef("serve: -%s must be at least 1, not %d", name, n)
		}
	}
	// -subscribe-burst's default follows -max-subscriptions (Options'
	// 0); given, 0 would be the default in Options, not "none": refused.
	if flagSet(fs, "subscribe-burst") && *subBurst < 1 {
		return usagef("serve: -subscribe-burst must be at least 1, not %d", *subBurst)
	}
	if *ping > time.Hour {
		return usagef("serve: -ping must be at most 1h (clients refuse longer intervals)")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	var log *slog.Logger
	switch hopts := (&slog.HandlerOptions{Level: level}); *logFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(os.Stderr, hopts))
	case "json":
		log = slog.New(slog.NewJSONHandler(os.Stderr, hopts))
	default:
		return usagef("serve: -log-format must be text or json, not %q", *logFormat)
	}
	allowed := split(*hosts) // added to the loopback names, which are always allowed (Options.AllowedHosts)
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("serve: bad -addr %q: %w", *addr, err)
	}
	wildcard := host == "" || host == "0.0.0.0" || host == "::"
	if !wildcard {
		allowed = append(allowed, host)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usagef("serve: -tls-cert and -tls-key go together: give both or neither")
	}
	var tlsConf *tls.Config
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("serve: failed to load -tls-cert and -tls-key: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if *dataDir != "" && *natsURL != "" {
		return usagef("serve: -data and -nats exclude each other: -data embeds a NATS server, -nats joins one")
	}
	natsURLs := strings.Join(split(*natsURL), ",")
	if *natsURL != "" && natsURLs == "" {
		return usagef("serve: -nats %q names no server", *natsURL)
	}
	if *natsReplicas < 1 || *natsReplicas > 5 {
		return usagef("serve: -nats-replicas must be 1 to 5, not %d", *natsReplicas)
	}
	replicasSet := false
	fs.Visit(func(f *flag.Flag) { replicasSet = replicasSet || f.Name == "nats-replicas" })
	if replicasSet && *natsURL == "" {
		return usagef("serve: -nats-replicas needs -nats (an embedded server, -data, keeps one copy)")
	}
	// Every option the server would refuse is refused here, before a
	// store is opened or anything listens (the flags' usage error).
	opts := &server.Options{
		PingInterval: *ping,
		Demo:         *demoMode, AllowedHosts: allowed, OriginPatterns: split(*origins),
		MaxConns: *maxConns, MaxConnsPerIP: *maxPerIP, MaxQueuedBytes: *maxQueued,
		TrustedProxies: proxies, MaxConnsPerTenant: *maxPerTenant, TenantMsgRate: *tenantMsgRate, TenantMsgBurst: *tenantMsgBurst,
		TenantHandshakeRate: *tenantHSRate, TenantHandshakeBurst: *tenantHSBurst,
		WriteTimeout: *writeTimeout, MessageTimeout: *msgTimeout, MaxPendingReplies: *maxPending,
		Auth: mode, AuthKey: key, TicketLife: *ticketLife, RejectionThreshold: *rejThreshold, BadTicketThreshold: *badThreshold,
		IssueTickets: *issueTickets, TicketRate: *ticketRate, TicketBurst: *ticketBurst, JWT: jwtOpts,
		AdmitRate: *admitRate, AdmitBurst: *admitBurst, TenantRate: *tenantRate, TenantBurst: *tenantBurst,
		ProbeKey: *probeKey, ProbeRate: *probeRate, RefuseWith: server.RefuseMode(*refuseWith), NoSlots: !*slotsOn,
		SweepInterval: *sweepInterval, SweepGrace: *sweepGrace, DrainWindow: *drainWindow,
		Publish: *publish, HistoryMsgs: *histMsgs, HistoryBytes: *histBytes,
		HistoryAge: *histAge, MaxTopics: *maxTopics, MaxSubscriptions: *maxSubs,
		SubscribeRate: *subRate, SubscribeBurst: *subBurst, MaxSendPOSTs: *maxSendPOSTs, MaxSendBytes: *maxSendBytes,
		HTTPAttachTimeout: *attachTimeout, MaxIdempotencyKeysPerScope: *idemPerScope,
		Logger: log,
	}
	if err := opts.Validate(); err != nil {
		return &usageError{fmt.Errorf("serve: %w", err)}
	}
	demoOpts := &demo.Options{FeedInterval: *feed, NoFeed: !*feedLeader, SlowReplyDelay: *slow, RestartDowntime: *downtime}
	if err := demoOpts.Validate(); err != nil {
		return &usageError{fmt.Errorf("serve: %w", err)}
	}
	lim := server.Retention{MaxMsgs: *histMsgs, MaxBytes: *histBytes, MaxAge: *histAge}
	var history server.History
	switch {
	case *dataDir != "":
		ns, err := natsembed.Start(*dataDir, "")
		if err != nil {
			return fmt.Errorf("serve: -data: %w", err)
		}
		defer ns.Shutdown()
		nc, err := natsembed.Connect(ns)
		if err != nil {
			return fmt.Errorf("serve: -data: %w", err)
		}
		// The high-water marks live beside the JetStream store, not in it,
		// so they outlive its damage (server.JetStreamOptions.MarksDir).
		if history, err = server.NewJetStreamHistory(context.Background(), nc, server.JetStreamOptions{Retention: lim, MaxTopics: *maxTopics,
			MarksDir: filepath.Join(*dataDir, "wsready", "marks"), CloseConn: true, Logger: log}); err != nil {
			nc.Close()
			return fmt.Errorf("serve: -data: %w", err)
		}
	case *natsURL != "":
		if history, err = server.ConnectJetStream(context.Background(), natsURLs, server.JetStreamOptions{Retention: lim, MaxTopics: *maxTopics,
			Replicas: *natsReplicas, Logger: log}); err != nil {
			return fmt.Errorf("serve: -nats: %w", err)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		if history != nil {
			history.Close()
		}
		return fmt.Errorf("failed to listen: %w", err)
	}
	if *node == "" {
		*node = displayAddr(ln.Addr())
	}
	opts.History, opts.Node = history, *node
	srv, err := server.New(opts)
	if err != nil {
		// Validate saw the options: New fails only where it differs (the
		// history and the node are set now); it never took the history.
		ln.Close()
		if history != nil {
			history.Close()
		}
		return &usageError{fmt.Errorf("serve: %w", err)}
	}
	// The demo's site: the server's handlers mounted at /ws, /api/token,
	// /api/stats, /metrics and /healthz, the switches under /api/, and the
	// page at / (demo.Demo.Handler).
	dm, err := demo.New(srv, web.FS(), demoOpts)
	if err != nil { // Validate saw the options: not reached
		srv.Close()
		ln.Close()
		return &usageError{fmt.Errorf("serve: %w", err)}
	}
	site := dm.Handler()
	if *fleet {
		mux := http.NewServeMux()
		mux.Handle("/fleet/", http.StripPrefix("/fleet", srv.FleetHandler()))
		mux.Handle("/", site)
		site = mux
	}
	hs := srv.HTTPServer(site)
	scheme := "http"
	if tlsConf != nil {
		// HTTPS and WSS on the same port; HTTP/2 for plain requests, while
		// WebSockets stay on HTTP/1.1 upgrades (Go's server does not offer
		// RFC 8441's extended CONNECT by default).
		hs.TLSConfig, scheme = tlsConf, "https"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		if tlsConf != nil {
			errc <- hs.ServeTLS(ln, "", "")
			return
		}
		errc <- hs.Serve(ln)
	}()
	store := "memory"
	if *dataDir != "" {
		store = "jetstream (embedded)"
	} else if *natsURL != "" {
		store = "jetstream"
	}
	log.Info("serving", "url", scheme+"://"+displayAddr(ln.Addr()), "node", *node, "demo", *demoMode, "auth", string(mode),
		"issueTickets", *demoMode || *issueTickets, "jwt", jwtSource,
		"history", store, "publish", *publish, "feedLeader", *feedLeader, "fleet", *fleet)
	if wildcard && *hosts == "" {
		log.Warn("listening on every interface, but answering only for localhost names: add the names clients use with -hosts")
	}
	select {
	case err := <-errc:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	stop() // a second signal ends the process at once
	log.Info("draining", "window", *drainWindow)
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), *drainWindow+time.Second)
	srv.Drain(drainCtx, false) // /healthz 503, then 1001 with a slot each, in batches
	cancelDrain()
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Close() // closes what is left (hijacked, so Shutdown does not see them)
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// jwtOptions makes Options.JWT from the -jwt flags: nil without a key
// flag; source names the key's kind for the log (never the key). A file
// that cannot be read is a failure; flags that do not fit together a
// usage error.
func jwtOptions(secretFile, publicKey, jwks, tenantClaim, issuer, audience string, leeway time.Duration) (_ *server.JWTOptions, source string, _ error) {
	keys := 0
	for _, f := range []string{secretFile, publicKey, jwks} {
		if f != "" {
			keys++
		}
	}
	if keys == 0 {
		if tenantClaim != "" || issuer != "" || audience != "" || leeway != 0 {
			return nil, "", usagef("serve: -jwt-tenant-claim, -jwt-issuer, -jwt-audience and -jwt-leeway need a key: -jwt-hs256-secret-file, -jwt-public-key or -jwks")
		}
		return nil, "none", nil
	}
	if keys > 1 {
		return nil, "", usagef("serve: -jwt-hs256-secret-file, -jwt-public-key and -jwks exclude each other")
	}
	if leeway < 0 {
		return nil, "", usagef("serve: -jwt-leeway must not be negative, not %v", leeway)
	}
	o := &server.JWTOptions{TenantClaim: tenantClaim, Issuer: issuer, Audience: audience, Leeway: leeway}
	switch {
	case secretFile != "":
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return nil, "", fmt.Errorf("serve: failed to read -jwt-hs256-secret-file: %w", err)
		}
		if o.HS256Secret = []byte(strings.TrimSpace(string(b))); len(o.HS256Secret) < 32 {
			return nil, "", usagef("serve: the secret in -jwt-hs256-secret-file must be at least 32 bytes")
		}
		source = "hs256"
	case publicKey != "":
		b, err := os.ReadFile(publicKey)
		if err != nil {
			return nil, "", fmt.Errorf("serve: failed to read -jwt-public-key: %w", err)
		}
		o.PublicKeyPEM, source = b, "public-key"
	default:
		if _, err := os.Stat(jwks); err != nil {
			return nil, "", fmt.Errorf("serve: failed to read -jwks: %w", err)
		}
		o.JWKSFile, source = jwks, "jwks"
	}
	return o, source, nil
}

// parsePrefixes reads a comma-separated list of networks (CIDR) or single
// addresses (a /32 or /128 each).
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range split(list) {
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a network (10.0.0.0/8) nor an address", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func split(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func displayAddr(a net.Addr) string {
	s := a.String()
	for _, p := range []string{"[::]:", "0.0.0.0:", "127.0.0.1:"} {
		if strings.HasPrefix(s, p) {
			return "localhost:" + strings.TrimPrefix(s, p)
		}
	}
	return s
}
