// Package client is wsready's client brain: three-layer readiness, the
// request registry, the heartbeat watchdog, the stale-socket filter, the
// service subscription, the reconnection policy, the session contract,
// resume, and stage 8's rules for where users are, for every stage of the
// demo.
//
// It does no I/O, starts no goroutines, reads no clock and draws no random
// numbers of its own. A driver steps a Core with events (Opened, Received,
// Closed, Tick, Online, Offline, Hidden, Visible, TokenReady, TokenFailed,
// Request, Reconnect, Stop; at stage 8 also HTTPProbe, Buffered,
// BecameLeader, BecameFollower, LeaderState, LeaderUpdate, Relayed), each
// stamped with the time it happened, and then drains Effects: open a
// socket (over a transport), send a frame, close a socket, arm the one
// timer at an instant, settle a request, ask for a token, publish a state
// change, an update, a presence event or a reconnect record, probe the
// server over HTTP, forward a follower tab's request. The browser driver
// (package wasm), the native driver (package client/native) and the fleet
// simulator all run this code.
//
// Where each rule lives:
//
//	readiness.go   the three levels and READY; stage 8: how long not READY (degraded, offline)
//	registry.go    stage 1: every request settles; typed errors; timeoutMs on the wire
//	heartbeat.go   stage 2: server pings, any frame as proof of life, and the watchdog
//	stale.go       stage 3: events from replaced sockets are ignored
//	service.go     stage 4: the app's subscriptions (or the server's welcome) are the service; presence
//	reconnector.go stages 0-8: every reconnect rule in one pure value, shared with the simulator:
//	               the delay and its reset, the watchdog's immediate reconnect, the waits for
//	               online, a visible page and the tab's leadership (stage 5: backoff with
//	               jitter, cooldown; stage 6: budget, window, refreshes, terminal states;
//	               stage 8: the transport the next dial uses, a window that does not charge
//	               a clock jump)
//	reconnect.go   carries out the Reconnector's decisions: records, dials, offline/online
//	classify.go    stage 6: what each close means
//	session.go     stage 6: tokens, the window, terminal states, records, Reconnect, visibility
//	transport.go   stage 8: the HTTP fallback, the re-probe and the move back to WebSocket
//	clock.go       stage 8: clock jumps (sleep, frozen tabs); hidden pages keep their connection
//	sendstall.go   stage 8: sends that stop draining
//	queue.go       the opt-in queue for requests made while not READY, with idempotency keys
//	tabs.go        stage 8: tab leadership (one connection for many tabs)
//	deadlines.go   the named deadlines the one timer serves
//	policy.go      the delay policies, shared with the simulator
package client
