//go:build !js

// Package server is wsready's backend as a library: a Server speaks the
// wire protocol over WebSocket (Handler, mounted where the application
// wants it), keeps topics in a History (in memory, or NATS JetStream) and
// delivers them with replay and resume, publishes from the application's
// code (Publish), answers requests, guards its admission, drains, and
// counts what it sees (Stats, MetricsHandler). The ticket endpoint, stats,
// metrics, health and files are handlers of their own (http.go lists
// them). The demo's failure switches and its site are package
// server/demo (demo.New), which wsready serve uses; an application does
// not import it, and a Server without it consults no switch (faults.go).
//
// Where each rule lives (files are named by family: auth_*, faults*,
// history_*, transport_ws*, transport_http and sse*):
//
//	server.go               the Server, New, Close; a connection registered and unregistered
//	options.go              every option, its default and what Validate refuses
//	http.go                 mounting: Handler, HTTPServer, the Host and Origin guards
//	admission.go            who may connect: the connection caps, per-IP and handshake rates, slots
//	proxy.go                the client's address behind TrustedProxies
//	conn.go                 a connection: its reader, the frame dispatch, replies, closes
//	queue.go                the send queue: a byte bound, the slow consumer closed
//	heartbeat.go            the pings, one ticker for every connection
//	sweep.go                the liveness sweep: a silent peer closed
//	drain.go                Drain and HealthHandler: leaving without a thundering herd
//	control.go              Disconnect and Revoke, on every node over NATS
//	tenants.go              per-tenant caps, handshake and message rates
//	requests.go             methods: the table, deadlines, the pending-reply cap
//	idempotency.go          keyed requests and publishes answered once
//	topics.go               the hub: topics in use, subscribe, unsubscribe, publish, fan-out
//	presence.go             who is subscribed; presence_nats.go: the same across nodes
//	history.go              the History interface: numbered, retained updates per topic
//	history_memory.go       the default History, in memory
//	history_jetstream*.go   the JetStream History: streams, marks, checks, watches
//	auth_connect.go         a connection's token: the auth frame, Identify, expiry
//	auth_refresh.go         in-band refresh: a fresh token on the live connection moves its expiry
//	auth_tickets.go         our tickets: issuing (TicketHandler), signing, parsing, their rate
//	auth_jwt.go             an identity provider's JWTs: keys, JWKS file, claims
//	auth_identity.go        Identity and its bounds
//	auth_permissions.go     Options.Authorize: what a connection may do
//	auth_rejections.go      bad and looping tokens counted; AuthStats
//	transport_ws.go         the WebSocket endpoint (serveWS) and its transport
//	transport_ws_write.go   the write path: a hijacked socket, non-blocking writes, backlog, WriteTimeout
//	nbwrite.go              a socket write that never waits (transport_ws_write.go and sse_raw.go)
//	transport_http*.go      the HTTP transport: sessions, POST /send, the event stream's handler
//	sse.go                  the event stream's frames and a session's resume (topic.resume)
//	sse_raw.go              the event stream on a hijacked HTTP/1.1 connection
//	stats.go, metrics.go    Stats and the Prometheus metrics
//	reports.go              clients' readiness reports: checked, rate-limited, counted into the metrics
//	fleetpage.go            FleetHandler: the fleet page and its JSON, from this node's report metrics
//	lograte.go              log lines a peer can repeat, rate limited
//	static.go               StaticHandler: the demo's files, compressed, with ETags
//	faults.go               the fault hook's named points, and the Control the demo acts through
//	faults_gate.go          the Freeze and Deaf gates, and a frozen socket's reads
//
// The demo, in package server/demo: demo.go (the Demo: its site,
// /api/faults, /api/reset, /api/drain), switches.go (the switches' table
// and what each does), feed.go (the feed topic and the demo's methods).
// The seam between the two is server/internal/faults (the Hook and
// Control interfaces).
//
// What the server does with a publish, step by step:
//
//  1. conn.go: the connection's reader reads the frame (transport_ws.go, or
//     a POST to /send in transport_http.go), decodes it and dispatches a
//     publish to conn.publish; tenants.go may answer rate_limited first.
//  2. idempotency.go: with a key, a publish already made in the key's
//     window is answered from the cache, not appended again.
//  3. topics.go (publishOnce): Options.Authorize allows it
//     (auth_permissions.go); a topic the demo's feed owns is refused, and
//     the Service down switch leaves it unanswered (faults.go).
//  4. history_memory.go or history_jetstream.go: History.Append stores the
//     update and numbers it; Server.Publish (topics.go) enters here.
//  5. topics.go: the topic's watch (History.Watch) hands the update to
//     topic.deliver on every node that has the topic in use, which keeps
//     it in the topic's ring and offers the encoded frame to each
//     subscriber's connection (conn.offer).
//  6. queue.go and conn.go: the frame waits in the connection's send queue
//     (a slow consumer past MaxQueuedBytes is closed); its writer writes
//     it from the goroutine that offered it.
//  7. transport_ws_write.go: on a WebSocket the frame goes to the socket
//     at once, or waits in the socket's backlog; over the HTTP transport
//     it is an event on the session's stream (sse.go, sse_raw.go) or waits
//     for the next one. The publisher gets its response with the seq
//     (conn.reply).
//
// How a topic's history is stored: a History numbers each topic's updates
// from 1 with no gaps and keeps the newest HistoryMsgs, none older than
// HistoryAge (history.go). The memory History keeps them in a slice per
// topic, forgetting topics nobody uses once their updates expire, under
// MaxTopics (history_memory.go). The JetStream History keeps a stream per
// topic on file storage, its seqs the topic's, and a high-water mark per
// topic so a store that comes back with less is told apart
// (history_jetstream.go, _marks.go, _check.go, _watch.go). On each node
// the hub (topics.go) keeps the retained updates of every topic in use in
// a ring, so a replay (since, resume) is served from memory and only
// loading a topic reads the backend.
package server
